package org.apache.james.consistency.harness;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.james.core.Username;
import org.apache.james.mailbox.cassandra.ids.CassandraId;
import org.apache.james.mailbox.cassandra.mail.CassandraACLMapper;
import org.apache.james.mailbox.cassandra.mail.CassandraMailboxDAO;
import org.apache.james.mailbox.cassandra.mail.CassandraUserMailboxRightsDAO;
import org.apache.james.mailbox.model.Mailbox;
import org.apache.james.mailbox.model.MailboxACL;

import com.datastax.driver.core.Row;

/**
 * `acl --keyspace K`: the ACLs as James 3.5.0's own read path returns them. For every mailbox of the mailbox table
 * (CassandraMailboxDAO), the ACL CassandraMailboxMapper attaches when it serves the mailbox
 * (CassandraACLMapper.getACL: the `acl` table's JSON, an absent row or a JSON it cannot read being the empty ACL);
 * for every user, what CassandraUserMailboxRightsDAO.listRightsForUser lists (UserMailboxACL). Entry keys and rights
 * are serialized by James (EntryKey.serialize, Rfc4314Rights.serialize); a read that throws is reported as "error: ...".
 */
class AclCommand {
    static Map<String, Object> run(Options options) throws Exception {
        try (JamesPlatform platform = JamesPlatform.connect(options, false)) {
            CassandraACLMapper aclMapper = platform.get(CassandraACLMapper.class);
            CassandraUserMailboxRightsDAO userRightsDAO = platform.get(CassandraUserMailboxRightsDAO.class);
            Map<String, Object> mailboxes = new TreeMap<>();
            TreeSet<String> users = new TreeSet<>();
            for (Mailbox mailbox : platform.get(CassandraMailboxDAO.class).retrieveAllMailboxes().collectList().block()) {
                CassandraId mailboxId = (CassandraId) mailbox.getMailboxId();
                users.add(mailbox.getUser().asString());
                try {
                    MailboxACL acl = aclMapper.getACL(mailboxId).block();
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
