package org.apache.james.consistency.harness;

/** Wrong input from the caller (unknown kind, missing keyspace...): exit 2 with this one-line message. */
public class BadInput extends RuntimeException {
    public BadInput(String message) {
        super(message);
    }
}
