"""A real run's figures reach StatsD (a real UDP receiver) and OpenTelemetry (the SDK's OTLP/HTTP exporter to a
real HTTP receiver decoding the protobuf), configured by Airflow's own [metrics] environment variables."""

import gzip
import json
import os
import socket
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from james_consistency.jobs.submit import job_log
from james_consistency.runtime.paths import PROJECT_ROOT
from james_consistency_kit.faults import inject
from james_consistency_kit.seed import seed_platform
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)

CLI = PROJECT_ROOT / ".venv" / "bin" / "james-consistency"
KINDS = ("missing", "outdated", "orphan")


@pytest.fixture
def broken_keyspace(cassandra_settings, new_keyspace, tmp_path):
    """A small seeded platform with messages missing from messageIdTable and others with stale flags there."""
    keyspace = new_keyspace("metrics")
    seed_platform(cassandra_settings, keyspace=keyspace, users=2, mailboxes_per_user=2, messages_per_mailbox=5)
    broken = {}
    for kind, fault in (("missing", "projection-missing"), ("outdated", "projection-stale-flags")):
        manifest = inject(
            cassandra_settings,
            keyspace=keyspace,
            kind=fault,
            rate=0.15,
            random_seed=len(broken) + 3,
            manifest_path=str(tmp_path / f"{fault}.json"),
        )
        broken[kind] = manifest["count"]
    assert broken["missing"] > 0 and broken["outdated"] > 0
    return keyspace, broken


@pytest.fixture
def statsd_receiver():
    """A UDP socket on a free loopback port; `lines()` returns every StatsD line received so far."""
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    receiver.settimeout(1.0)

    def lines() -> list[str]:
        received = []
        while True:
            try:
                datagram = receiver.recv(65535)
            except TimeoutError:
                return received
            received += datagram.decode().splitlines()

    yield receiver.getsockname()[1], lines
    receiver.close()


@pytest.fixture
def otlp_receiver():
    """An HTTP server on a free loopback port that takes OTLP/HTTP metric exports and decodes them."""
    requests = []

    class Collector(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            request = ExportMetricsServiceRequest()
            request.ParseFromString(body)
            requests.append((self.path, request))
            answer = ExportMetricsServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], requests
    server.shutdown()
    server.server_close()


def run_cli(tmp_path, *arguments, **metrics_settings):
    """The command line as an operator runs it, with Airflow's [metrics] settings as environment variables."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("AIRFLOW__METRICS__")}
    environment.update({f"AIRFLOW__METRICS__{name.upper()}": str(value) for name, value in metrics_settings.items()})
    report = tmp_path / "report.json"
    result = subprocess.run(
        [str(CLI), *arguments, "--report", str(report)],
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(report.read_text()), result


def parse_statsd(lines: list[str]) -> dict[str, tuple[float, str]]:
    """name -> (value, type) of `name:value|type` lines."""
    metrics = {}
    for line in lines:
        name, rest = line.split(":", 1)
        value, kind = rest.split("|")[:2]
        assert name not in metrics, f"{name} sent twice"
        metrics[name] = (float(value), kind)
    return metrics


def test_repair_sends_its_figures_to_statsd(cassandra_settings, broken_keyspace, statsd_receiver, tmp_path):
    keyspace, broken = broken_keyspace
    port, received_lines = statsd_receiver

    report, _ = run_cli(
        tmp_path, "repair", "messages", "--keyspace", keyspace, "--port", str(cassandra_settings.port),
        "--recheck-delay", "0", "--allow-destructive",  # a stale-flags rewrite counts as destructive
        statsd_on="True", statsd_host="127.0.0.1", statsd_port=port, statsd_prefix="ops",
    )  # fmt: skip

    received = parse_statsd(received_lines())
    base = f"ops.james_consistency.{keyspace}.messages.repair"
    assert report["status"] == "COMPLETED"
    assert report["inconsistencies"] == {**broken, "orphan": 0}
    expected = {
        f"{base}.runs.completed": (1, "c"),
        **{f"{base}.found.{kind}": (report["inconsistencies"][kind], "g") for kind in KINDS},
        f"{base}.fixed.missing": (report["addedMessageIdEntries"], "g"),
        f"{base}.fixed.outdated": (report["updatedMessageIdEntries"], "g"),
        f"{base}.fixed.orphan": (report["removedMessageIdEntries"], "g"),
        **{f"{base}.remaining.{kind}": (0, "g") for kind in KINDS},
        f"{base}.rows_scanned.truth": (report["processedImapUidEntries"], "g"),
        f"{base}.rows_scanned.projection": (report["processedMessageIdEntries"], "g"),
        f"{base}.gate.messages_truth_health": (1, "g"),
        f"{base}.gate.plan_safety": (1, "g"),
        f"{base}.duration": (round(report["durationSeconds"] * 1000), "ms"),
        # The scan's load on the ring: the rate it read at and how long it yielded to James.
        f"{base}.scan_rows_per_second": (report["load"]["rowsPerSecond"], "g"),
        f"{base}.scan_held_back": (round(report["load"]["heldBackSeconds"] * 1000), "ms"),
    }
    assert received == expected
    # The figures are the repair's: everything broken was fixed, from 20 messages scanned.
    assert received[f"{base}.fixed.missing"][0] == broken["missing"]
    assert received[f"{base}.fixed.outdated"][0] == broken["outdated"]
    assert received[f"{base}.rows_scanned.truth"][0] == 20


def test_check_sends_its_figures_to_opentelemetry_and_a_metrics_failure_does_not_fail_it(
    cassandra_settings, broken_keyspace, otlp_receiver, tmp_path
):
    keyspace, broken = broken_keyspace
    port, requests = otlp_receiver

    report, result = run_cli(
        tmp_path, "check", "messages", "--keyspace", keyspace, "--port", str(cassandra_settings.port),
        otel_on="True", otel_host="127.0.0.1", otel_port=port,
        statsd_on="True", statsd_port="not-a-port",  # a broken StatsD setting: logged, the job goes on
    )  # fmt: skip

    # The job's own log, beside its report (the command line shows the run's summary).
    assert "metrics not sent to statsd: ValueError" in job_log(tmp_path / "report.json").read_text()
    [(path, request)] = requests
    assert path == "/v1/metrics"
    points = {}
    for resource in request.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                for point in getattr(metric, metric.WhichOneof("data")).data_points:
                    attributes = {item.key: item.value.string_value for item in point.attributes}
                    assert {attributes.pop(key) for key in ("keyspace", "target", "mode")} == {
                        keyspace,
                        "messages",
                        "check",
                    }
                    points[(metric.name, tuple(sorted(attributes.items())))] = point.as_int or point.as_double
    expected = {
        ("airflow.james_consistency.runs", (("status", "completed"),)): 1,
        **{("airflow.james_consistency.found", (("kind", kind),)): report["inconsistencies"][kind] for kind in KINDS},
        ("airflow.james_consistency.rows_scanned", (("side", "truth"),)): report["processedImapUidEntries"],
        ("airflow.james_consistency.rows_scanned", (("side", "projection"),)): report["processedMessageIdEntries"],
        ("airflow.james_consistency.gate", (("gate", "messages_truth_health"),)): 1,
        ("airflow.james_consistency.duration", ()): round(report["durationSeconds"] * 1000),
        ("airflow.james_consistency.scan_rows_per_second", ()): report["load"]["rowsPerSecond"],
        ("airflow.james_consistency.scan_held_back", ()): round(report["load"]["heldBackSeconds"] * 1000),
    }
    assert points == expected
    assert points[("airflow.james_consistency.found", (("kind", "missing"),))] == broken["missing"]
