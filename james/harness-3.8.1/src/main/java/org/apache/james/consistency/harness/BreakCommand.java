package org.apache.james.consistency.harness;

import java.io.File;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import javax.mail.Flags;

import org.apache.james.backends.cassandra.Scenario;
import org.apache.james.core.Username;
import org.apache.james.mailbox.MailboxSession;
import org.apache.james.mailbox.MessageManager;
import org.apache.james.mailbox.cassandra.CassandraMailboxManager;
import org.apache.james.mailbox.model.FetchGroup;
import org.apache.james.mailbox.model.Mailbox;
import org.apache.james.mailbox.model.MailboxACL;
import org.apache.james.mailbox.model.MailboxPath;
import org.apache.james.mailbox.model.MessageRange;
import org.apache.james.mailbox.model.MessageResult;

import com.datastax.oss.driver.api.core.cql.Row;

/**
 * `break --keyspace K --kind KIND --rate R [--random-seed S] [--operations N] [--manifest FILE]` and `break --list`:
 * James 3.8.1's own write paths run on the seeded platform while a backends-cassandra Scenario fails one statement
 * for the operations hit, so James itself leaves the inconsistency. The share R of the operations is hit (at least
 * one when R > 0); each inconsistency in the output was read back from the tables after the operation.
 */
public class BreakCommand {
    enum Kind {
        MESSAGEIDTABLE_INSERT("messageIdTable-insert", "messages",
            "a message append whose messageIdTable write fails after the imapUidTable one: the message is missing from messageIdTable",
            "UPDATE messageIdTable"),
        FLAGS_IMAPUIDTABLE_ONLY("flags-imapUidTable-only", "messages",
            "a flag update (\\Flagged and a keyword added) reaching imapUidTable only: messageIdTable keeps the old flags",
            "UPDATE messageIdTable"),
        DELETE_MESSAGEIDTABLE_KEPT("delete-messageIdTable-kept", "messages",
            "a message deletion whose messageIdTable delete fails: the row stays in messageIdTable only",
            "DELETE FROM messageIdTable"),
        DELETE_IMAPUIDTABLE_KEPT("delete-imapUidTable-kept", "messages",
            "a message deletion whose imapUidTable delete fails: the row stays in imapUidTable only",
            "DELETE FROM imapUidTable"),
        MAILBOX_ROW_MISSING("mailbox-row-missing", "mailboxes",
            "a mailbox creation whose mailbox row write fails after the path registration (James writes the path first): an orphan path",
            "INSERT INTO mailbox ("),
        USERMAILBOXACL("UserMailboxACL", "acl",
            "an ACL share (user entry, rights lr) whose UserMailboxACL write fails after the eventStore event",
            "INSERT INTO UserMailboxACL"),
        ACLV2("aclv2", "aclv2",
            "an ACL share (user entry, rights lr) whose aclv2 write fails after the eventStore event",
            "UPDATE aclv2"),
        COUNTER_INCREMENT("counter-increment", "counters",
            "a message append whose mailboxCounters increment fails (James only logs it): the counters miss the message",
            "UPDATE mailboxCounters"),
        QUOTA_INCREMENT("quota-increment", "quotas",
            "a message append whose currentQuota increment fails (the quota listener gives up): the user's quota misses the message",
            "UPDATE currentQuota"),
        ATTACHMENT_ROW_MISSING("attachment-row-missing", "attachments",
            "a message deletion whose messageV3 delete fails after DeleteMessageListener deleted its attachments: the message row references attachments with no attachmentV2 row",
            "DELETE FROM messageV3");

        final String name;
        final String target;
        final String what;
        final String statementPrefix;

        Kind(String name, String target, String what, String statementPrefix) {
            this.name = name;
            this.target = target;
            this.what = what;
            this.statementPrefix = statementPrefix;
        }

        static Kind of(String name) {
            for (Kind kind : values()) {
                if (kind.name.equalsIgnoreCase(name)) {
                    return kind;
                }
            }
            throw new BadInput("unknown kind " + name + " (break --list shows them)");
        }

        boolean messageLevel() {
            return this == FLAGS_IMAPUIDTABLE_ONLY || this == DELETE_MESSAGEIDTABLE_KEPT || this == DELETE_IMAPUIDTABLE_KEPT
                || this == ATTACHMENT_ROW_MISSING;
        }
    }

    public static Object run(Arguments arguments) throws Exception {
        if (arguments.has("list")) {
            List<Map<String, String>> kinds = new ArrayList<>();
            for (Kind kind : Kind.values()) {
                kinds.add(Map.of("kind", kind.name, "what", kind.what, "target", kind.target));
            }
            return kinds;
        }
        Kind kind = Kind.of(arguments.required("kind"));
        double rate = arguments.decimal("rate", 0.1);
        if (rate < 0 || rate > 1) {
            throw new BadInput("--rate must be between 0 and 1, got " + rate);
        }
        Random random = new Random(arguments.integer("random-seed", 42));
        try (Platform platform = Platform.connectExisting(arguments)) {
            Breaker breaker = new Breaker(platform, kind, random);
            List<Runnable> operations = breaker.operations(arguments.integer("operations", -1));
            int hits = rate == 0 ? 0 : Math.max(1, (int) Math.round(rate * operations.size()));
            List<Integer> order = IntStream.range(0, operations.size()).boxed().collect(Collectors.toList());
            Collections.shuffle(order, random);
            Set<Integer> hit = Set.copyOf(order.subList(0, Math.min(hits, order.size())));
            for (int i = 0; i < operations.size(); i++) {
                breaker.hit = hit.contains(i);
                operations.get(i).run();
            }
            Map<String, Object> manifest = new LinkedHashMap<>();
            manifest.put("kind", kind.name);
            manifest.put("target", kind.target);
            manifest.put("james", Main.JAMES_VERSION);
            manifest.put("keyspace", platform.keyspace);
            manifest.put("rate", rate);
            manifest.put("operations", operations.size());
            manifest.put("failed", hit.size());
            manifest.put("operationErrors", breaker.operationErrors);
            manifest.put("inconsistencies", breaker.inconsistencies);
            if (arguments.has("manifest")) {
                Main.JSON.writerWithDefaultPrettyPrinter().writeValue(new File(arguments.required("manifest")), manifest);
            }
            return manifest;
        }
    }

    /** Runs one kind's operations through James, failing the kind's statement while an operation is hit. */
    static class Breaker {
        final Platform platform;
        final Kind kind;
        final Random random;
        final CassandraMailboxManager manager;
        final String runTag = UUID.randomUUID().toString().substring(0, 6);
        final List<Map<String, Object>> inconsistencies = new ArrayList<>();
        int operationErrors;
        boolean hit;

        Breaker(Platform platform, Kind kind, Random random) {
            this.platform = platform;
            this.kind = kind;
            this.random = random;
            this.manager = platform.mailboxManager();
        }

        List<Runnable> operations(int wanted) throws Exception {
            List<Mailbox> mailboxes = platform.mapperFactory()
                .getMailboxMapper(manager.createSystemSession(Username.of("admin@" + SeedCommand.DOMAIN)))
                .list().collectList().block();
            if (mailboxes.isEmpty()) {
                throw new BadInput("keyspace " + platform.keyspace + " holds no mailbox: seed it first");
            }
            mailboxes.sort((a, b) -> a.generateAssociatedPath().asString().compareTo(b.generateAssociatedPath().asString()));
            List<Runnable> operations = new ArrayList<>();
            if (kind.messageLevel()) {
                for (Mailbox mailbox : mailboxes) {
                    MailboxSession session = manager.createSystemSession(mailbox.getUser());
                    MessageManager messageManager = manager.getMailbox(mailbox.getMailboxId(), session);
                    List<MessageResult> messages = new ArrayList<>();
                    messageManager.getMessages(MessageRange.all(), FetchGroup.MINIMAL, session).forEachRemaining(messages::add);
                    for (MessageResult message : messages) {
                        operations.add(() -> onMessage(mailbox, messageManager, session, message));
                    }
                }
            } else {
                int count = wanted > 0 ? wanted : mailboxes.size();
                for (int i = 0; i < count; i++) {
                    Mailbox mailbox = mailboxes.get(i % mailboxes.size());
                    int index = i;
                    operations.add(() -> onMailbox(mailbox, index));
                }
            }
            if (wanted > 0 && operations.size() > wanted) {
                return operations.subList(0, wanted);
            }
            return operations;
        }

        private void onMessage(Mailbox mailbox, MessageManager messageManager, MailboxSession session, MessageResult message) {
            String mailboxId = mailbox.getMailboxId().serialize();
            String messageId = message.getMessageId().serialize();
            long uid = message.getUid().asLong();
            guarded(() -> {
                if (kind == Kind.FLAGS_IMAPUIDTABLE_ONLY) {
                    Flags flags = new Flags(Flags.Flag.FLAGGED);
                    flags.add("broken");
                    messageManager.setFlags(flags, MessageManager.FlagsUpdateMode.ADD, MessageRange.one(message.getUid()), session);
                } else {
                    messageManager.delete(List.of(message.getUid()), session);
                }
            });
            if (!hit) {
                return;
            }
            if (kind == Kind.ATTACHMENT_ROW_MISSING) {
                recordLostAttachments(mailboxId, messageId);
                return;
            }
            Row truth = one("SELECT flagflagged, userflags FROM imapuidtable WHERE messageid=" + messageId
                + " AND mailboxid=" + mailboxId + " AND uid=" + uid);
            Row projection = one("SELECT flagflagged, userflags FROM messageidtable WHERE mailboxid=" + mailboxId + " AND uid=" + uid);
            boolean left;
            switch (kind) {
                case FLAGS_IMAPUIDTABLE_ONLY:
                    left = truth != null && projection != null && truth.getBoolean(0) && !projection.getBoolean(0);
                    break;
                case DELETE_MESSAGEIDTABLE_KEPT:
                    left = truth == null && projection != null;
                    break;
                default:
                    left = truth != null && projection == null;
            }
            if (left) {
                Map<String, Object> entry = new LinkedHashMap<>();
                entry.put("mailboxId", mailboxId);
                entry.put("messageId", messageId);
                entry.put("uid", uid);
                if (kind == Kind.FLAGS_IMAPUIDTABLE_ONLY) {
                    entry.put("flagsAdded", List.of("\\Flagged", "broken"));
                }
                inconsistencies.add(entry);
            }
        }

        private void onMailbox(Mailbox mailbox, int index) {
            MailboxSession session = manager.createSystemSession(mailbox.getUser());
            String mailboxId = mailbox.getMailboxId().serialize();
            switch (kind) {
                case MAILBOX_ROW_MISSING: {
                    MailboxPath path = MailboxPath.forUser(mailbox.getUser(), "Break" + runTag + "-" + index);
                    guarded(() -> manager.createMailbox(path, session));
                    Row registration = one("SELECT mailboxid FROM mailboxpathv3 WHERE namespace='" + path.getNamespace()
                        + "' AND user='" + path.getUser().asString() + "' AND mailboxname='" + path.getName() + "'");
                    if (hit && registration != null
                        && one("SELECT id FROM mailbox WHERE id=" + registration.getUuid(0)) == null) {
                        inconsistencies.add(Map.of("mailboxId", registration.getUuid(0).toString(),
                            "namespace", path.getNamespace(), "user", path.getUser().asString(), "name", path.getName()));
                    }
                    return;
                }
                case USERMAILBOXACL:
                case ACLV2: {
                    Username guest = Username.of("guest" + runTag + "-" + index + "@" + SeedCommand.DOMAIN);
                    guarded(() -> manager.applyRightsCommand(mailbox.getMailboxId(), MailboxACL.command().forUser(guest)
                        .rights(MailboxACL.Rfc4314Rights.fromSerializedRfc4314Rights("lr")).asAddition(), session));
                    boolean projected = kind == Kind.USERMAILBOXACL
                        ? one("SELECT rights FROM usermailboxacl WHERE username='" + guest.asString() + "' AND mailboxid=" + mailboxId) != null
                        : one("SELECT rights FROM aclv2 WHERE id=" + mailboxId + " AND key='" + guest.asString() + "'") != null;
                    if (hit && !projected) {
                        inconsistencies.add(Map.of("mailboxId", mailboxId, "user", guest.asString(), "rights", "lr"));
                    }
                    return;
                }
                default: {
                    // MESSAGEIDTABLE_INSERT, COUNTER_INCREMENT, QUOTA_INCREMENT: one append, unseen.
                    guarded(() -> manager.getMailbox(mailbox.getMailboxId(), session).appendMessage(
                        MessageManager.AppendCommand.builder().build(Messages.message(mailbox.getUser().asString(),
                            mailbox.getUser().asString(), "break " + runTag + " " + index, index % 3 == 0)), session));
                    if (!hit) {
                        return;
                    }
                    String messageId = platform.messageIds.lastGenerated().serialize();
                    Row truth = one("SELECT uid FROM imapuidtable WHERE messageid=" + messageId + " AND mailboxid=" + mailboxId);
                    if (truth == null) {
                        return;
                    }
                    long uid = truth.getLong(0);
                    boolean projected = one("SELECT uid FROM messageidtable WHERE mailboxid=" + mailboxId + " AND uid=" + uid) != null;
                    if (kind != Kind.MESSAGEIDTABLE_INSERT || !projected) {
                        Map<String, Object> entry = new LinkedHashMap<>();
                        entry.put("mailboxId", mailboxId);
                        entry.put("messageId", messageId);
                        entry.put("uid", uid);
                        if (kind == Kind.QUOTA_INCREMENT) {
                            entry.put("quotaRoot", platform.quotaRootResolver().forUser(mailbox.getUser()).getValue());
                        }
                        inconsistencies.add(entry);
                    }
                }
            }
        }

        /** The attachments the kept messageV3 row still references whose attachmentV2 row James deleted. */
        private void recordLostAttachments(String mailboxId, String messageId) {
            Row message = one("SELECT attachments FROM messagev3 WHERE messageid=" + messageId);
            if (message == null) {
                return;
            }
            for (com.datastax.oss.driver.api.core.data.UdtValue attachment
                : message.getList(0, com.datastax.oss.driver.api.core.data.UdtValue.class)) {
                String attachmentId = attachment.getString("id");
                UUID asUuid = UUID.nameUUIDFromBytes(attachmentId.getBytes(java.nio.charset.StandardCharsets.UTF_8));
                if (one("SELECT idasuuid FROM attachmentv2 WHERE idasuuid=" + asUuid) == null) {
                    Map<String, Object> entry = new LinkedHashMap<>();
                    entry.put("messageId", messageId);
                    entry.put("attachmentId", attachmentId);
                    entry.put("deletedFromMailboxId", mailboxId);
                    inconsistencies.add(entry);
                }
            }
        }

        interface Operation {
            void run() throws Exception;
        }

        /** Runs one James operation; when hit, the kind's statement fails for its whole duration (James's retries too). */
        private void guarded(Operation operation) {
            if (hit) {
                // The failure is delivered on another thread (an already released Barrier), as a real timeout comes
                // back after James has sent its other statements: Scenario's plain fail() throws synchronously, which
                // makes Flux.merge cancel the sibling write before it is sent (e.g. James's parallel deletes).
                Scenario.Barrier released = new Scenario.Barrier();
                released.releaseCaller();
                platform.session.registerScenario(
                    Scenario.Builder.awaitOn(released).thenFail().forever().whenQueryStartsWith(kind.statementPrefix),
                    Scenario.Builder.awaitOn(released).thenFail().forever()
                        .whenQueryStartsWith(lowerTableName(kind.statementPrefix)));
            }
            try {
                operation.run();
            } catch (Exception e) {
                operationErrors++;
            } finally {
                platform.session.registerScenario(Scenario.NOTHING);
            }
        }

        /** James's query builder renders unquoted table names lower-cased ("UPDATE messageidtable ..."). */
        private static String lowerTableName(String prefix) {
            String[] words = prefix.split(" ");
            words[words.length - 1] = words[words.length - 1].toLowerCase();
            return String.join(" ", words);
        }

        private Row one(String cql) {
            return platform.session.execute(cql).one();
        }
    }
}
