"""A job's figures sent where Airflow sends its own metrics: StatsD and OpenTelemetry, configured by Airflow's
`[metrics]` settings as environment variables (AIRFLOW__METRICS__STATSD_ON, ..._OTEL_ON, ...), inside Airflow or
outside it (the command line).

StatsD names carry everything in the name (no tags):
    <statsd_prefix>.james_consistency.<keyspace>.<target>.<mode>.<measure>[.<label>]
e.g. airflow.james_consistency.james.messages.repair.found.missing. OpenTelemetry names are
<otel_prefix>.james_consistency.<measure>, with keyspace, target, mode and the label as attributes.

Sending metrics never fails a job: a failure is logged and the job goes on.
"""

import logging
import os
from dataclasses import dataclass, field

from james_consistency.report.run_report import Mode, RunReport, Status

log = logging.getLogger(__name__)

ENV_PREFIX = "AIRFLOW__METRICS__"
# The [metrics] settings the jobs read (passed from Airflow's configuration to the job's environment).
SETTINGS = (
    "statsd_on",
    "statsd_host",
    "statsd_port",
    "statsd_prefix",
    "statsd_ipv6",
    "otel_on",
    "otel_host",
    "otel_port",
    "otel_prefix",
    "otel_ssl_active",
)
# The standard OpenTelemetry variables Airflow prefers to otel_host/otel_port when they are set.
OTEL_ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
FIXED_ACTIONS = ("added", "updated", "removed")
GAUGE, TIMING, COUNT = "gauge", "timing", "count"


@dataclass(frozen=True)
class Figure:
    """One measure of a run. `labels` narrow it (kind, gate, side): appended to the StatsD name in order, and
    OpenTelemetry attributes."""

    measure: str
    value: float
    type: str = GAUGE
    labels: dict[str, str] = field(default_factory=dict)


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() in ("true", "t", "1", "yes", "y", "on")


def report_figures(report: RunReport) -> list[Figure]:
    """The figures of a finished report: what a dashboard plots for each run."""
    figures = [Figure("runs", 1, COUNT, {"status": str(report.status).lower()})]
    found = report.inconsistencies
    figures += [Figure("found", count, labels={"kind": kind}) for kind, count in found.items()]
    if report.mailboxTable is not None:
        figures += mailbox_repair_figures(report)
    elif report.mode == Mode.REPAIR and report.status != Status.NOT_APPLICABLE:
        fixed = dict.fromkeys(found, 0)
        settled = dict(fixed)  # fixed, or already consistent on re-check
        for outcome in report.outcomes or []:
            if outcome.action in FIXED_ACTIONS:
                fixed[outcome.kind] = fixed.get(outcome.kind, 0) + outcome.count
            if outcome.action in (*FIXED_ACTIONS, "already_consistent"):
                settled[outcome.kind] = settled.get(outcome.kind, 0) + outcome.count
        figures += [Figure("fixed", count, labels={"kind": kind}) for kind, count in fixed.items()]
        # Still inconsistent after the run: failed fixes, and whatever a failed gate stopped before any fix.
        figures += [
            Figure("remaining", max(count - settled.get(kind, 0), 0), labels={"kind": kind})
            for kind, count in found.items()
        ]
    if report.mode == Mode.VERIFY and report.remainingInconsistencies is not None:
        figures.append(Figure("remaining", report.remainingInconsistencies))
    if report.ranges is not None:  # resumable runs: token ranges done out of the total
        figures += [
            Figure("ranges", report.ranges.done, labels={"state": "done"}),
            Figure("ranges", report.ranges.total, labels={"state": "total"}),
        ]
    if report.load is not None:  # the scan's load on the ring: the rate it read at, how long it yielded to James
        if report.load.rowsPerSecond is not None:
            figures.append(Figure("scan_rows_per_second", report.load.rowsPerSecond))
        figures.append(Figure("scan_held_back", round(report.load.heldBackSeconds * 1000), TIMING))
    for side, rows in (report.rowsScanned or {}).items():
        figures.append(Figure("rows_scanned", rows, labels={"side": side}))
    for gate in report.gates:
        figures.append(Figure("gate", 1 if gate.success else 0, labels={"gate": gate.name}))
    if report.durationSeconds is not None:
        figures.append(Figure("duration", round(report.durationSeconds * 1000), TIMING))
    return figures


def mailbox_repair_figures(report: RunReport) -> list[Figure]:
    """The offline mailbox repair works in passes and counts its fixes as a whole; what is left, per kind."""
    if report.mode != Mode.REPAIR or report.remaining is None:
        return []
    remaining = [Figure("remaining", count, labels={"kind": kind}) for kind, count in report.remaining.items()]
    return [Figure("fixed", report.fixedCount or 0), *remaining]


def emit(report: RunReport, environ=os.environ) -> None:
    """Send the report's figures to StatsD and/or OpenTelemetry as the environment's [metrics] settings say."""
    settings = {name: environ.get(ENV_PREFIX + name.upper()) for name in SETTINGS}
    if not (_flag(settings["statsd_on"]) or _flag(settings["otel_on"])):
        return
    try:
        figures = report_figures(report)
    except Exception as error:  # noqa: BLE001 - metrics never fail a job
        log.warning("metrics not sent: the report's figures could not be read: %s", error)
        return
    scope = {"keyspace": report.keyspace, "target": report.target, "mode": str(report.mode)}
    for enabled, sender in ((settings["statsd_on"], send_statsd), (settings["otel_on"], send_otel)):
        if not _flag(enabled):
            continue
        try:
            sender(figures, scope, settings, environ)
        except Exception as error:  # noqa: BLE001 - metrics never fail a job
            log.warning("metrics not sent to %s: %s: %s", sender.__name__[5:], type(error).__name__, error)


def statsd_name(prefix: str, scope: dict[str, str], figure: Figure) -> str:
    parts = [prefix, "james_consistency", scope["keyspace"], scope["target"], scope["mode"], figure.measure]
    return ".".join(_statsd_safe(part) for part in [*parts, *figure.labels.values()] if part)


def _statsd_safe(part: str) -> str:
    """A name part without the characters the StatsD line protocol and Graphite give a meaning to."""
    return "".join(c if c.isalnum() or c in "_-" else "_" for c in part)


def send_statsd(figures: list[Figure], scope: dict[str, str], settings: dict, environ=os.environ) -> None:
    from statsd import StatsClient

    host, port = settings["statsd_host"] or "localhost", int(settings["statsd_port"] or 8125)
    client = StatsClient(host=host, port=port, ipv6=_flag(settings["statsd_ipv6"]))
    prefix = settings["statsd_prefix"] if settings["statsd_prefix"] is not None else "airflow"
    try:
        for figure in figures:
            name = statsd_name(prefix, scope, figure)
            if figure.type == COUNT:
                client.incr(name, int(figure.value))
            elif figure.type == TIMING:
                client.timing(name, figure.value)
            else:
                client.gauge(name, figure.value)
    finally:
        client.close()
    log.info("metrics: %d figures sent to StatsD %s:%s", len(figures), host, port)


def otel_exporter(settings: dict, environ=os.environ):
    """The OTLP exporter Airflow would use: the standard OTEL_EXPORTER_OTLP_* variables when set (gRPC if their
    protocol says so), otherwise http/protobuf to otel_host:otel_port."""
    if any(environ.get(name) for name in OTEL_ENDPOINT_VARIABLES):
        protocol = environ.get("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL") or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        if protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
        else:
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        return OTLPMetricExporter()
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

    scheme = "https" if _flag(settings["otel_ssl_active"]) else "http"
    host, port = settings["otel_host"] or "localhost", settings["otel_port"] or "8889"
    return OTLPMetricExporter(endpoint=f"{scheme}://{host}:{port}/v1/metrics", timeout=10)


def send_otel(figures: list[Figure], scope: dict[str, str], settings: dict, environ=os.environ) -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricExportResult
    from opentelemetry.sdk.resources import Resource

    # Collected once and exported in one request: a job's figures are known only at its end.
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader], resource=Resource.create({"service.name": "james-consistency"}))
    meter = provider.get_meter("james_consistency")
    prefix = settings["otel_prefix"] if settings["otel_prefix"] is not None else "airflow"
    instruments = {}
    for figure in figures:
        name = ".".join(part for part in (prefix, "james_consistency", figure.measure) if part)
        if name not in instruments:
            if figure.type == COUNT:
                instruments[name] = meter.create_counter(name)
            else:
                instruments[name] = meter.create_gauge(name, unit="ms" if figure.type == TIMING else "1")
        instrument = instruments[name]
        attributes = {**scope, **figure.labels}
        if figure.type == COUNT:
            instrument.add(figure.value, attributes)
        else:
            instrument.set(figure.value, attributes)
    exporter = otel_exporter(settings, environ)
    try:
        result = exporter.export(reader.get_metrics_data(), timeout_millis=10_000)
    finally:
        exporter.shutdown()
        provider.shutdown()
    if result != MetricExportResult.SUCCESS:
        raise RuntimeError(f"the OpenTelemetry collector did not take the export ({result.name})")
    log.info("metrics: %d figures sent to OpenTelemetry", len(figures))
