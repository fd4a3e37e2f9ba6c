package org.apache.james.consistency.harness;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.UUID;

import javax.mail.Flags;

import org.apache.james.core.Domain;
import org.apache.james.core.Username;
import org.apache.james.core.quota.QuotaCountLimit;
import org.apache.james.core.quota.QuotaSizeLimit;
import org.apache.james.domainlist.cassandra.CassandraDomainList;
import org.apache.james.eventsourcing.eventstore.EventStore;
import org.apache.james.jmap.api.filtering.Rule;
import org.apache.james.jmap.api.filtering.impl.EventSourcingFilteringManagement;
import org.apache.james.mailbox.MailboxSession;
import org.apache.james.mailbox.MessageManager;
import org.apache.james.mailbox.MessageUid;
import org.apache.james.mailbox.cassandra.CassandraMailboxManager;
import org.apache.james.mailbox.model.ComposedMessageId;
import org.apache.james.mailbox.model.MailboxACL;
import org.apache.james.mailbox.model.MailboxPath;
import org.apache.james.mailbox.model.MessageRange;
import org.apache.james.mailbox.model.QuotaRoot;
import org.apache.james.user.cassandra.CassandraUsersDAO;

import reactor.core.publisher.Mono;

/**
 * `seed --keyspace K --users N --mailboxes-per-user M --messages-per-mailbox P [--random-seed S]`: a platform
 * written only through James 3.8.1's own code: users and domain (its users DAO and domain list), mailboxes, messages,
 * flag updates, moves, copies, deletes and ACL shares (its mailbox manager, hence its mappers, counters, quota listener
 * and ACL event sourcing), quota limits (its max quota manager) and one FilteringRule aggregate per user (its JMAP
 * filtering management, an event-sourced aggregate beside the ACL ones in eventStore).
 */
public class SeedCommand {
    static final String DOMAIN = "domain.tld";

    public static Map<String, Object> run(Arguments arguments) throws Exception {
        int users = arguments.integer("users", 2);
        int mailboxesPerUser = arguments.integer("mailboxes-per-user", 2);
        int messagesPerMailbox = arguments.integer("messages-per-mailbox", 3);
        if (users < 1 || mailboxesPerUser < 1 || messagesPerMailbox < 0) {
            throw new BadInput("--users and --mailboxes-per-user must be >= 1, --messages-per-mailbox >= 0");
        }
        Random random = new Random(arguments.integer("random-seed", 42));
        Map<String, Object> counts = new LinkedHashMap<>();
        try (Platform platform = Platform.connect(arguments)) {
            CassandraMailboxManager manager = platform.mailboxManager();
            new CassandraDomainList(null, platform.session).addDomain(Domain.of(DOMAIN));
            CassandraUsersDAO usersDAO = new CassandraUsersDAO(platform.session);
            EventSourcingFilteringManagement filtering =
                new EventSourcingFilteringManagement(platform.injector.getInstance(EventStore.class));
            long appended = 0;
            long flagUpdates = 0;
            long moved = 0;
            long copied = 0;
            long deleted = 0;
            long aclUpdates = 0;
            long mailboxes = 0;
            for (int u = 1; u <= users; u++) {
                Username user = username(u);
                if (!usersDAO.contains(user)) {
                    usersDAO.addUser(user, UUID.randomUUID().toString());
                }
                MailboxSession session = manager.createSystemSession(user);
                QuotaRoot quotaRoot = platform.quotaRootResolver().forUser(user);
                platform.maxQuotaManager().setMaxMessage(quotaRoot, QuotaCountLimit.count(100_000));
                platform.maxQuotaManager().setMaxStorage(quotaRoot, QuotaSizeLimit.size(1_000_000_000L));

                List<MailboxPath> paths = mailboxPaths(user, mailboxesPerUser);
                for (MailboxPath path : paths) {
                    if (!manager.mailboxExists(path, session).block()) {
                        manager.createMailbox(path, session);
                    }
                    mailboxes++;
                }
                for (MailboxPath path : paths) {
                    MessageManager mailbox = manager.getMailbox(path, session);
                    List<ComposedMessageId> added = new ArrayList<>();
                    for (int m = 1; m <= messagesPerMailbox; m++) {
                        String subject = "message " + m + " of " + path.getName() + " for " + user.asString();
                        boolean withAttachment = m % 3 == 0;
                        MessageManager.AppendResult result = mailbox.appendMessage(MessageManager.AppendCommand.builder()
                            .withFlags(Messages.randomFlags(random))
                            .isRecent(random.nextDouble() < 0.3)
                            .build(Messages.message(username(1 + random.nextInt(users)).asString(), user.asString(),
                                subject, withAttachment)), session);
                        added.add(result.getId());
                        appended++;
                    }
                    // Flag changes through James's flag update path: keywords added, some read, some unflagged.
                    for (ComposedMessageId id : added) {
                        if (random.nextDouble() < 0.4) {
                            mailbox.setFlags(Messages.keyword(random), MessageManager.FlagsUpdateMode.ADD,
                                MessageRange.one(id.getUid()), session);
                            flagUpdates++;
                        }
                        if (random.nextDouble() < 0.3) {
                            mailbox.setFlags(new Flags(Flags.Flag.SEEN), MessageManager.FlagsUpdateMode.ADD,
                                MessageRange.one(id.getUid()), session);
                            flagUpdates++;
                        }
                    }
                }
                if (paths.size() > 1 && messagesPerMailbox > 1) {
                    // One message of INBOX moved and one copied to the next mailbox; one deleted from the last.
                    MessageManager inbox = manager.getMailbox(paths.get(0), session);
                    List<MessageUid> uids = new ArrayList<>();
                    inbox.getMessages(MessageRange.all(), org.apache.james.mailbox.model.FetchGroup.MINIMAL, session)
                        .forEachRemaining(message -> uids.add(message.getUid()));
                    manager.moveMessages(MessageRange.one(uids.get(0)), paths.get(0), paths.get(1), session);
                    moved++;
                    manager.copyMessages(MessageRange.one(uids.get(1)), paths.get(0), paths.get(1), session);
                    copied++;
                    MessageManager last = manager.getMailbox(paths.get(paths.size() - 1), session);
                    List<MessageUid> lastUids = new ArrayList<>();
                    last.getMessages(MessageRange.all(), org.apache.james.mailbox.model.FetchGroup.MINIMAL, session)
                        .forEachRemaining(message -> lastUids.add(message.getUid()));
                    last.delete(List.of(lastUids.get(lastUids.size() - 1)), session);
                    deleted++;
                }
                // ACL: INBOX shared read-only with the next user; a group entry and a negative entry on another one.
                Username neighbour = username(u % users + 1);
                if (!neighbour.equals(user)) {
                    manager.applyRightsCommand(paths.get(0), MailboxACL.command().forUser(neighbour)
                        .rights(MailboxACL.Rfc4314Rights.fromSerializedRfc4314Rights("lr")).asAddition(), session);
                    aclUpdates++;
                }
                MailboxPath shared = paths.get(paths.size() - 1);
                manager.applyRightsCommand(shared, MailboxACL.command()
                    .key(MailboxACL.EntryKey.createGroupEntryKey("team@" + DOMAIN))
                    .rights(MailboxACL.Rfc4314Rights.fromSerializedRfc4314Rights("lrsw")).asAddition(), session);
                aclUpdates++;
                if (!neighbour.equals(user)) {
                    manager.applyRightsCommand(shared, MailboxACL.command()
                        .key(MailboxACL.EntryKey.createUserEntryKey(neighbour, true))
                        .rights(MailboxACL.Rfc4314Rights.fromSerializedRfc4314Rights("w")).asAddition(), session);
                    aclUpdates++;
                }
                // A JMAP filtering rule: the FilteringRule/<user> aggregate of eventStore.
                Rule rule = Rule.builder()
                    .id(Rule.Id.of("rule-" + u))
                    .name("newsletters of " + user.asString())
                    .condition(Rule.Condition.of(Rule.Condition.Field.SUBJECT, Rule.Condition.Comparator.CONTAINS, "newsletter"))
                    .action(Rule.Action.of(Rule.Action.AppendInMailboxes.withMailboxIds(
                        manager.getMailbox(shared, session).getId().serialize())))
                    .build();
                Mono.from(filtering.defineRulesForUser(user, List.of(rule), Optional.empty())).block();
                manager.endProcessingRequest(session);
            }
            counts.put("keyspace", platform.keyspace);
            counts.put("james", Main.JAMES_VERSION);
            counts.put("users", users);
            counts.put("mailboxes", mailboxes);
            counts.put("messages", appended + copied - deleted);
            counts.put("appended", appended);
            counts.put("flagUpdates", flagUpdates);
            counts.put("moved", moved);
            counts.put("copied", copied);
            counts.put("deleted", deleted);
            counts.put("aclUpdates", aclUpdates);
            counts.put("filteringRules", users);
        }
        return counts;
    }

    static Username username(int index) {
        return Username.of("user" + index + "@" + DOMAIN);
    }

    /** INBOX, then nested (INBOX.sub1) and top-level mailboxes in turn. */
    static List<MailboxPath> mailboxPaths(Username user, int count) {
        List<MailboxPath> paths = new ArrayList<>();
        paths.add(MailboxPath.inbox(user));
        for (int i = 1; i < count; i++) {
            paths.add(MailboxPath.forUser(user, i % 2 == 1 ? "INBOX.sub" + i : "Folder" + i));
        }
        return paths;
    }
}
