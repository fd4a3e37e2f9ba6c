package org.apache.james.consistency.harness;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** `--name value` options and positional words of one command line; `--list` is the only flag without a value. */
class Options {
    private static final Set<String> FLAGS = Set.of("--list");

    private final Map<String, String> values = new HashMap<>();
    private final List<String> positional = new ArrayList<>();

    Options(List<String> args, Set<String> allowed) throws BadInput {
        for (int i = 0; i < args.size(); i++) {
            String arg = args.get(i);
            if (!arg.startsWith("--")) {
                positional.add(arg);
                continue;
            }
            if (!allowed.contains(arg)) {
                throw new BadInput("unknown option " + arg);
            }
            if (FLAGS.contains(arg)) {
                values.put(arg, "true");
                continue;
            }
            if (i + 1 >= args.size()) {
                throw new BadInput("option " + arg + " needs a value");
            }
            values.put(arg, args.get(++i));
        }
    }

    List<String> positional() {
        return positional;
    }

    boolean has(String name) {
        return values.containsKey(name);
    }

    String value(String name) throws BadInput {
        String value = values.get(name);
        if (value == null || value.isEmpty()) {
            throw new BadInput("missing option " + name);
        }
        return value;
    }

    int intValue(String name, int defaultValue) throws BadInput {
        return has(name) ? intValue(name) : defaultValue;
    }

    int intValue(String name) throws BadInput {
        try {
            return Integer.parseInt(value(name));
        } catch (NumberFormatException e) {
            throw new BadInput("option " + name + " needs an integer, got '" + values.get(name) + "'");
        }
    }

    double doubleValue(String name) throws BadInput {
        try {
            return Double.parseDouble(value(name));
        } catch (NumberFormatException e) {
            throw new BadInput("option " + name + " needs a number, got '" + values.get(name) + "'");
        }
    }

    String host() throws BadInput {
        return has("--host") ? value("--host") : "127.0.0.1";
    }

    int port() throws BadInput {
        return intValue("--port", 9042);
    }

    String keyspace() throws BadInput {
        String keyspace = value("--keyspace");
        if (!keyspace.matches("[A-Za-z][A-Za-z0-9_]{0,47}")) {
            throw new BadInput("invalid keyspace name '" + keyspace + "'");
        }
        return keyspace.toLowerCase();
    }
}
