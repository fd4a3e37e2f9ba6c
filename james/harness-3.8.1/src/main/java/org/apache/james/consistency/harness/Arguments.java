package org.apache.james.consistency.harness;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** `--name value` options and positional words of one command line. */
public class Arguments {
    private final Map<String, String> options = new HashMap<>();
    private final List<String> positional = new ArrayList<>();

    public Arguments(String[] args, int from) {
        for (int i = from; i < args.length; i++) {
            if (args[i].startsWith("--")) {
                String name = args[i].substring(2);
                if (i + 1 < args.length && !args[i + 1].startsWith("--")) {
                    options.put(name, args[++i]);
                } else {
                    options.put(name, "true");
                }
            } else {
                positional.add(args[i]);
            }
        }
    }

    public String required(String name) {
        String value = options.get(name);
        if (value == null) {
            throw new BadInput("missing option --" + name);
        }
        return value;
    }

    public String get(String name, String fallback) {
        return options.getOrDefault(name, fallback);
    }

    public boolean has(String name) {
        return options.containsKey(name);
    }

    public int integer(String name, int fallback) {
        String value = options.get(name);
        try {
            return value == null ? fallback : Integer.parseInt(value);
        } catch (NumberFormatException e) {
            throw new BadInput("--" + name + " must be an integer, got " + value);
        }
    }

    public double decimal(String name, double fallback) {
        String value = options.get(name);
        try {
            return value == null ? fallback : Double.parseDouble(value);
        } catch (NumberFormatException e) {
            throw new BadInput("--" + name + " must be a number, got " + value);
        }
    }

    public List<String> positional() {
        return positional;
    }
}
