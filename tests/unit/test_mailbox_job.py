"""The offline mailbox repair job without Spark: its command line becomes its options, the command line hands the job
every option it accepts (or refuses it), and a repair pass runs only while something is left that a pass may fix."""

import pytest
from james_consistency.cli.mailboxes import chosen_options, job_arguments, refuse_foreign_options
from james_consistency.cli.main import build_parser
from james_consistency.engine.run import RunOptions
from james_consistency.errors import OperatorError
from james_consistency.jobs.main import build_mailboxes_parser, mailbox_options
from james_consistency.jobs.targets import target_options
from james_consistency.mailboxes import CONFIRMATION
from james_consistency.mailboxes import diagnosis as d
from james_consistency.mailboxes.options import DELETE, RECREATE, MailboxOptions
from james_consistency.mailboxes.repair import anything_to_fix
from james_consistency.projections.flags import FlagOptions


def test_the_jobs_command_line_becomes_its_options():
    command = ["--keyspace", "james", "--mode", "repair", "--confirm", CONFIRMATION, "--merge", "--report", "r.json"]
    command += ["--orphan-paths", DELETE, "--max-passes", "3", "--no-gates", "--run-dir", "/w/run"]

    assert mailbox_options(build_mailboxes_parser().parse_args(command)) == RunOptions(
        target="mailboxes",
        keyspace="james",
        mode="repair",
        target_options=MailboxOptions(confirmation=CONFIRMATION, merge=True, orphan_paths=DELETE, max_passes=3),
        gates_enabled=False,
        run_dir="/w/run",
    )


def test_by_default_an_orphan_path_gets_its_mailbox_row_back_as_james_3_9_x_does():
    options = mailbox_options(build_mailboxes_parser().parse_args(["--keyspace", "james", "--report", "r.json"]))

    assert options.target_options.orphan_paths == RECREATE == MailboxOptions().orphan_paths
    assert target_options(RunOptions("mailboxes", "james")) == MailboxOptions()


def cli(*arguments: str):
    return build_parser().parse_args(list(arguments))


def test_the_command_line_hands_the_mailbox_job_its_work_folder_and_every_option_given():
    args = cli("repair", "mailboxes", "--keyspace", "james", "--run-dir", "/w/run", "--no-gates",
               "--i-know-what-i-am-doing", CONFIRMATION, "--orphan-paths", DELETE, "--merge",
               "--max-passes", "2")  # fmt: skip

    refuse_foreign_options(args)
    assert job_arguments(args, "james", "r.json") == [
        "--keyspace", "james", "--mode", "repair", "--report", "r.json", "--no-gates", "--run-dir", "/w/run",
        "--orphan-paths", DELETE, "--merge", "--confirm", CONFIRMATION, "--max-passes", "2",
    ]  # fmt: skip


def test_a_check_previews_the_repair_with_its_orphan_path_policy_and_merge():
    assert job_arguments(cli("check", "mailboxes", "--keyspace", "james"), "james", "r.json") == [
        "--keyspace", "james", "--mode", "check", "--report", "r.json", "--orphan-paths", RECREATE,
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("arguments", "refused"),
    [
        (["repair", "mailboxes", "--recheck-delay", "5"], "--recheck-delay"),
        (["repair", "mailboxes", "--truth-consistency", "SERIAL", "--allow-destructive"],
         "--truth-consistency, --allow-destructive"),
        (["check", "mailboxes", "--ranges", "4", "--work-root", "/w"], "--ranges, --work-root"),
        (["verify", "mailboxes", "--reuse-scan", "--run-dir", "/w/run"], "--reuse-scan"),
        (["check", "mailboxes", "--remove-unused-flags"], "--remove-unused-flags"),
        (["repair", "messages", "--merge", "--orphan-paths", "delete"], "--merge, --orphan-paths"),
        (["repair", "counters", "--max-passes", "2"], "--max-passes"),
        (["check", "messages", "--remove-unused-flags"], "--remove-unused-flags"),
    ],
    ids=["delay", "consistency-and-destructive", "ranges", "reused-scan", "flags-option", "mailbox-options",
         "passes", "flags-option-elsewhere"],
)  # fmt: skip
def test_an_option_the_target_does_not_take_is_refused_in_one_line(arguments, refused):
    with pytest.raises(OperatorError, match=f"does not take {refused}:"):
        refuse_foreign_options(cli(*arguments, "--keyspace", "james"))


def test_the_options_a_target_takes_pass():
    refuse_foreign_options(
        cli("repair", "flags", "--keyspace", "james", "--remove-unused-flags", "--recheck-delay", "1")
    )
    refuse_foreign_options(cli("check", "mailboxes", "--keyspace", "james", "--merge", "--orphan-paths", DELETE))


def test_a_wrong_number_of_passes_is_refused_not_replaced_by_the_default():
    options = chosen_options(cli("repair", "mailboxes", "--keyspace", "james", "--max-passes", "0"))

    with pytest.raises(OperatorError, match="max passes must be 1 or more"):
        options.validate()


def test_options_of_another_target_are_refused_when_the_target_is_resolved():
    with pytest.raises(OperatorError, match="target 'messages' does not take MailboxOptions"):
        target_options(RunOptions("messages", "james", target_options=MailboxOptions()))
    assert target_options(RunOptions("flags", "james")) == FlagOptions()
    assert target_options(RunOptions("messages", "james")) is None


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (MailboxOptions(orphan_paths="keep"), "unknown orphan-path policy 'keep'"),
        (MailboxOptions(max_passes=0), "max passes must be 1 or more"),
    ],
)
def test_wrong_mailbox_options_are_refused_with_the_run_options(options, message):
    with pytest.raises(OperatorError, match=message):
        RunOptions("mailboxes", "james", target_options=options).validate()


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
