"""The scan's load on the ring: the adaptive mode's rule (AIMD) on its own, and the limits an operator gives,
refused in one line before anything runs when they make no sense, wherever they are given: the command line, the
job's arguments, the trigger form, a DAG task."""

import copy
import math

import pytest
from airflow.sdk.exceptions import AirflowFailException, ParamValidationError
from james_airflow.consistency_dag import consistency_dag
from james_airflow.operators import RunScan, job_arguments, run_load
from james_consistency.cli import main as cli
from james_consistency.engine.load import p99, page_size
from james_consistency.engine.load_limits import AimdController, LoadLimits, derived_target_ms, latency_target_ms
from james_consistency.errors import OperatorError
from james_consistency.jobs import main as job
from james_consistency.report.metrics import report_figures
from james_consistency.report.run_report import parse_report

# ---- the rule ------------------------------------------------------------------------------------------------------


def test_the_rate_halves_while_the_canary_is_above_target_and_never_goes_below_the_floor():
    rule = AimdController(limit=8000, floor=1500, target_ms=5)

    rates = [rule.observe(latency, 8000) for latency in (9, 9, 9)]

    assert rates == [4000, 2000, 1500]
    assert rule.held_back


def test_the_rate_climbs_back_by_a_tenth_of_the_limit_when_the_canary_is_within_target():
    rule = AimdController(limit=10_000, floor=500, target_ms=5)
    rule.observe(20, 10_000)  # 5000

    rates = [rule.observe(latency, 5000) for latency in (5, 3, 4, 1, 2, 1)]

    assert rates == [6000, 7000, 8000, 9000, 10_000, 10_000]
    assert not rule.held_back


def test_no_reading_keeps_the_rate():
    rule = AimdController(limit=1000, floor=100, target_ms=5)
    rule.observe(50, 1000)

    assert rule.observe(None, 500) == 500


def test_without_a_limit_the_rate_falls_from_what_was_measured_and_goes_back_to_unlimited():
    rule = AimdController(limit=0, floor=1000, target_ms=5)
    assert rule.observe(1, 40_000) == 0, "within target, an unlimited night stays unlimited"
    assert not rule.held_back

    assert rule.observe(30, 40_000) == 20_000
    assert rule.held_back
    raised = [rule.observe(1, 20_000) for _ in range(5)]

    assert raised == [24_000, 28_000, 32_000, 36_000, 0], "a tenth of the fastest rate measured at a time"


def test_a_derived_target_is_twice_the_canarys_p99_and_never_under_two_milliseconds():
    assert derived_target_ms(4.0) == 8.0
    assert derived_target_ms(0.3) == 2.0
    assert p99([1.0] * 99 + [50.0]) == 1.0
    assert p99([3.0, 1.0, 2.0]) == 3.0
    assert p99([]) is None


def test_a_paced_task_asks_for_about_a_second_of_its_rate_a_page():
    assert [page_size(rate) for rate in (0, 10, 2500, 80_000)] == [5000, 100, 2500, 5000]


# ---- the limits, checked -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "limits, problem",
    [
        (LoadLimits(rows_per_second=-1), "scan rows per second -1 is negative"),
        (LoadLimits(rows_per_second=math.nan), "scan rows per second nan is not a number"),
        (LoadLimits(floor=-5), "rate floor -5 is negative"),
        (LoadLimits(rows_per_second=500, floor=1000), "scan rows per second 500 is below the rate floor 1000"),
        (LoadLimits(adaptive=True, floor=0), "the adaptive mode needs a floor above 0"),
        (LoadLimits(latency_target_ms=-3), "latency target (ms) -3 is negative"),
    ],
)
def test_limits_that_make_no_sense_are_refused_in_one_line(limits, problem):
    with pytest.raises(OperatorError, match=problem.replace("(", r"\(").replace(")", r"\)")) as refused:
        limits.validate()
    assert "\n" not in str(refused.value)


def test_a_latency_target_is_derived_or_above_zero():
    assert latency_target_ms("derived") == 0.0
    assert latency_target_ms("12.5") == 12.5
    with pytest.raises(OperatorError, match="latency target 0 ms is no latency: .* or 'derived'"):
        latency_target_ms("0")
    with pytest.raises(OperatorError, match="latency target \\(ms\\) 'fast' is not a number"):
        latency_target_ms("fast")


def test_the_limits_go_to_the_job_as_its_arguments_and_back():
    limits = LoadLimits(rows_per_second=20_000, adaptive=True, latency_target_ms=0, floor=2000)
    arguments = ["--target", "messages", "--keyspace", "k", "--report", "r.json", *limits.as_arguments()]

    assert limits.as_arguments() == [
        *("--scan-rows-per-second", "20000", "--adaptive", "--latency-target-ms", "derived", "--rate-floor", "2000")
    ]
    assert job.run_options(job.build_parser().parse_args(arguments)).load == limits


def test_unset_limits_are_the_deployments_settings_and_the_command_line_does_not_adapt(monkeypatch):
    monkeypatch.setenv("JAMES_SCAN_ROWS_PER_SECOND", "30000")
    monkeypatch.setenv("JAMES_LATENCY_TARGET_MS", "15")
    monkeypatch.setenv("JAMES_RATE_FLOOR_ROWS_PER_SECOND", "3000")
    parsed = job.build_parser().parse_args(["--target", "messages", "--keyspace", "k", "--report", "r.json"])

    assert job.run_options(parsed).load == LoadLimits(30_000, False, 15, 3000)


def run_cli(capsys, *arguments: str) -> tuple[int, str]:
    try:
        code = cli.main(list(arguments))
    except SystemExit as exit_:
        code = exit_.code
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    "options, problem",
    [
        (("--scan-rows-per-second", "-10"), "argument --scan-rows-per-second: scan rows per second -10 is negative"),
        (("--scan-rows-per-second", "lots"), "argument --scan-rows-per-second: scan rows per second 'lots' is not a"),
        (("--latency-target-ms", "0"), "argument --latency-target-ms: latency target 0 ms is no latency"),
        (("--rate-floor", "nan"), "argument --rate-floor: rate floor 'nan' is not a finite number"),
        (("--scan-rows-per-second", "500"), "error: scan rows per second 500 is below the rate floor 1000"),
    ],
)
def test_the_command_line_refuses_a_limit_that_makes_no_sense_before_anything_starts(capsys, options, problem):
    # No node answers on this port: the refusal comes before any connection, any Spark JVM.
    code, err = run_cli(capsys, "check", "messages", "--keyspace", "james", "--port", "1", *options)

    assert code == 2
    assert problem in err.strip().splitlines()[-1]


def test_the_job_refuses_a_limit_below_the_floor_before_its_spark_session(capsys):
    code = job.main(
        ["--target", "messages", "--keyspace", "k", "--report", "r.json", "--no-gates", "--scan-rows-per-second", "50"]
    )

    assert code == 2
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith("scan rows per second 50 is below the rate floor 1000: raise the limit, or lower the floor")
    )


# ---- the trigger form and the DAG task ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dag():
    return consistency_dag(
        dag_id="load_form", target="messages", target_title="t", cron_variable="JAMES_MESSAGE_REPAIR_CRON", doc_md="d"
    )


@pytest.mark.parametrize(
    "given, problem",
    [
        ({"scan_rows_per_second": -5}, "scan_rows_per_second: -5 is less than the minimum of 0"),
        ({"scan_rows_per_second": "fast"}, "scan_rows_per_second: 'fast' is not of type 'number'"),
        ({"latency_target_ms": 0}, "latency_target_ms: 0 is less than or equal to the minimum of 0"),
        ({"rate_floor": -1}, "rate_floor: -1 is less than the minimum of 0"),
    ],
)
def test_the_trigger_form_refuses_a_value_that_makes_no_sense(dag, given, problem):
    params = copy.deepcopy(dag.params)
    with pytest.raises(ParamValidationError, match=problem):
        params.update(given)
        params.validate()


def test_the_form_defaults_to_the_settings_and_a_derived_target(dag):
    defaults = dag.params.validate()

    assert (defaults["scan_rows_per_second"], defaults["adaptive"], defaults["latency_target_ms"]) == (0, False, None)
    assert defaults["rate_floor"] == 1000


def test_a_scheduled_night_adapts_as_the_setting_says_and_a_manual_run_as_its_form_says(dag, monkeypatch):
    form = dag.params.validate()

    assert run_load(form, scheduled=True).adaptive is True
    assert run_load(form, scheduled=False).adaptive is False
    assert run_load({**form, "adaptive": True}, scheduled=False).adaptive is True
    monkeypatch.setenv("JAMES_ADAPTIVE_RATE", "0")
    assert run_load({**form, "adaptive": True}, scheduled=True).adaptive is False


def test_a_task_refuses_a_limit_below_the_floor_before_spark_submit(dag):
    with pytest.raises(AirflowFailException, match="^the scan's limits: scan rows per second 200 is below the rate"):
        run_load({**dag.params.validate(), "scan_rows_per_second": 200}, scheduled=False)


def test_only_a_job_that_scans_takes_the_scans_limits():
    load = tuple(LoadLimits(20_000, True, 0, 2000).as_arguments())
    form = {"keyspace": "k", "dry_run": False}

    scanning = job_arguments("messages", "check", form, "c.json", RunScan(run_dir="/w", reuse=False, load=load))
    reusing = job_arguments("messages", "verify", form, "v.json", RunScan(run_dir="/w", reuse=True, load=load))

    assert scanning[-len(load) :] == list(load)
    assert "--adaptive" not in reusing


# ---- the report and the metrics -------------------------------------------------------------------------------------


def test_the_reports_load_gives_the_rate_and_the_held_back_time_to_the_metrics():
    point = {"at": "2026-12-04T02:30:00+00:00", "rowsPerSecond": 950.0, "limitRowsPerSecond": 1000.0, "rows": 1900}
    report = parse_report(
        {
            **{"type": "messages-consistency", "target": "messages", "mode": "check", "dryRun": True},
            **{"keyspace": "james", "runId": "r", "status": "COMPLETED", "result": "COMPLETED"},
            "load": {
                **{"limitRowsPerSecond": 2000.0, "adaptive": True, "latencyTargetMs": 4.0, "floorRowsPerSecond": 500},
                **{"rowsRead": 1900, "scanSeconds": 2.0, "rowsPerSecond": 950.0, "heldBackSeconds": 2.0},
                "rate": [{**point, "seconds": 2.0, "latencyMs": 12.5, "canaryLatencyMs": 6.1}],
            },
        }
    )

    figures = {figure.measure: figure.value for figure in report_figures(report)}

    assert (figures["scan_rows_per_second"], figures["scan_held_back"]) == (950.0, 2000)
