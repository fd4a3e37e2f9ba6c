package org.apache.james.consistency.harness;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import javax.mail.Flags;

import org.apache.james.core.Username;
import org.apache.james.mailbox.MailboxSession;
import org.apache.james.mailbox.MessageManager;
import org.apache.james.mailbox.MessageUid;
import org.apache.james.mailbox.cassandra.CassandraMailboxManager;
import org.apache.james.mailbox.exception.MailboxExistsException;
import org.apache.james.mailbox.model.ComposedMessageId;
import org.apache.james.mailbox.model.MailboxACL;
import org.apache.james.mailbox.model.MailboxPath;
import org.apache.james.mailbox.model.MessageRange;

/**
 * `seed`: a platform written only through James 3.5.0's MailboxManager: users `user<i>@domain.tld` (i from 1), an INBOX
 * and M-1 more mailboxes (some nested), P messages each (random flags, some recent, one in three with an attachment),
 * user keywords and flag changes through James's flag update path, one copy and one move per user, and ACL updates
 * (user shares, a group entry, a negative entry, a changed right; James 3.5.0 accepts only keys of the owner's
 * domain, groups included). Counters and quotas are James's own side effects.
 */
class SeedCommand {
    private static final String[] KEYWORDS = {"$Forwarded", "$MDNSent", "work", "personal", "important"};
    private static final String[] MAILBOX_NAMES = {"INBOX", "INBOX.sub1", "Archive", "INBOX.sub1.sub2", "Sent",
        "Trash", "Drafts"};

    static Map<String, Object> run(Options options) throws Exception {
        int users = positive(options, "--users");
        int mailboxesPerUser = positive(options, "--mailboxes-per-user");
        int messagesPerMailbox = options.intValue("--messages-per-mailbox");
        if (messagesPerMailbox < 0) {
            throw new BadInput("--messages-per-mailbox must be 0 or more");
        }
        Random random = new Random(options.intValue("--random-seed", 42));

        try (JamesPlatform platform = JamesPlatform.connect(options, true)) {
            Seeder seeder = new Seeder(platform.mailboxManager, random);
            for (int user = 1; user <= users; user++) {
                seeder.seedUser(user, mailboxesPerUser, messagesPerMailbox);
            }
            if (users >= 2) {
                for (int user = 1; user <= users; user++) {
                    seeder.share(user, users, mailboxesPerUser);
                }
            }
            Map<String, Object> result = new LinkedHashMap<>();
            result.put("keyspace", options.keyspace());
            result.put("james", JamesPlatform.JAMES_VERSION);
            result.put("users", users);
            result.put("mailboxes", seeder.mailboxes);
            result.put("messages", seeder.appended + seeder.copied);
            result.put("appended", seeder.appended);
            result.put("withAttachment", seeder.withAttachment);
            result.put("flagUpdates", seeder.flagUpdates);
            result.put("copied", seeder.copied);
            result.put("moved", seeder.moved);
            result.put("aclUpdates", seeder.aclUpdates);
            return result;
        }
    }

    private static int positive(Options options, String name) throws BadInput {
        int value = options.intValue(name);
        if (value < 1) {
            throw new BadInput(name + " must be at least 1");
        }
        return value;
    }

    static String mailboxName(int index) {
        return index < MAILBOX_NAMES.length ? MAILBOX_NAMES[index] : "Archive.folder" + index;
    }

    private static class Seeder {
        private final CassandraMailboxManager mailboxManager;
        private final Random random;
        int mailboxes;
        int appended;
        int withAttachment;
        int flagUpdates;
        int copied;
        int moved;
        int aclUpdates;

        Seeder(CassandraMailboxManager mailboxManager, Random random) {
            this.mailboxManager = mailboxManager;
            this.random = random;
        }

        void seedUser(int userIndex, int mailboxesPerUser, int messagesPerMailbox) throws Exception {
            Username user = Username.of(Messages.userName(userIndex));
            MailboxSession session = mailboxManager.createSystemSession(user);
            List<MailboxPath> paths = new ArrayList<>();
            for (int index = 0; index < mailboxesPerUser; index++) {
                MailboxPath path = MailboxPath.forUser(user, mailboxName(index));
                try {
                    mailboxManager.createMailbox(path, session);
                } catch (MailboxExistsException e) {
                    throw new BadInput("the keyspace already holds " + path.asString() + ": seed an empty keyspace");
                }
                paths.add(path);
                mailboxes++;
            }
            for (MailboxPath path : paths) {
                MessageManager mailbox = mailboxManager.getMailbox(path, session);
                List<MessageUid> uids = new ArrayList<>();
                for (int number = 1; number <= messagesPerMailbox; number++) {
                    String sender = Messages.userName(1 + random.nextInt(Math.max(userIndex + 1, 3)));
                    boolean attachment = number % 3 == 0;
                    ComposedMessageId id = mailbox.appendMessage(Messages.appendCommand(random, sender,
                        user.asString(), "Message " + number + " of " + path.getName(), attachment), session);
                    uids.add(id.getUid());
                    appended++;
                    withAttachment += attachment ? 1 : 0;
                }
                for (MessageUid uid : uids) {
                    updateFlags(mailbox, uid, session);
                }
            }
            copyAndMove(paths, session);
        }

        /** Keywords and flag changes through James's flag update path (imapUidTable, then messageIdTable). */
        private void updateFlags(MessageManager mailbox, MessageUid uid, MailboxSession session) throws Exception {
            int draw = random.nextInt(6);
            if (draw == 0) {
                mailbox.setFlags(new Flags(KEYWORDS[random.nextInt(KEYWORDS.length)]),
                    MessageManager.FlagsUpdateMode.ADD, MessageRange.one(uid), session);
            } else if (draw == 1) {
                mailbox.setFlags(new Flags(Flags.Flag.SEEN), MessageManager.FlagsUpdateMode.ADD,
                    MessageRange.one(uid), session);
            } else if (draw == 2) {
                Flags replacement = new Flags(Flags.Flag.FLAGGED);
                replacement.add(KEYWORDS[random.nextInt(KEYWORDS.length)]);
                mailbox.setFlags(replacement, MessageManager.FlagsUpdateMode.REPLACE, MessageRange.one(uid),
                    session);
            } else {
                return;
            }
            flagUpdates++;
        }

        private void copyAndMove(List<MailboxPath> paths, MailboxSession session) throws Exception {
            if (paths.size() < 2) {
                return;
            }
            MessageManager inbox = mailboxManager.getMailbox(paths.get(0), session);
            List<MessageUid> inboxUids = uids(inbox, session);
            if (!inboxUids.isEmpty()) {
                mailboxManager.copyMessages(MessageRange.one(inboxUids.get(0)), paths.get(0), paths.get(1), session);
                copied++;
            }
            MailboxPath last = paths.get(paths.size() - 1);
            List<MessageUid> lastUids = uids(mailboxManager.getMailbox(last, session), session);
            if (lastUids.size() >= 2) {
                mailboxManager.moveMessages(MessageRange.one(lastUids.get(1)), last, paths.get(0), session);
                moved++;
            }
        }

        private List<MessageUid> uids(MessageManager mailbox, MailboxSession session) throws Exception {
            List<MessageUid> uids = new ArrayList<>();
            mailbox.getMessages(MessageRange.all(), org.apache.james.mailbox.model.FetchGroup.MINIMAL, session)
                .forEachRemaining(result -> uids.add(result.getUid()));
            return uids;
        }

        /** Shares a mailbox of this user with the next users, as an owner does from an IMAP client. */
        void share(int userIndex, int users, int mailboxesPerUser) throws Exception {
            Username owner = Username.of(Messages.userName(userIndex));
            MailboxSession session = mailboxManager.createSystemSession(owner);
            MailboxPath shared = MailboxPath.forUser(owner, mailboxName(mailboxesPerUser > 1 ? 1 : 0));
            Username reader = Username.of(Messages.userName(userIndex % users + 1));
            apply(shared, MailboxACL.command().forUser(reader)
                .rights(MailboxACL.Right.Lookup, MailboxACL.Right.Read, MailboxACL.Right.WriteSeenFlag)
                .asAddition(), session);
            apply(shared, MailboxACL.command().forGroup("friends@" + Messages.DOMAIN)
                .rights(MailboxACL.Right.Lookup, MailboxACL.Right.Read)
                .asAddition(), session);
            if (users >= 3) {
                Username writer = Username.of(Messages.userName((userIndex + 1) % users + 1));
                apply(shared, MailboxACL.command().forUser(writer)
                    .rights(MailboxACL.Right.Lookup, MailboxACL.Right.Read, MailboxACL.Right.Insert,
                        MailboxACL.Right.Write)
                    .asAddition(), session);
                apply(shared, MailboxACL.command()
                    .key(MailboxACL.EntryKey.createUserEntryKey(writer, true))
                    .rights(MailboxACL.Right.DeleteMessages)
                    .asAddition(), session);
            }
            // A changed entry: the reader also gets Insert, later.
            apply(shared, MailboxACL.command().forUser(reader)
                .rights(MailboxACL.Right.Insert)
                .asAddition(), session);
            MailboxPath inbox = MailboxPath.forUser(owner, "INBOX");
            if (random.nextBoolean()) {
                apply(inbox, MailboxACL.command().forUser(reader)
                    .rights(MailboxACL.Right.Lookup)
                    .asAddition(), session);
            }
        }

        private void apply(MailboxPath path, MailboxACL.ACLCommand command, MailboxSession session)
            throws Exception {
            mailboxManager.applyRightsCommand(path, command, session);
            aclUpdates++;
        }
    }
}
