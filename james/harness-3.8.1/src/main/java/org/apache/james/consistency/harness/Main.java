package org.apache.james.consistency.harness;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.datatype.jdk8.Jdk8Module;

/**
 * The James 3.8.1 harness: `schema | seed | break | solve` against the project's Cassandra node, every write made
 * by James's own code. stdout carries exactly one JSON document; logs go to stderr. `batch` runs the command lines
 * of a JSON array of arrays read from stdin one after the other in this JVM, and prints the array of their results
 * (a test platform written and broken by James costs one JVM start instead of one per command).
 * Exit codes: 0 done, 2 bad input (one line on stderr), 1 anything else (stack trace on stderr).
 */
public class Main {
    public static final String JAMES_VERSION = "3.8.1";
    public static final ObjectMapper JSON = new ObjectMapper().registerModule(new Jdk8Module());

    public static void main(String[] args) {
        // Keep stdout for the one JSON document: anything a library prints goes to stderr.
        PrintStream stdout = System.out;
        System.setOut(System.err);
        int code;
        try {
            Object result = run(args);
            stdout.println(JSON.writeValueAsString(result));
            stdout.flush();
            code = 0;
        } catch (BadInput e) {
            System.err.println(e.getMessage());
            code = 2;
        } catch (Throwable e) {
            e.printStackTrace(System.err);
            code = 1;
        }
        System.exit(code);
    }

    static Object run(String[] args) throws Exception {
        if (args.length == 0) {
            throw new BadInput("usage: Main schema|seed|break|solve --keyspace K [options]");
        }
        Arguments arguments = new Arguments(args, 1);
        switch (args[0]) {
            case "schema":
                return SchemaCommand.run(arguments);
            case "seed":
                return SeedCommand.run(arguments);
            case "break":
                return BreakCommand.run(arguments);
            case "solve":
                return SolveCommand.run(arguments);
            case "acl":
                return AclCommand.run(arguments);
            case "batch":
                List<Object> results = new ArrayList<>();
                for (String[] line : JSON.readValue(System.in, String[][].class)) {
                    if (line.length > 0 && line[0].equals("batch")) {
                        throw new BadInput("a batch holds no batch");
                    }
                    results.add(run(line));
                }
                return results;
            default:
                throw new BadInput("unknown command " + args[0] + " (expected one of "
                    + Arrays.asList("schema", "seed", "break", "solve", "acl", "batch") + ")");
        }
    }
}
