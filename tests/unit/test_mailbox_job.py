"""The offline mailbox repair job without Spark: its command line becomes its options, and a repair pass runs only
while something is left that a pass may fix."""

import pytest
from james_consistency.engine.run import RunOptions
from james_consistency.jobs.main import build_mailboxes_parser, mailbox_options
from james_consistency.mailboxes import CONFIRMATION
from james_consistency.mailboxes import diagnosis as d
from james_consistency.mailboxes import policy as p
from james_consistency.mailboxes.repair import anything_to_fix


def test_the_jobs_command_line_becomes_its_options():
    command = ["--keyspace", "james", "--mode", "repair", "--confirm", CONFIRMATION, "--merge", "--report", "r.json"]
    command += ["--orphan-paths", p.DELETE, "--max-passes", "3", "--no-gates", "--run-dir", "/w/run"]

    assert mailbox_options(build_mailboxes_parser().parse_args(command)) == RunOptions(
        target="mailboxes",
        keyspace="james",
        mode="repair",
        confirmation=CONFIRMATION,
        merge=True,
        orphan_paths=p.DELETE,
        max_passes=3,
        gates_enabled=False,
        run_dir="/w/run",
    )


NOTHING = dict.fromkeys(d.KINDS, 0)


@pytest.mark.parametrize(
    ("counts", "merge", "expected"),
    [
        ({**NOTHING, d.ORPHAN_PATH: 2}, False, True),
        ({**NOTHING, d.TWO_IDS_ONE_PATH: 1}, True, True),
        ({**NOTHING, d.TWO_IDS_ONE_PATH: 1, d.PATH_POINTS_TO_ANOTHER_ID: 3}, False, False),
        (NOTHING, True, False),
    ],
    ids=["a-fixable-finding", "two-ids-when-merging", "conflicts-only-without-merge", "nothing"],
)
def test_a_repair_pass_runs_while_a_fixable_finding_is_left_or_a_merge_to_do(counts, merge, expected):
    assert anything_to_fix(counts, merge) is expected
