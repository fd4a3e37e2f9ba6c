package org.apache.james.consistency.harness;

import org.apache.james.mailbox.cassandra.ids.CassandraMessageId;
import org.apache.james.mailbox.model.MessageId;

/** James's CassandraMessageId.Factory that remembers the last id it handed out (the break manifest needs the id of
 *  an append that failed half-way, which James never returns). */
public class RecordingMessageIdFactory implements MessageId.Factory {
    private final CassandraMessageId.Factory delegate = new CassandraMessageId.Factory();
    private volatile MessageId lastGenerated;

    @Override
    public MessageId fromString(String serialized) {
        return delegate.fromString(serialized);
    }

    @Override
    public MessageId generate() {
        lastGenerated = delegate.generate();
        return lastGenerated;
    }

    public MessageId lastGenerated() {
        return lastGenerated;
    }
}
