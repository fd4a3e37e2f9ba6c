"""What the kit says about a local node that stopped answering: the errors its logs have since it last started."""

from james_consistency_kit.cassandra_node import LocalNode


def _logs(home, lines):
    (home / "logs").mkdir(parents=True)
    (home / "logs" / "system.log").write_text("\n".join(lines) + "\n")


def test_the_errors_shown_are_those_since_the_node_last_started(tmp_path):
    _logs(
        tmp_path,
        [
            "INFO  [main] 2026-11-26 10:00:00,000 CassandraDaemon.java:609 - JVM vendor/version: OpenJDK/17",
            "ERROR [Native-Transport-Requests-6] 2026-11-26 22:35:15,297 - an earlier run's error",
            "INFO  [main] 2026-11-27 07:00:00,000 CassandraDaemon.java:609 - JVM vendor/version: OpenJDK/17",
            "INFO  [main] 2026-11-27 07:00:01,000 - Node is ready",
            "ERROR [COMMIT-LOG-ALLOCATOR] 2026-11-27 07:17:50,000 - Failed managing commit log segments",
            "java.io.IOException: No space left on device",
        ],
    )

    shown = LocalNode(home=tmp_path).log_errors()

    assert shown.splitlines() == [
        "ERROR [COMMIT-LOG-ALLOCATOR] 2026-11-27 07:17:50,000 - Failed managing commit log segments",
        "java.io.IOException: No space left on device",
    ]


def test_a_node_without_errors_or_logs_says_which(tmp_path):
    assert LocalNode(home=tmp_path).log_errors() == "(no log)"
    _logs(tmp_path, ["INFO  [main] 2026-11-27 07:00:00,000 CassandraDaemon.java:609 - JVM vendor/version: OpenJDK/17"])
    assert LocalNode(home=tmp_path).log_errors() == f"(no error in {tmp_path / 'logs'})"
