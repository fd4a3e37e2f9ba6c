package org.apache.james.consistency.harness;

import org.apache.james.backends.cassandra.TestingSession;

import com.datastax.dse.driver.api.core.cql.reactive.ReactiveResultSet;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import com.datastax.oss.driver.api.core.cql.Statement;

/**
 * James's TestingSession (Scenario hooks) that also lets James 3.8.1's CREATE TABLE statements run on Cassandra 5.0:
 * the mailbox and messageV3 modules ask for LZ4 compression with the sub-options `chunk_length_kb` and
 * `crc_check_chance`, which Cassandra 5.0 rejects (the first was renamed `chunk_length_in_kb` in 3.0, the second is a
 * table option now, default 1.0 as James asks). Only those are rewritten; everything else is James's CQL.
 */
public class Cassandra5Session extends TestingSession {
    public Cassandra5Session(CqlSession delegate) {
        super(delegate);
    }

    @Override
    public ReactiveResultSet executeReactive(Statement<?> statement) {
        if (statement instanceof SimpleStatement) {
            SimpleStatement simple = (SimpleStatement) statement;
            if (simple.getQuery().contains("'chunk_length_kb'")) {
                String query = simple.getQuery()
                    .replace("'chunk_length_kb'", "'chunk_length_in_kb'")
                    .replaceAll(",\\s*'crc_check_chance'\\s*:\\s*[0-9.]+", "");
                return super.executeReactive(simple.setQuery(query));
            }
        }
        return super.executeReactive(statement);
    }
}
