package org.apache.james.consistency.harness;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.james.core.Username;
import org.apache.james.mailbox.cassandra.ids.CassandraId;
import org.apache.james.mailbox.cassandra.mail.ACLMapper;
import org.apache.james.mailbox.cassandra.mail.CassandraMailboxDAO;
import org.apache.james.mailbox.cassandra.mail.CassandraUserMailboxRightsDAO;
import org.apache.james.mailbox.model.Mailbox;
import org.apache.james.mailbox.model.MailboxACL;

import com.datastax.oss.driver.api.core.cql.Row;

/**
 * `acl --keyspace K`: the ACLs as James 3.8.1's own read path returns them. For every mailbox of the mailbox table
 * (CassandraMailboxDAO), the ACL CassandraMailboxMapper attaches when it serves the mailbox (ACLMapper.getACL, which
 * reads aclv2 from schema version 10 on, an absent ACL being empty); for every user, what
 * CassandraUserMailboxRightsDAO.listRightsForUser lists (UserMailboxACL). Entry keys and rights are serialized by
 * James (EntryKey.serialize, Rfc4314Rights.serialize); an ACL James fails to read is reported as "error: ...".
 */
public class AclCommand {
    public static Map<String, Object> run(Arguments arguments) {
        try (Platform platform = Platform.connectExisting(arguments)) {
            ACLMapper aclMapper = platform.injector.getInstance(ACLMapper.class);
            CassandraUserMailboxRightsDAO userRightsDAO = platform.injector.getInstance(CassandraUserMailboxRightsDAO.class);
            Map<String, Object> mailboxes = new TreeMap<>();
            TreeSet<String> users = new TreeSet<>();
            for (Mailbox mailbox : platform.injector.getInstance(CassandraMailboxDAO.class).retrieveAllMailboxes()
                    .collectList().block()) {
                CassandraId mailboxId = (CassandraId) mailbox.getMailboxId();
                users.add(mailbox.getUser().asString());
                try {
                    MailboxACL acl = aclMapper.getACL(mailboxId).defaultIfEmpty(MailboxACL.EMPTY).block();
                    Map<String, String> entries = new TreeMap<>();
                    acl.getEntries().forEach((key, rights) -> {
                        entries.put(key.serialize(), rights.serialize());
                        if (key.getNameType() == MailboxACL.NameType.user) {
                            users.add(key.getName());
                        }
                    });
                    mailboxes.put(mailboxId.serialize(), entries);
                } catch (RuntimeException e) {
                    mailboxes.put(mailboxId.serialize(), "error: " + e);
                }
            }
            // A UserMailboxACL row of a user no mailbox names anymore is part of what James would list for that user.
            for (Row row : platform.session.execute("SELECT DISTINCT username FROM usermailboxacl")) {
                users.add(row.getString("username"));
            }
            Map<String, Object> userRights = new TreeMap<>();
            for (String user : users) {
                Map<String, String> rights = new TreeMap<>();
                try {
                    userRightsDAO.listRightsForUser(Username.of(user)).toIterable()
                        .forEach(pair -> rights.put(pair.getLeft().serialize(), pair.getRight().serialize()));
                    if (!rights.isEmpty()) {
                        userRights.put(user, rights);
                    }
                } catch (RuntimeException e) {
                    userRights.put(user, "error: " + e);
                }
            }
            Map<String, Object> result = new LinkedHashMap<>();
            result.put("mailboxes", mailboxes);
            result.put("userRights", userRights);
            return result;
        }
    }
}
