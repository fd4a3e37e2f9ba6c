package org.apache.james.consistency.harness;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import org.apache.james.backends.cassandra.components.CassandraTable;

/** `schema`: the keyspace and every type and table of James 3.5.0's mailbox modules, created by James itself. */
class SchemaCommand {
    static Map<String, Object> run(Options options) throws BadInput {
        try (JamesPlatform platform = JamesPlatform.connect(options, true)) {
            Map<String, Object> result = new LinkedHashMap<>();
            result.put("keyspace", options.keyspace());
            result.put("james", JamesPlatform.JAMES_VERSION);
            result.put("tables", tableNames());
            return result;
        }
    }

    static List<String> tableNames() {
        return JamesPlatform.MODULE.moduleTables().stream()
            .map(CassandraTable::getName)
            .map(String::toLowerCase)
            .sorted()
            .collect(Collectors.toList());
    }
}
