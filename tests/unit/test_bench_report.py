"""`bench report`: docs/benchmarks.md and its figure from the bench's JSON files: the latest run of each target as a
table of its phases, every run in the dated history, and a real PNG."""

import json

import pytest
from james_consistency.errors import OperatorError
from james_consistency_kit.bench import results
from james_consistency_kit.bench.report import write_report
from james_consistency_kit.cli import main


def _cpu(seconds: float, busy: float, cassandra: float) -> dict:
    return {
        "cpuSeconds": seconds,
        "busyCores": busy,
        "cassandraCpuSeconds": cassandra,
        "cassandraCores": 0.5,
        "cores": 2,
    }


def messages_result(date: str, bare_scan: float = 20.0) -> dict:
    """The figures of a `bench messages` run on 100,000 messages, in the bench's own keys."""
    return {
        "keyspace": "bench_james_100000",
        "messages": 100_000,
        "inconsistencyRate": 0.01,
        "broken": {"projection-missing": 330},
        "found": {"missing": 330, "outdated": 331, "orphan": 339},
        "bareScan": {"seconds": bare_scan, "rowsPerSecond": 10_000, "rowsScanned": 200_000},
        "dryRun": {"seconds": 30.0, "truthRowsPerSecond": 3_333},
        "repair": {"seconds": 40.0, "truthRowsPerSecond": 2_500},
        "nightlyRun": {
            "seconds": 50.0,
            "truthRowsPerSecond": 2_000,
            "ranges": 16,
            "steps": {"check": 35.0, "repair": 9.0, "verify": 6.0},
            "stepsCpu": {"check": _cpu(60.0, 1.7, 20.0)},
        },
        "dryRunInRanges": {"seconds": 32.0, "truthRowsPerSecond": 3_125, "ranges": 16},
        "stoppedAndResumed": {"seconds": 36.0},
        "jamesStyleReference": {"seconds": 10.0, "truthRowsPerSecond": 2_000, "processed": 20_000, "written": 200},
        "machineCpu": {
            "bareScan": _cpu(36.0, 1.8, 18.0),
            "dryRun": _cpu(54.0, 1.8, 20.0),
            "repair": _cpu(72.0, 1.8, 25.0),
            "nightlyRun": _cpu(90.0, 1.8, 30.0),
            "dryRunInRanges": _cpu(57.6, 1.8, 21.0),
            "stoppedAndResumed": _cpu(64.8, 1.8, 22.0),
        },
        "ratios": {
            "nightlyRunTimeOverBareScanTime": round(50.0 / bare_scan, 2),
            "nightlyRunCpuOverBareScanCpu": 2.5,
            "stoppedAndResumedOverUninterrupted": 1.13,
            "repairOverJamesUnthrottledThroughput": 2.5,
        },
        "jamesSolveMessageInconsistencies": {
            "unthrottled": {"seconds": 100.0, "truthRowsPerSecond": 1_000, "measuredOn": "the benched keyspace"},
            "defaultRate": {"seconds": 400.0, "truthRowsPerSecond": 50, "measuredOn": "a sample keyspace of 20000"},
            "jamesAfterOurRepair": {"addsNothing": True},
        },
        "date": date,
        "commit": "abc1234",
        "uncommittedChanges": False,
        "machine": {
            "cores": 2,
            "processor": "a test processor",
            "memoryGiB": 24.0,
            "loadAverageAtStart": [0.5, 1, 2],
            "speedReferenceSecondsAtStart": 0.26,
            "speedReferenceSecondsAtEnd": 0.31,
        },
    }


@pytest.fixture
def published(tmp_path):
    folder = tmp_path / "benchmarks"
    folder.mkdir()
    (folder / "messages-old.json").write_text(json.dumps(messages_result("2026-11-27T08:00Z", bare_scan=25.0)))
    (folder / "messages-new.json").write_text(json.dumps(messages_result("2026-11-28T09:30Z")))
    recorded = {
        "date": "2026-11-26T07:25Z",
        "commit": "d6da176",
        "target": "messages",
        "messages": 882442,
        "bareScanSeconds": 17.1,
        "nightlyOverBareScan": 2.23,
        "note": "recorded by hand",
    }
    history = {"history": [recorded]}
    (folder / "history.json").write_text(json.dumps(history))
    return folder


def _row(page: str, phase: str) -> list[str]:
    """The cells of the first table row of `phase`."""
    line = next(line for line in page.splitlines() if line.startswith(f"| {phase} |"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_the_latest_run_is_a_table_of_its_phases_against_the_bare_scan_and_james(published, tmp_path):
    page_path = tmp_path / "benchmarks.md"

    assert main(["bench", "report", str(published), "--page", str(page_path)]) == 0

    page = page_path.read_text()
    latest = page.split("## Latest figures")[1].split("## History")[0]
    assert "`messages-new.json`, 2026-11-28 09:30 UTC, commit `abc1234`" in latest
    assert "messages-old.json" not in latest, "only the newest run of a target is in the latest figures"
    assert "load average when the bench started 0.50 / 1.00 / 2.00" in latest
    assert "speed reference (a fixed one-core loop, higher on a slower host) 0.26 s at the start and 0.31 s" in latest
    # James's unthrottled task takes 100 s for these 100,000 truth rows (1,000 a second).
    assert _row(latest, "bare scan (both tables, every column)") == [
        "bare scan (both tables, every column)", "20.0 s", "10,000 rows/s",
        "36.0 CPU-s (1.80 of 2; Cassandra 18.0 CPU-s)", "1.00x", "0.20x", "",
    ]  # fmt: skip
    assert _row(latest, "repair") == [
        "repair", "40.0 s", "2,500 truth rows/s", "72.0 CPU-s (1.80 of 2; Cassandra 25.0 CPU-s)", "2.00x",
        "0.40x", "1,000 found",
    ]  # fmt: skip
    assert _row(latest, "nightly run")[1:5] == ["50.0 s", "2,000 truth rows/s", _row(latest, "nightly run")[3], "2.50x"]
    assert _row(latest, "↳ its check")[1] == "35.0 s"
    assert _row(latest, "James 3.8.1's own task, unthrottled")[1:3] == ["100.0 s", "1,000 truth rows/s"]
    assert "on a sample keyspace of 20000" in _row(latest, "James 3.8.1's own task, at its default 100 messages/s")[-1]


def test_a_smaller_run_published_later_leaves_the_largest_sizes_latest_figures(published, tmp_path):
    smaller = {**messages_result("2026-11-28T10:00Z"), "keyspace": "bench_james_20000", "messages": 19_431}
    (published / "messages-smaller.json").write_text(json.dumps(smaller))
    page_path = tmp_path / "benchmarks.md"

    main(["bench", "report", str(published), "--page", str(page_path)])

    latest = page_path.read_text().split("## Latest figures")[1].split("## History")[0]
    assert "`messages-new.json`, 2026-11-28 09:30 UTC" in latest
    assert "messages-smaller.json" not in latest
    assert "messages-smaller.json" in page_path.read_text().split("## History")[1], "still in the history"


def test_the_history_lists_every_run_newest_first_with_the_recorded_ones(published, tmp_path):
    page_path = tmp_path / "benchmarks.md"

    main(["bench", "report", str(published), "--page", str(page_path)])

    history = page_path.read_text().split("## History")[1]
    dates = [line.split("|")[1].strip() for line in history.splitlines() if line.startswith("| 2026-")]
    assert dates == ["2026-11-28 09:30 UTC", "2026-11-27 08:00 UTC", "2026-11-26 07:25 UTC"]
    newest = next(line for line in history.splitlines() if "messages-new.json" in line)
    assert "| 1.80 cores, 0.50, ref 0.26 s |" in newest, "the machine's load and speed beside the run's figures"
    recorded = next(line for line in history.splitlines() if "d6da176" in line)
    assert "882,442" in recorded and "17.1 s" in recorded and "2.23x" in recorded and "recorded by hand" in recorded


def test_a_run_records_the_hosts_speed_at_its_start_and_its_end(monkeypatch):
    timings = iter([0.5, 0.3, 0.4, 0.9, 0.7, 0.8])  # the loop's three timings at the start, then at the end
    clock = iter(value for timing in timings for value in (0.0, timing))
    monkeypatch.setattr(results.time, "perf_counter", lambda: next(clock))

    record = results.run_record(results.machine())

    assert record["machine"]["speedReferenceSecondsAtStart"] == 0.3, "the best of three"
    assert record["machine"]["speedReferenceSecondsAtEnd"] == 0.7
    assert record["machine"]["loadAverageAtStart"] and record["machine"]["cores"]


def test_the_figure_is_a_png_beside_the_page(published, tmp_path):
    page_path = tmp_path / "benchmarks.md"

    main(["bench", "report", str(published), "--page", str(page_path)])

    figure = tmp_path / "benchmarks" / "phases.png"
    assert figure.stat().st_size > 10_000
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "](benchmarks/phases.png)" in page_path.read_text()


def test_a_file_that_is_no_bench_result_is_refused_by_name(published, tmp_path):
    (published / "notes.json").write_text(json.dumps({"hello": "world"}))

    with pytest.raises(OperatorError, match="notes.json is not a bench result"):
        write_report([published], tmp_path / "benchmarks.md")


def modelled_result(messages: int, date: str, keyspace: str) -> dict:
    """A messages bench result whose nightly run has the costs of test_bench_model's night (1 % broken)."""
    from test_bench_model import bench_figures

    figures = messages_result(date)
    modelled = bench_figures(messages, messages // 100, messages // 1000)
    figures["messages"], figures["keyspace"] = messages, keyspace
    figures["bareScan"]["rowsScanned"] = modelled["bareScan"]["rowsScanned"]
    figures["nightlyRun"].update(modelled["nightlyRun"])
    for step in figures["nightlyRun"]["stepsCpu"].values():
        step["busyCores"] = 1.5
    return figures


def test_two_sizes_of_the_messages_bench_put_the_model_of_a_night_on_the_page(published, tmp_path):
    from test_bench_model import CASSANDRA_CANDIDATE, SPARK_CANDIDATE, SPARK_ROW

    for messages, date in ((100_000, "2026-11-29T08:00Z"), (1_000_000, "2026-11-29T09:00Z")):
        figures = modelled_result(messages, date, f"bench_james_{messages}")
        (published / f"messages-{messages}.json").write_text(json.dumps(figures))
    page_path = tmp_path / "benchmarks.md"

    main(["bench", "report", str(published), "--page", str(page_path)])

    model = page_path.read_text().split("## A night on a cluster (model)")[1].split("## History")[0]
    assert _row(model, "100,000 messages")[3] == "+0%" and _row(model, "1,000,000 messages")[3] == "+0%"
    # 100M messages, 1 % broken: 2 x 1M rows re-checked twice plus the verify's sample of 100,000 keys.
    candidates = 100_000_000 * (2 * 0.01 + 0.001)
    spark_cpu = 200_000_000 * SPARK_ROW + candidates * SPARK_CANDIDATE
    ten_cores = _row(model, "one node | 100,000,000 | 1 % | 10")
    assert ten_cores[5] == f"{round(12.0 + spark_cpu / 10):,} s" and ten_cores[8:] == ["spark", "yes"]
    cassandra_cpu = round(200_000_000 * 2e-5 + candidates * CASSANDRA_CANDIDATE)
    assert _row(model, "one node | 100,000,000 | 1 % | 40")[6] == f"{cassandra_cpu:,} s"


def test_a_ring_measured_on_another_processor_is_not_checked_against_the_one_node_constants(published, tmp_path):
    for messages, date in ((100_000, "2026-11-29T08:00Z"), (1_000_000, "2026-11-29T09:00Z")):
        figures = modelled_result(messages, date, f"bench_james_{messages}")
        figures["machine"] = {**figures.get("machine", {}), "processor": "AMD EPYC"}
        (published / f"messages-{messages}.json").write_text(json.dumps(figures))
    for messages, date in ((20_000, "2026-11-28T08:00Z"), (100_000, "2026-11-28T09:00Z")):
        ring = modelled_result(messages, date, f"bench_james_rf3_{messages}")
        ring["machine"] = {**ring.get("machine", {}), "processor": "Intel(R) Xeon(R) Processor"}
        ring["cluster"] = {
            "cassandraNodes": 3,
            "replicationFactor": 3,
            "sparkMaster": "spark://m:7077",
            "executorCores": 2,
        }
        (published / f"messages-ring-{messages}.json").write_text(json.dumps(ring))
    page_path = tmp_path / "benchmarks.md"

    main(["bench", "report", str(published), "--page", str(page_path)])

    model = page_path.read_text().split("## A night on a cluster (model)")[1].split("## History")[0]
    assert "on the local ring and Spark cluster (not fitted on)" not in model
    assert "measured on another processor (Intel(R) Xeon(R) Processor) than the one-node fit (AMD EPYC)" in model
    # The ring is still checked against the constants fitted on its own runs.
    own_fit = model.split("with the constants fitted on its smallest and largest")[1]
    assert _row(own_fit, "20,000 messages")[3] == "+0%"


def test_one_size_of_the_messages_bench_is_no_model(published, tmp_path):
    # The same seeded keyspace on two nights: another night's breakage left fewer messages, not another size.
    for messages, date in ((1_000_000, "2026-11-29T08:00Z"), (976_000, "2026-11-29T09:00Z")):
        figures = modelled_result(messages, date, "bench_james_1000000")
        (published / f"messages-{messages}.json").write_text(json.dumps(figures))
    page_path = tmp_path / "benchmarks.md"

    main(["bench", "report", str(published), "--page", str(page_path)])

    assert "## A night on a cluster" not in page_path.read_text()


def test_a_run_on_a_ring_checks_the_model_without_being_fitted_on_or_taken_for_the_latest(published, tmp_path):
    from test_bench_model import CASSANDRA_ROW

    for messages, date in ((100_000, "2026-11-29T08:00Z"), (1_000_000, "2026-11-29T09:00Z")):
        figures = modelled_result(messages, date, f"bench_james_{messages}")
        (published / f"messages-{messages}.json").write_text(json.dumps(figures))
    # The newest run, on a 3-node ring: its scan cost Cassandra twice what one node's did, the rest as modelled.
    ring = modelled_result(200_000, "2026-11-30T08:00Z", "bench_james_rf3_200000")
    ring["nightlyRun"]["stepsCpu"]["check"]["cassandraCpuSeconds"] *= 2
    ring["nightlyRun"]["stepsCpu"]["check"]["cpuSeconds"] += 400_000 * CASSANDRA_ROW
    ring["cluster"] = {
        "cassandraNodes": 3,
        "replicationFactor": 3,
        "sparkMaster": "spark://127.0.0.1:7077",
        "executorCores": 2,
    }
    (published / "messages-ring.json").write_text(json.dumps(ring))
    page_path = tmp_path / "benchmarks.md"

    main(["bench", "report", str(published), "--page", str(page_path)])

    page = page_path.read_text()
    model = page.split("## A night on a cluster (model)")[1].split("## History")[0]
    fitted_on, on_the_ring = model.split("on the local ring and Spark cluster (not fitted on)")
    assert _row(fitted_on, "100,000 messages")[3] == "+0%" and "200,000 messages" not in fitted_on
    ring_row = _row(on_the_ring, "200,000 messages")
    assert ring_row[1] == "3 Cassandra nodes, RF 3, spark://127.0.0.1:7077 (2 executor cores)"
    # Cassandra: 400,000 rows x 2 x 2e-5 (scan) + 4,200 candidates x 1e-3 against the model's 8 + 4.2 CPU-s.
    assert ring_row[4:6] == ["20.2 s / 12.2 s", "-40%"] and ring_row[7] == "+0%"
    # The latest messages table is still the newest run on one node; the ring run is in the history, said so.
    assert "messages-1000000.json" in page.split("## A night on a cluster")[0]
    assert "messages-ring.json" not in page.split("## A night on a cluster")[0]
    history = page.split("## History")[1]
    assert _row(history, "2026-11-30 08:00 UTC")[-1] == f"on {ring_row[1]}"


def test_the_folder_keeps_the_newest_result_of_each_size_and_place_and_the_history_the_others(tmp_path):
    from james_consistency_kit.bench.report_history import retire_superseded

    older, newer = messages_result("2026-12-01T10:00Z", 25.0), messages_result("2026-12-02T10:00Z")
    on_a_ring = {
        **messages_result("2026-11-30T10:00Z"),
        "cluster": {"cassandraNodes": 3, "replicationFactor": 3, "sparkMaster": "spark://h:7077", "executorCores": 2},
    }
    larger = {**messages_result("2026-11-29T10:00Z"), "messages": 1_000_000}
    for name, figures in (("a.json", older), ("b.json", newer), ("c.json", on_a_ring), ("d.json", larger)):
        (tmp_path / name).write_text(json.dumps(figures))

    retired = retire_superseded(tmp_path)

    assert retired == ["a.json"]
    assert sorted(path.name for path in tmp_path.glob("*.json")) == ["b.json", "c.json", "d.json", "history.json"]
    (record,) = json.loads((tmp_path / "history.json").read_text())["history"]
    assert record["date"] == "2026-12-01T10:00Z" and record["bareScanSeconds"] == 25.0 and record["source"] is None
    assert retire_superseded(tmp_path) == []
    page, _ = write_report([tmp_path], tmp_path / "benchmarks.md")
    assert "2026-12-01" in page.read_text(), "the retired run is still in the page's history"
