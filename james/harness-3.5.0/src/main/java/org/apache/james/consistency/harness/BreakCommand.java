package org.apache.james.consistency.harness;

import static org.apache.james.backends.cassandra.Scenario.Builder.fail;

import java.io.File;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.stream.Collectors;

import javax.mail.Flags;

import org.apache.james.backends.cassandra.Scenario;
import org.apache.james.core.Username;
import org.apache.james.mailbox.MailboxSession;
import org.apache.james.mailbox.MessageManager;
import org.apache.james.mailbox.MessageUid;
import org.apache.james.mailbox.cassandra.ids.CassandraId;
import org.apache.james.mailbox.cassandra.ids.CassandraMessageId;
import org.apache.james.mailbox.cassandra.mail.CassandraACLMapper;
import org.apache.james.mailbox.cassandra.mail.CassandraMailboxCounterDAO;
import org.apache.james.mailbox.cassandra.mail.CassandraMailboxDAO;
import org.apache.james.mailbox.cassandra.mail.CassandraMailboxPathV2DAO;
import org.apache.james.mailbox.cassandra.mail.CassandraMessageIdDAO;
import org.apache.james.mailbox.cassandra.mail.CassandraMessageIdToImapUidDAO;
import org.apache.james.mailbox.cassandra.mail.CassandraUidProvider;
import org.apache.james.mailbox.cassandra.mail.CassandraUserMailboxRightsDAO;
import org.apache.james.mailbox.model.ComposedMessageIdWithMetaData;
import org.apache.james.mailbox.model.Mailbox;
import org.apache.james.mailbox.model.MailboxACL;
import org.apache.james.mailbox.model.MailboxCounters;
import org.apache.james.mailbox.model.MailboxPath;
import org.apache.james.mailbox.model.MessageRange;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.common.collect.ImmutableList;

/**
 * `break`: runs James 3.5.0's own write paths on the seeded platform; for a share R of the operations, James's
 * TestingSession Scenario fails the chosen statement, so James itself leaves the inconsistency. Each hit operation is
 * then re-read from both sides and reported only when the inconsistency is really there.
 */
class BreakCommand {
    enum Kind {
        MESSAGEIDTABLE_INSERT("messageIdTable-insert", "messages", "INSERT INTO messageIdTable",
            "An add whose messageIdTable insert fails while the parallel imapUidTable insert succeeds: the message is in "
                + "imapUidTable (and messageV2) only; the add fails, so its counters, recents, first-unseen and quota "
                + "updates are skipped too."),
        IMAPUIDTABLE_INSERT("imapUidTable-insert", "messages", "INSERT INTO imapUidTable",
            "An add whose imapUidTable insert fails while the parallel messageIdTable insert succeeds (James 3.5.0 writes "
                + "both at once, no LWT): a messageIdTable row without its imapUidTable truth."),
        FLAGS_IMAPUIDTABLE_ONLY("flags-imapUidTable-only", "messages", "UPDATE messageIdTable",
            "A flag update (\\Seen, \\Flagged or a keyword) reaching imapUidTable only: its conditional update is "
                + "applied, then the messageIdTable update fails and keeps the old flags and modSeq."),
        DELETE_MESSAGEIDTABLE_KEPT("delete-messageIdTable-kept", "messages", "DELETE FROM messageIdTable",
            "A delete whose messageIdTable delete fails: the imapUidTable row is deleted, the messageIdTable row stays."),
        DELETE_IMAPUIDTABLE_KEPT("delete-imapUidTable-kept", "messages", "DELETE FROM imapUidTable",
            "A delete whose imapUidTable delete fails: the messageIdTable row is deleted, the imapUidTable row stays."),
        MAILBOX_ROW_MISSING("mailbox-row-missing", "mailboxes", "INSERT INTO mailbox (",
            "A mailbox creation whose mailbox row insert fails (after James's 5 retries) once its path is registered in "
                + "mailboxPathV2 (James 3.5.0 writes the path first): an orphan path registration."),
        USERMAILBOXACL("UserMailboxACL", "acl", "INSERT INTO UserMailboxACL",
            "A right granted to a user (lpr) whose UserMailboxACL insert fails after the acl row's LWT update: the "
                + "UserMailboxACL projection misses the grant."),
        COUNTER_INCREMENT("counter-increment", "counters", "UPDATE mailboxCounters",
            "An add whose mailboxCounters increment fails: the message is in both message tables but not counted; the add "
                + "fails after its index updates, so the quota is not incremented either."),
        QUOTA_INCREMENT("quota-increment", "quotas", "UPDATE currentQuota",
            "An add whose currentQuota increment fails (the quota listener retries, then gives up to the dead letters): "
                + "the message is stored and counted in its mailbox, the user's currentQuota misses it.");

        final String name;
        final String target;
        final String failingStatement;
        final String what;

        Kind(String name, String target, String failingStatement, String what) {
            this.name = name;
            this.target = target;
            this.failingStatement = failingStatement;
            this.what = what;
        }

        static Kind named(String name) throws BadInput {
            for (Kind kind : values()) {
                if (kind.name.equals(name)) {
                    return kind;
                }
            }
            throw new BadInput("unknown kind '" + name + "': use one of "
                + List.of(values()).stream().map(kind -> kind.name).collect(Collectors.joining(", ")));
        }
    }

    static Object run(Options options) throws Exception {
        if (options.has("--list")) {
            List<Map<String, String>> kinds = new ArrayList<>();
            for (Kind kind : Kind.values()) {
                Map<String, String> description = new LinkedHashMap<>();
                description.put("kind", kind.name);
                description.put("what", kind.what);
                description.put("target", kind.target);
                kinds.add(description);
            }
            return kinds;
        }
        Kind kind = Kind.named(options.value("--kind"));
        double rate = options.doubleValue("--rate");
        if (!(rate >= 0 && rate <= 1)) {
            throw new BadInput("--rate must be between 0 and 1");
        }
        Random random = new Random(options.intValue("--random-seed", 42));
        try (JamesPlatform platform = JamesPlatform.connect(options, false)) {
            Breaker breaker = new Breaker(platform, kind, random);
            breaker.run(rate);
            Map<String, Object> result = new LinkedHashMap<>();
            result.put("kind", kind.name);
            result.put("james", JamesPlatform.JAMES_VERSION);
            result.put("operations", breaker.operations);
            result.put("failed", breaker.failed);
            result.put("inconsistencies", breaker.inconsistencies);
            if (options.has("--manifest")) {
                new ObjectMapper().writerWithDefaultPrettyPrinter().writeValue(new File(options.value("--manifest")),
                    result);
            }
            return result;
        }
    }

    private static class Breaker {
        private final JamesPlatform platform;
        private final Kind kind;
        private final Random random;
        private final CassandraMailboxDAO mailboxDAO;
        private final CassandraMessageIdDAO messageIdDAO;
        private final CassandraMessageIdToImapUidDAO imapUidDAO;
        private final List<Mailbox> mailboxes;
        int operations;
        int failed;
        final List<Map<String, Object>> inconsistencies = new ArrayList<>();

        Breaker(JamesPlatform platform, Kind kind, Random random) {
            this.platform = platform;
            this.kind = kind;
            this.random = random;
            this.mailboxDAO = platform.get(CassandraMailboxDAO.class);
            this.messageIdDAO = platform.get(CassandraMessageIdDAO.class);
            this.imapUidDAO = platform.get(CassandraMessageIdToImapUidDAO.class);
            this.mailboxes = mailboxDAO.retrieveAllMailboxes().collectList().block().stream()
                .sorted(Comparator.comparing(mailbox -> mailbox.generateAssociatedPath().asString()))
                .collect(Collectors.toList());
        }

        void run(double rate) throws Exception {
            switch (kind) {
                case MESSAGEIDTABLE_INSERT:
                case IMAPUIDTABLE_INSERT:
                case COUNTER_INCREMENT:
                case QUOTA_INCREMENT:
                    // One add per mailbox.
                    runOperations(mailboxes, rate, this::add);
                    break;
                case FLAGS_IMAPUIDTABLE_ONLY:
                    // One flag change per message.
                    runOperations(messages(), rate, this::changeFlags);
                    break;
                case DELETE_MESSAGEIDTABLE_KEPT:
                case DELETE_IMAPUIDTABLE_KEPT:
                    // Half of the messages deleted.
                    List<ComposedMessageIdWithMetaData> messages = new ArrayList<>(messages());
                    Collections.shuffle(messages, random);
                    runOperations(messages.subList(0, (messages.size() + 1) / 2), rate, this::delete);
                    break;
                case MAILBOX_ROW_MISSING:
                    // One new child mailbox per mailbox.
                    runOperations(mailboxes, rate, this::createChild);
                    break;
                case USERMAILBOXACL:
                    // One grant per mailbox.
                    runOperations(mailboxes, rate, this::grant);
                    break;
                default:
                    throw new IllegalStateException("no operation for " + kind);
            }
        }

        interface Operation<T> {
            void run(T target, boolean hit) throws Exception;
        }

        private <T> void runOperations(List<T> targets, double rate, Operation<T> operation) throws Exception {
            operations = targets.size();
            int hits = rate == 0 ? 0 : Math.max(1, (int) Math.round(rate * targets.size()));
            List<Integer> order = new ArrayList<>();
            for (int i = 0; i < targets.size(); i++) {
                order.add(i);
            }
            Collections.shuffle(order, random);
            List<Integer> hitIndexes = order.subList(0, Math.min(hits, order.size()));
            for (int i = 0; i < targets.size(); i++) {
                boolean hit = hitIndexes.contains(i);
                if (hit) {
                    failed++;
                }
                operation.run(targets.get(i), hit);
            }
        }

        /** Runs one James write, with the kind's statement failing when hit; James's exception is expected then. */
        private void write(boolean hit, JamesWrite write) throws Exception {
            if (!hit) {
                write.run();
                return;
            }
            platform.session.registerScenario(fail().forever().whenQueryStartsWith(kind.failingStatement));
            try {
                write.run();
                System.err.println("break " + kind.name + ": James reported no error (the failure stayed inside James)");
            } catch (Exception expected) {
                System.err.println("break " + kind.name + ": James failed as injected: " + expected);
            } finally {
                platform.session.registerScenario(Scenario.NOTHING);
            }
        }

        interface JamesWrite {
            void run() throws Exception;
        }

        private MailboxSession ownerSession(Mailbox mailbox) {
            return platform.mailboxManager.createSystemSession(mailbox.getUser());
        }

        private List<ComposedMessageIdWithMetaData> messages() {
            List<ComposedMessageIdWithMetaData> messages = new ArrayList<>();
            for (Mailbox mailbox : mailboxes) {
                messages.addAll(messageIdDAO.retrieveMessages((CassandraId) mailbox.getMailboxId(), MessageRange.all())
                    .collectList().block());
            }
            return messages;
        }

        private Mailbox mailboxOf(ComposedMessageIdWithMetaData message) {
            return mailboxes.stream()
                .filter(mailbox -> mailbox.getMailboxId().equals(message.getComposedMessageId().getMailboxId()))
                .findFirst()
                .orElseThrow();
        }

        private void add(Mailbox mailbox, boolean hit) throws Exception {
            MailboxSession session = ownerSession(mailbox);
            MessageManager messageManager = platform.mailboxManager.getMailbox(mailbox.getMailboxId(), session);
            MessageManager.AppendCommand command = Messages.appendCommand(random, Messages.userName(1),
                mailbox.getUser().asString(), "Break " + kind.name + " in " + mailbox.getName(), random.nextInt(3) == 0);
            CassandraId mailboxId = (CassandraId) mailbox.getMailboxId();
            long countBefore = kind == Kind.QUOTA_INCREMENT ? quotaCount(mailbox.getUser()) : count(mailboxId);
            write(hit, () -> messageManager.appendMessage(command, session));
            if (!hit) {
                return;
            }
            CassandraMessageId messageId = platform.messageIdFactory.last().orElseThrow();
            Optional<ComposedMessageIdWithMetaData> truth = truth(messageId, mailboxId);
            MessageUid uid = platform.get(CassandraUidProvider.class).lastUid(mailbox).orElseThrow();
            Optional<ComposedMessageIdWithMetaData> projection = messageIdDAO.retrieve(mailboxId, uid).block();
            Map<String, Object> found = ids(mailbox, messageId, uid);
            found.put("inImapUidTable", truth.isPresent());
            found.put("inMessageIdTable", projection.isPresent());
            if (kind == Kind.COUNTER_INCREMENT || kind == Kind.QUOTA_INCREMENT) {
                long countAfter = kind == Kind.QUOTA_INCREMENT ? quotaCount(mailbox.getUser()) : count(mailboxId);
                found.put("countBefore", countBefore);
                found.put("countAfter", countAfter);
                if (truth.isPresent() && countAfter == countBefore) {
                    inconsistencies.add(found);
                }
            } else if (truth.isPresent() != projection.isPresent()) {
                inconsistencies.add(found);
            }
        }

        private long quotaCount(Username user) throws Exception {
            return platform.currentQuotaManager.getCurrentMessageCount(platform.quotaRootResolver.forUser(user))
                .asLong();
        }

        private long count(CassandraId mailboxId) {
            return platform.get(CassandraMailboxCounterDAO.class).retrieveMailboxCounters(mailboxId)
                .blockOptional()
                .map(MailboxCounters::getCount)
                .orElse(0L);
        }

        private void changeFlags(ComposedMessageIdWithMetaData message, boolean hit) throws Exception {
            Mailbox mailbox = mailboxOf(message);
            MailboxSession session = ownerSession(mailbox);
            MessageManager messageManager = platform.mailboxManager.getMailbox(mailbox.getMailboxId(), session);
            MessageUid uid = message.getComposedMessageId().getUid();
            Flags change;
            MessageManager.FlagsUpdateMode mode;
            int draw = random.nextInt(3);
            if (draw == 0) {
                change = new Flags(Flags.Flag.SEEN);
                mode = message.getFlags().contains(Flags.Flag.SEEN)
                    ? MessageManager.FlagsUpdateMode.REMOVE : MessageManager.FlagsUpdateMode.ADD;
            } else if (draw == 1) {
                change = new Flags(Flags.Flag.FLAGGED);
                mode = message.getFlags().contains(Flags.Flag.FLAGGED)
                    ? MessageManager.FlagsUpdateMode.REMOVE : MessageManager.FlagsUpdateMode.ADD;
            } else {
                change = new Flags("broken-" + random.nextInt(3));
                mode = MessageManager.FlagsUpdateMode.ADD;
            }
            write(hit, () -> messageManager.setFlags(change, mode, MessageRange.one(uid), session));
            if (!hit) {
                return;
            }
            CassandraMessageId messageId = (CassandraMessageId) message.getComposedMessageId().getMessageId();
            CassandraId mailboxId = (CassandraId) mailbox.getMailboxId();
            Optional<ComposedMessageIdWithMetaData> truth = truth(messageId, mailboxId);
            Optional<ComposedMessageIdWithMetaData> projection = messageIdDAO.retrieve(mailboxId, uid).block();
            if (truth.isPresent() && projection.isPresent() && !truth.get().equals(projection.get())) {
                Map<String, Object> found = ids(mailbox, messageId, uid);
                found.put("imapUidTableModSeq", truth.get().getModSeq().asLong());
                found.put("messageIdTableModSeq", projection.get().getModSeq().asLong());
                found.put("imapUidTableFlags", flagNames(truth.get().getFlags()));
                found.put("messageIdTableFlags", flagNames(projection.get().getFlags()));
                inconsistencies.add(found);
            }
        }

        private void delete(ComposedMessageIdWithMetaData message, boolean hit) throws Exception {
            Mailbox mailbox = mailboxOf(message);
            MailboxSession session = ownerSession(mailbox);
            MessageManager messageManager = platform.mailboxManager.getMailbox(mailbox.getMailboxId(), session);
            MessageUid uid = message.getComposedMessageId().getUid();
            write(hit, () -> messageManager.delete(ImmutableList.of(uid), session));
            if (!hit) {
                return;
            }
            CassandraMessageId messageId = (CassandraMessageId) message.getComposedMessageId().getMessageId();
            CassandraId mailboxId = (CassandraId) mailbox.getMailboxId();
            boolean inTruth = truth(messageId, mailboxId).isPresent();
            boolean inProjection = messageIdDAO.retrieve(mailboxId, uid).block().isPresent();
            if (inTruth != inProjection) {
                Map<String, Object> found = ids(mailbox, messageId, uid);
                found.put("inImapUidTable", inTruth);
                found.put("inMessageIdTable", inProjection);
                inconsistencies.add(found);
            }
        }

        private void createChild(Mailbox parent, boolean hit) throws Exception {
            MailboxSession session = ownerSession(parent);
            MailboxPath path = MailboxPath.forUser(parent.getUser(),
                parent.getName() + "." + "child" + Long.toHexString(random.nextInt(1 << 20)));
            write(hit, () -> platform.mailboxManager.createMailbox(path, session));
            if (!hit) {
                return;
            }
            Optional<CassandraId> registered = Optional.ofNullable(platform.get(CassandraMailboxPathV2DAO.class)
                .retrieveId(path).block()).map(idAndPath -> idAndPath.getCassandraId());
            boolean rowPresent = registered.isPresent()
                && mailboxDAO.retrieveMailbox(registered.get()).blockOptional().isPresent();
            if (registered.isPresent() && !rowPresent) {
                Map<String, Object> found = new LinkedHashMap<>();
                found.put("mailboxId", registered.get().serialize());
                found.put("user", path.getUser().asString());
                found.put("mailbox", path.getName());
                found.put("inMailboxPathV2", true);
                found.put("inMailbox", false);
                inconsistencies.add(found);
            }
        }

        private void grant(Mailbox mailbox, boolean hit) throws Exception {
            MailboxSession session = ownerSession(mailbox);
            List<Username> others = mailboxes.stream()
                .map(Mailbox::getUser)
                .filter(user -> !user.equals(mailbox.getUser()))
                .distinct()
                .sorted(Comparator.comparing(Username::asString))
                .collect(Collectors.toList());
            Username grantee = others.isEmpty()
                ? Username.of("guest@" + Messages.DOMAIN) : others.get(random.nextInt(others.size()));
            MailboxACL.Rfc4314Rights added = new MailboxACL.Rfc4314Rights(MailboxACL.Right.Lookup,
                MailboxACL.Right.Read, MailboxACL.Right.Post);
            write(hit, () -> platform.mailboxManager.applyRightsCommand(mailbox.generateAssociatedPath(),
                MailboxACL.command().forUser(grantee).rights(added).asAddition(), session));
            if (!hit) {
                return;
            }
            CassandraId mailboxId = (CassandraId) mailbox.getMailboxId();
            MailboxACL acl = platform.get(CassandraACLMapper.class).getACL(mailboxId).block();
            Optional<MailboxACL.Rfc4314Rights> inAcl = Optional.ofNullable(
                acl.getEntries().get(MailboxACL.EntryKey.createUserEntryKey(grantee)));
            Optional<MailboxACL.Rfc4314Rights> inProjection = platform.get(CassandraUserMailboxRightsDAO.class)
                .retrieve(grantee, mailboxId).block();
            if (!inAcl.equals(inProjection)) {
                Map<String, Object> found = new LinkedHashMap<>();
                found.put("mailboxId", mailboxId.serialize());
                found.put("owner", mailbox.getUser().asString());
                found.put("mailbox", mailbox.getName());
                found.put("user", grantee.asString());
                found.put("aclRights", inAcl.map(MailboxACL.Rfc4314Rights::serialize).orElse(null));
                found.put("userMailboxAclRights", inProjection.map(MailboxACL.Rfc4314Rights::serialize).orElse(null));
                inconsistencies.add(found);
            }
        }

        private Optional<ComposedMessageIdWithMetaData> truth(CassandraMessageId messageId, CassandraId mailboxId) {
            return imapUidDAO.retrieve(messageId, Optional.of(mailboxId)).next().blockOptional();
        }

        private Map<String, Object> ids(Mailbox mailbox, CassandraMessageId messageId, MessageUid uid) {
            Map<String, Object> found = new LinkedHashMap<>();
            found.put("mailboxId", mailbox.getMailboxId().serialize());
            found.put("messageId", messageId.serialize());
            found.put("uid", uid.asLong());
            found.put("user", mailbox.getUser().asString());
            found.put("mailbox", mailbox.getName());
            return found;
        }

        private static List<String> flagNames(Flags flags) {
            List<String> names = new ArrayList<>();
            for (Flags.Flag flag : flags.getSystemFlags()) {
                names.add(systemFlagName(flag));
            }
            Collections.addAll(names, flags.getUserFlags());
            Collections.sort(names);
            return names;
        }

        private static String systemFlagName(Flags.Flag flag) {
            if (flag == Flags.Flag.ANSWERED) {
                return "\\Answered";
            } else if (flag == Flags.Flag.DELETED) {
                return "\\Deleted";
            } else if (flag == Flags.Flag.DRAFT) {
                return "\\Draft";
            } else if (flag == Flags.Flag.FLAGGED) {
                return "\\Flagged";
            } else if (flag == Flags.Flag.RECENT) {
                return "\\Recent";
            } else if (flag == Flags.Flag.SEEN) {
                return "\\Seen";
            }
            return "\\User";
        }
    }
}
