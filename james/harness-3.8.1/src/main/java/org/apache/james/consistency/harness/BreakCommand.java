package org.apache.james.consistency.harness;

public class BreakCommand {
    public static Object run(Arguments arguments) throws Exception {
        throw new BadInput("not yet");
    }
}
