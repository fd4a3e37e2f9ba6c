package org.apache.james.consistency.harness;

import java.util.Map;
import java.util.TreeSet;

import org.apache.james.backends.cassandra.components.CassandraTable;

/** `schema --keyspace K [--replication-factor N]`: the keyspace with James 3.8.1's own types and tables. */
public class SchemaCommand {
    public static Map<String, Object> run(Arguments arguments) {
        try (Platform platform = Platform.connect(arguments)) {
            TreeSet<String> tables = new TreeSet<>();
            for (CassandraTable table : Platform.MODULES.moduleTables()) {
                tables.add(table.getName().toLowerCase());
            }
            return Map.of("keyspace", platform.keyspace, "james", Main.JAMES_VERSION, "tables", tables);
        }
    }
}
