package org.apache.james.consistency.harness;

/** A problem with what the caller asked for (exit code 2, one line on stderr). */
class BadInput extends Exception {
    BadInput(String message) {
        super(message);
    }
}
