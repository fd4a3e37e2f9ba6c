"""The levels a run reads at, from James's configuration as the settings mirror it, or from the run's own choice."""

import pytest
from james_consistency.cassandra.consistency_levels import read_levels
from james_consistency.errors import OperatorError


@pytest.mark.parametrize(
    ("strong", "lwt", "message_truth"),
    [
        (None, None, "SERIAL"),  # James's defaults: messages written with lightweight transactions, SERIAL profile
        ("1", "LOCAL_SERIAL", "LOCAL_SERIAL"),
        ("0", "SERIAL", "LOCAL_QUORUM"),
    ],
    ids=["james-defaults", "local-serial-profile", "messages-written-without-lwt"],
)
def test_imap_uid_table_is_re_read_as_james_re_reads_it_and_the_rest_at_the_regular_level(
    monkeypatch, strong, lwt, message_truth
):
    for name, value in (("JAMES_MESSAGE_WRITE_STRONG_CONSISTENCY", strong), ("JAMES_LWT_SERIAL_CONSISTENCY", lwt)):
        monkeypatch.delenv(f"AIRFLOW_VAR_{name}", raising=False)
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)

    levels = read_levels()

    assert (levels.message_truth, levels.truth, levels.scan) == (message_truth, "LOCAL_QUORUM", "LOCAL_QUORUM")


@pytest.mark.parametrize(
    ("given", "scan"), [("SERIAL", "LOCAL_QUORUM"), ("LOCAL_SERIAL", "LOCAL_QUORUM"), ("QUORUM", "QUORUM")]
)
def test_a_level_given_to_the_run_wins_for_every_truth_re_read_but_a_scan_is_never_serial(monkeypatch, given, scan):
    monkeypatch.setenv("JAMES_MESSAGE_WRITE_STRONG_CONSISTENCY", "0")

    levels = read_levels(given)

    assert (levels.message_truth, levels.truth, levels.scan) == (given, given, scan)


@pytest.mark.parametrize(
    ("given", "setting", "error"),
    [
        ("QUORUMM", "SERIAL", "unknown consistency level 'QUORUMM'"),
        (None, "QUORUM", "setting JAMES_LWT_SERIAL_CONSISTENCY='QUORUM' is not valid: expected SERIAL or LOCAL_SERIAL"),
    ],
)
def test_a_wrong_level_is_one_line_naming_it(monkeypatch, given, setting, error):
    monkeypatch.setenv("JAMES_LWT_SERIAL_CONSISTENCY", setting)

    with pytest.raises(OperatorError, match=error):
        read_levels(given)
