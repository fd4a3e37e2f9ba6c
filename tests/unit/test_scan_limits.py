"""The scan's load on the ring: the adaptive mode's rule on its own (a ring nobody uses read at full speed, a ring James
serves approached carefully, AIMD on the canary's latency), the pace a night's re-checks keep, and the limits an
operator gives, refused in one line before anything runs when they make no sense, wherever they are given: the command
line, the job's arguments, the trigger form, a DAG task."""

import copy
import math

import pytest
from airflow.sdk.exceptions import AirflowFailException, ParamValidationError
from james_airflow.consistency_dag import consistency_dag
from james_airflow.operators import RunScan, job_arguments, run_load
from james_consistency.cli import main as cli
from james_consistency.engine.load import p99, page_size
from james_consistency.engine.load_limits import (
    AimdController,
    LoadLimits,
    derived_target_ms,
    latency_target_ms,
    quiet,
    recheck_rate,
)
from james_consistency.errors import OperatorError
from james_consistency.jobs import main as job
from james_consistency.report.metrics import report_figures
from james_consistency.report.run_report import parse_report

BUSY = 300.0  # James's requests a second on a ring it serves (the impact bench's client asks about that)

# ---- the rule ------------------------------------------------------------------------------------------------------


def test_a_ring_nobody_uses_is_read_at_full_speed_whatever_the_canary_says():
    rule = AimdController(limit=0, floor=1000, target_ms=5, others_at_start=2)
    assert rule.rate == 0 and not rule.held_back, "no one but the night: unlimited from the first batch"

    assert rule.observe(500, 60_000, others_per_second=3) == 0, "its own latency slows no one down"
    assert rule.observe(500, 60_000, others_per_second=BUSY) == 30_000, "users came: half what it read at"
    assert rule.observe(500, 30_000, others_per_second=0) == 0, "they left: full speed again"
    limited = AimdController(limit=20_000, floor=1000, target_ms=5, others_at_start=0)
    assert limited.rate == 20_000 and limited.observe(500, 19_000, 0) == 20_000, "a ring nobody uses: the limit"


def test_a_ring_james_serves_or_may_serve_is_approached_carefully():
    assert AimdController(limit=0, floor=1000, target_ms=5, others_at_start=BUSY).rate == 4000, "4x the floor"
    assert AimdController(limit=20_000, floor=1000, target_ms=5, others_at_start=BUSY).rate == 5000, "a quarter"
    assert AimdController(limit=3000, floor=1000, target_ms=5, others_at_start=BUSY).rate == 1000, "the floor"
    assert AimdController(limit=0, floor=1000, target_ms=5, others_at_start=None).rate == 4000, "not counted: busy"
    assert (quiet(None), quiet(9.9), quiet(10.0)) == (False, True, False)


def test_the_rate_doubles_within_target_until_the_canary_is_above_it_then_climbs_by_a_tenth():
    rule = AimdController(limit=0, floor=1000, target_ms=20, others_at_start=BUSY)

    rates = [
        rule.observe(latency, measured, BUSY)
        for latency, measured in ((8, 3900), (12, 7800), (45, 15_000), (15, 7900), (18, 9400))
    ]

    assert rates == [8000, 16_000, 8000, 9500, 11_000], "slow start, halved, then a tenth of the fastest (15,000)"
    assert rule.held_back


def test_the_rate_halves_while_the_canary_is_above_target_and_never_goes_below_the_floor():
    rule = AimdController(limit=0, floor=1500, target_ms=5, others_at_start=BUSY)

    rates = [rule.observe(9, 4000, BUSY) for _ in range(3)]

    assert rates == [3000, 1500, 1500], "from 6,000 (4x the floor)"


def test_a_limit_caps_the_climb_and_a_rate_the_scan_did_not_come_near_is_no_limit():
    limited = AimdController(limit=10_000, floor=500, target_ms=5, others_at_start=BUSY)
    assert [limited.observe(3, measured, BUSY) for measured in (2400, 4900)] == [5000, 10_000]
    assert not limited.held_back

    unlimited = AimdController(limit=0, floor=1000, target_ms=5, others_at_start=BUSY)
    assert unlimited.observe(3, 2000, BUSY) == 0, "4,000 allowed, 2,000 read: the ring's own pace held it back"


def test_no_reading_keeps_the_rate():
    rule = AimdController(limit=1000, floor=100, target_ms=5, others_at_start=BUSY)

    assert rule.observe(None, 250, BUSY) == 250


def test_a_derived_target_is_the_canarys_p99_plus_a_margin_or_twice_it():
    assert derived_target_ms(4.0) == 24.0
    assert derived_target_ms(30.0) == 60.0
    assert p99([1.0] * 99 + [50.0]) == 1.0
    assert p99([3.0, 1.0, 2.0]) == 3.0
    assert p99([]) is None


# ---- the pace of a night's re-checks --------------------------------------------------------------------------------


def test_a_nights_re_checks_keep_to_the_rate_its_scan_ended_at_and_a_manual_run_is_not_slowed():
    adaptive, limited = LoadLimits(adaptive=True), LoadLimits(rows_per_second=20_000)

    assert recheck_rate(0, adaptive, 8000) == 200, "the adaptive mode's last rate, in re-checks (40 rows each)"
    assert recheck_rate(0, adaptive, 0) == 0, "a ring nobody used: as fast as it goes"
    assert recheck_rate(0, limited, 20_000) == recheck_rate(0, limited, None) == 500, "the limit"
    assert recheck_rate(0, LoadLimits(), 8000) == 0, "no limits (a manual run): unthrottled"
    assert recheck_rate(50, adaptive, 8000) == 50, "a rate given wins"


def test_every_job_of_a_scheduled_night_takes_its_limits_and_a_manual_runs_jobs_none(dag, monkeypatch):
    monkeypatch.setenv("JAMES_ADAPTIVE_RATE", "1")
    form = {**dag.params.validate(), "keyspace": "k"}
    for scheduled, paced in ((True, True), (False, False)):
        load = tuple(run_load(form, scheduled).as_arguments())
        for mode in ("repair", "verify"):
            command = job_arguments("messages", mode, form, "r.json", RunScan(run_dir="/w", reuse=True, load=load))
            options = job.run_options(job.build_parser().parse_args(command))

            assert options.reuse_scan and options.load.adaptive is paced
            assert (recheck_rate(options.messages_per_second, options.load, 8000) == 200) is paced


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


def test_the_jobs_that_scan_and_those_that_reuse_the_scan_take_the_nights_limits():
    load = tuple(LoadLimits(20_000, True, 0, 2000).as_arguments())
    form = {"keyspace": "k", "dry_run": False}

    scanning = job_arguments("messages", "check", form, "c.json", RunScan(run_dir="/w", reuse=False, load=load))
    reusing = job_arguments("messages", "verify", form, "v.json", RunScan(run_dir="/w", reuse=True, load=load))

    assert scanning[-len(load) :] == list(load)
    assert reusing[-len(load) :] == list(load), "the pace of its re-checks"


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
