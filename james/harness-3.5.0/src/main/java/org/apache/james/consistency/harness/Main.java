package org.apache.james.consistency.harness;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;

import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The James 3.5.0 harness: `schema`, `seed`, `break` and `solve` against one keyspace, with James's own code.
 * stdout carries exactly one JSON document; everything else goes to stderr. `batch` runs the command lines of a JSON
 * array of arrays read from stdin one after the other in this JVM, and prints the array of their results (a test
 * platform written and broken by James costs one JVM start instead of one per command).
 * Exit codes: 0 done, 2 bad input (one line on stderr), 1 anything else (stack trace on stderr).
 */
public class Main {
    private static final Set<String> CONNECTION = Set.of("--host", "--port", "--keyspace");

    public static void main(String[] args) {
        PrintStream stdout = System.out;
        System.setOut(System.err);
        int exitCode;
        try {
            Object result = run(Arrays.asList(args));
            stdout.println(new ObjectMapper().writeValueAsString(result));
            stdout.flush();
            exitCode = 0;
        } catch (BadInput e) {
            System.err.println(e.getMessage());
            exitCode = 2;
        } catch (Throwable e) {
            e.printStackTrace();
            exitCode = 1;
        }
        System.exit(exitCode);
    }

    private static Object run(List<String> args) throws Exception {
        if (args.isEmpty()) {
            throw new BadInput("usage: schema|seed|break|solve --keyspace K [options]");
        }
        String command = args.get(0);
        List<String> rest = args.subList(1, args.size());
        switch (command) {
            case "schema":
                return SchemaCommand.run(new Options(rest, with("--replication-factor")));
            case "seed":
                return SeedCommand.run(new Options(rest, with("--users", "--mailboxes-per-user",
                    "--messages-per-mailbox", "--random-seed", "--replication-factor")));
            case "break":
                return BreakCommand.run(new Options(rest, with("--kind", "--rate", "--random-seed", "--manifest",
                    "--list")));
            case "solve":
                return SolveCommand.run(new Options(rest, with("--messages-per-second")));
            case "acl":
                return AclCommand.run(new Options(rest, with()));
            case "batch":
                List<Object> results = new ArrayList<>();
                for (String[] line : new ObjectMapper().readValue(System.in, String[][].class)) {
                    if (line.length > 0 && line[0].equals("batch")) {
                        throw new BadInput("a batch holds no batch");
                    }
                    results.add(run(Arrays.asList(line)));
                }
                return results;
            default:
                throw new BadInput("unknown command '" + command + "': use schema, seed, break, solve, acl or batch");
        }
    }

    private static Set<String> with(String... options) {
        Set<String> allowed = new java.util.HashSet<>(CONNECTION);
        allowed.addAll(Arrays.asList(options));
        return allowed;
    }
}
