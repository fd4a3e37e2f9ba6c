"""The exit codes of the repair jobs (reconcile and mailboxes), read by the CLI, the Airflow operators and the alerts.

Only EXIT_RUN_FAILED is transient: a re-run can cure an infrastructure failure, while wrong input, a partial repair
or a failed gate would end the same way again.
"""

EXIT_COMPLETED = 0
EXIT_BAD_INPUT = 2
EXIT_PARTIAL = 3
EXIT_GATE_FAILED = 4
EXIT_RUN_FAILED = 5
# Not a failure: the run stopped at its window's end (or range budget) at a range boundary; the next run goes on.
EXIT_WINDOW_ENDED = 6

TRANSIENT_EXIT_CODE = EXIT_RUN_FAILED

EXIT_CODE_MEANINGS = {
    EXIT_COMPLETED: "completed",
    EXIT_BAD_INPUT: "bad input (wrong keyspace, missing table, malformed arguments)",
    EXIT_PARTIAL: "partial: some rows could not be repaired (listed in the report; a re-run converges)",
    EXIT_GATE_FAILED: "a Great Expectations gate failed",
    EXIT_RUN_FAILED: (
        "an infrastructure failure: no node answered, or it went away (the report names the stage; a re-run converges)"
    ),
    EXIT_WINDOW_ENDED: "the run stopped at the end of its window, at a range boundary; the next run goes on",
}
