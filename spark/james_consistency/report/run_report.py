"""The run report: the contract every reader relies on (the DAGs, the alerts, the metrics, the history, the command
line, the mailbox approval, an operator's own dashboards). Its typed model `RunReport`, versioned by `schemaVersion`,
is published as a JSON Schema (docs/run-report.schema.json, `python -m james_consistency.report.run_report`). Readers go
through it: `read_report(path)` gives a RunReport whatever its version (a report from before the schema was published
has `schemaVersion` 0 and reads the same); `summary_line` tells a run in one line.

The statuses are James's COMPLETED and PARTIAL, and ours: FAILED (a gate or the infrastructure stopped the run),
NOT_APPLICABLE (no such table in this James generation), WINDOW_ENDED (stopped at a range boundary; the next run goes
on). A light module: the Airflow side imports it when its DAG files are parsed (no Spark, no engine).
"""

import json
from enum import StrEnum
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

# The version of the report's schema: raised when a field changes meaning or goes away (adding one does not).
SCHEMA_VERSION = 1


class Status(StrEnum):
    COMPLETED = "COMPLETED"
    PARTIAL = "PARTIAL"
    FAILED = "FAILED"
    NOT_APPLICABLE = "NOT_APPLICABLE"
    # The run stopped at its window's end, at a range boundary: nothing half-done, the next run goes on.
    WINDOW_ENDED = "WINDOW_ENDED"


COMPLETED, PARTIAL, FAILED = Status.COMPLETED, Status.PARTIAL, Status.FAILED
NOT_APPLICABLE, WINDOW_ENDED = Status.NOT_APPLICABLE, Status.WINDOW_ENDED
# What a run that ended well leaves: nothing for an operator to do.
ENDED_WELL = (COMPLETED, NOT_APPLICABLE, WINDOW_ENDED)


# The undo's reports: their target, and what taking a before-image back gave (the keys of undoPlan and undone).
UNDO_TARGET = "undo"
RESTORED = "restored"  # the row held what the repair wrote: it holds what it held before again
NEWER_KEPT = "newer-kept"  # the row changed since the repair: the repair's write taken back, the later writes kept
ALREADY_AS_BEFORE = "already-as-before"  # nothing to take back (an undo applied twice, or a later run did it)
NOT_REVERSED = "not-reversed"  # left as it is, and why (a counter recomputed since, a uid handed out)
UNDO_FAILED = "failed"
UNDO_ACTIONS = (RESTORED, NEWER_KEPT, ALREADY_AS_BEFORE, NOT_REVERSED, UNDO_FAILED)


class Mode(StrEnum):
    CHECK = "check"
    REPAIR = "repair"
    VERIFY = "verify"


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GateVerdict(_Part):
    """A Great Expectations gate's verdict on the run."""

    name: str
    success: bool
    evaluated: int = 0
    failed_expectations: list[dict[str, Any] | str] = Field(default_factory=list)
    results_dir: str = ""
    data_docs: str = ""
    data_docs_page: str = Field("", description="this validation's own Data Docs page; data_docs is the site's index")
    sample_rows: list[dict[str, Any]] = Field(default_factory=list)
    blocking: bool = Field(True, description="False: a gate whose failure is an answer (there is work), not a fault")
    judged_by_run: str = Field(
        "",
        description="The run that judged these figures when this one reused its scan (a repair or verify after the "
        "check): its verdict, repeated; empty when this run judged them",
    )


class Plan(_Part):
    """What a projection repair would add, rewrite and delete, and how destructive that is (plan-safety gate)."""

    toAdd: int
    toRewrite: int
    toDelete: int
    destructiveRows: int
    destructiveShare: float
    maxDestructiveShare: float
    allowDestructive: bool


class OutcomeCount(_Part):
    """How many candidates of one kind ended with one action (added, updated, removed, already_consistent, failed)."""

    kind: str
    action: str
    count: int


class ReusedScan(_Part):
    runId: str
    scannedAt: str


class RangeProgress(_Part):
    """A token-range scan's progress: ranges done of the total, resumed or not, per table."""

    done: int
    total: int
    left: int
    scannedByThisRun: int
    resumed: bool
    cycle: str | None = None
    tables: dict[str, Any] = Field(default_factory=dict)


class LoadPoint(_Part):
    """One batch of a scan (all of it, for a scan without token ranges): when it started, the rate it read at, the
    rate in force (None: unlimited), and the latency of its own page requests and of the canary meanwhile."""

    at: str
    rowsPerSecond: float = Field(description="rows the batch read over its seconds")
    limitRowsPerSecond: float | None = Field(None, description="the rate in force for the batch; None: unlimited")
    rows: int
    seconds: float
    latencyMs: float | None = Field(None, description="the mean latency of the scan's own page requests")
    canaryLatencyMs: float | None = Field(
        None, description="the p99 of the canary read of James's keyspace during the batch (the adaptive mode)"
    )
    jamesRequestsPerSecond: float | None = Field(
        None,
        description="reads and writes a second of James's keyspace by others than the night during the batch, every "
        "node (the adaptive mode; None: not counted)",
    )


class Load(_Part):
    """What a run's scan asked of the ring: its limit, whether it adapted (and to which canary target), the rate it
    read at over time, and how long it was held back below its limit (without a limit: below full speed)."""

    limitRowsPerSecond: float = Field(description="the configured limit across the cluster; 0: none")
    adaptive: bool
    latencyTargetMs: float | None = Field(None, description="the canary's target in force; None: not adaptive")
    latencyTargetDerived: bool = Field(False, description="the target was derived from the canary's baseline")
    canaryBaselineMs: float | None = Field(None, description="the canary's p99 before the scan")
    jamesRequestsPerSecondBefore: float | None = Field(
        None, description="reads and writes a second of James's keyspace by others before the scan (None: not counted)"
    )
    floorRowsPerSecond: float
    rowsRead: int
    scanSeconds: float
    rowsPerSecond: float | None = Field(None, description="rows read over the seconds spent reading them")
    heldBackSeconds: float = Field(description="seconds the adaptive mode read below the limit")
    rate: list[LoadPoint] = Field(default_factory=list, description="the rate over time, one point per batch")


class BeforeImages(_Part):
    """Where a writing run's before-images are (parquet in its work folder), how many, per table and action: what
    `james-consistency undo --run-dir` takes back."""

    path: str
    records: int
    counts: dict[str, dict[str, int]]


class MailboxPass(_Part):
    """One pass of the offline mailbox repair: what it faced, the actions it took, how many it fixed."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    number: int = Field(alias="pass")
    inconsistencies: dict[str, int]
    actions: dict[str, int]
    fixed: int


class QuotaComponentResult(_Part):
    quotaComponent: str
    processedIdentifierCount: int
    failedIdentifiers: list[str]


class RunReport(BaseModel):
    """The report of one check, repair or verify, of a projection or of the offline mailbox repair. Field names are
    the JSON's; James's own report fields keep James's names (processedImapUidEntries, addedMessageIdEntries,
    conflictingEntries, ...), so an admin finds what James's tasks print."""

    model_config = ConfigDict(extra="forbid", use_enum_values=True)

    schemaVersion: int = Field(0, description="the report schema's version; 0: written before it was published")
    version: str | None = Field(None, description="the james-consistency version that wrote the report")
    type: str
    target: str
    mode: Mode
    dryRun: bool
    keyspace: str
    generation: str | None = None
    runId: str
    workDir: str | None = None
    startedAt: str | None = None
    finishedAt: str | None = None
    durationSeconds: float | None = None
    status: Status
    result: Status
    reason: str | None = Field(None, description="why a run was not applicable")
    error: str | None = Field(None, description="why an infrastructure failure stopped the run")
    failedStage: str | None = None
    inconsistencies: dict[str, int] = Field(default_factory=dict, description="what the scan found, per kind")
    rowsScanned: dict[str, int] | None = Field(
        None, description="rows read per side (truth, projection; mailbox, path)"
    )
    truthRowsPerSecond: int | None = None
    fixedInconsistencies: list[Any] = Field(default_factory=list)
    errors: list[Any] = Field(default_factory=list)
    failedCount: int | None = None
    gates: list[GateVerdict] = Field(default_factory=list)
    runningOptions: dict[str, Any] = Field(default_factory=dict)
    windowEnded: str | None = None
    ranges: RangeProgress | None = None
    load: Load | None = Field(None, description="a scanning run's rate, limit and latency over time")
    decidedByFinishedRanges: bool | None = None
    reusedScan: ReusedScan | None = None
    liveReads: str | None = Field(
        None,
        description="how the re-check read the live rows: in the executors (by partition, direct join) or one by one",
    )
    beforeImages: BeforeImages | None = None
    remainingInconsistencies: int | None = Field(None, description="what is left after a repair or found by a verify")

    # A projection repair.
    truthTable: str | None = None
    projectionTable: str | None = None
    truthHealth: dict[str, Any] | None = None
    unreadableTruth: int | None = None
    expectedProjectionRows: int | None = None
    plan: Plan | None = None
    outcomes: list[OutcomeCount] | None = None
    alreadyConsistentOnRecheck: int | None = None
    remainingSample: list[dict[str, Any]] | None = None
    verifiedCandidates: int | None = None
    verifiedSample: int | None = None
    removeUnusedFlags: bool | None = None
    concurrencyNote: str | None = None
    processedMailboxes: int | None = None
    failedMailboxes: list[str] | None = None
    recomputeSingleQuotaComponentResults: list[QuotaComponentResult] | None = None
    unfixableAttachmentReferences: int | None = None
    # James's names for the rows each projection task processed, added, updated and removed (ProjectionSpec's
    # ReportNames; the test of the specs checks that every one of them is a field here).
    processedImapUidEntries: int | None = None
    processedMessageIdEntries: int | None = None
    addedMessageIdEntries: int | None = None
    updatedMessageIdEntries: int | None = None
    removedMessageIdEntries: int | None = None
    processedMailboxAclEntries: int | None = None
    processedUserMailboxACLEntries: int | None = None
    addedUserMailboxACLEntries: int | None = None
    updatedUserMailboxACLEntries: int | None = None
    removedUserMailboxACLEntries: int | None = None
    processedAclv2Entries: int | None = None
    addedAclv2Entries: int | None = None
    updatedAclv2Entries: int | None = None
    removedAclv2Entries: int | None = None
    processedMessageDeletedEntries: int | None = None
    processedFirstUnseenEntries: int | None = None
    processedMailboxRecentsEntries: int | None = None
    addedEntries: int | None = None
    updatedEntries: int | None = None
    removedEntries: int | None = None
    processedMailboxEntries: int | None = Field(
        None, description="applicableFlag's mailboxes; the mailbox table's rows"
    )
    addedApplicableFlagEntries: int | None = None
    updatedApplicableFlagEntries: int | None = None
    removedApplicableFlagEntries: int | None = None
    processedTruthRows: int | None = None
    processedCounterEntries: int | None = None
    addedCounterEntries: int | None = None
    updatedCounterEntries: int | None = None
    removedCounterEntries: int | None = None
    processedMessageAttachmentEntries: int | None = None
    processedAttachmentV2Entries: int | None = None
    addedAttachmentMessageIds: int | None = None
    updatedAttachmentMessageIds: int | None = None
    removedAttachmentMessageIds: int | None = None
    processedAttachmentMessageIdEntries: int | None = None
    addedAttachmentMessageIdEntries: int | None = None
    updatedAttachmentMessageIdEntries: int | None = None
    removedAttachmentMessageIdEntries: int | None = None

    # The offline mailbox repair (James's SolveMailboxInconsistencies fields, and what an approver needs).
    mailboxTable: str | None = None
    mailboxPathTable: str | None = None
    processedMailboxPathEntries: int | None = None
    conflictingEntries: list[dict[str, Any]] | None = None
    health: dict[str, Any] | None = None
    orphanPaths: list[dict[str, Any]] | None = None
    conflicts: list[dict[str, Any]] | None = None
    sample: list[dict[str, Any]] | None = None
    inconsistencyCount: int | None = None
    nothingToDo: bool | None = None
    plannedActions: dict[str, int] | None = None
    passes: list[MailboxPass] | None = None
    fixedCount: int | None = None
    errorDetails: list[dict[str, Any]] | None = None
    fixes: list[dict[str, Any]] | None = None
    remaining: dict[str, int] | None = None
    remainingFixable: int | None = None
    followUp: list[str] | None = None

    # An undo (james_consistency.undo): which run it takes back, what it would do (a dry run) or did, per table and
    # action, and the totals.
    undoneRunId: str | None = None
    undoneTarget: str | None = None
    undoneRunDir: str | None = None
    images: dict[str, dict[str, int]] | None = Field(None, description="the undone run's before-images per table")
    undoPlan: dict[str, dict[str, int]] | None = None
    undone: dict[str, dict[str, int]] | None = None
    restored: int | None = None
    newerKept: int | None = Field(None, description="rows changed since the repair: its write taken back, theirs kept")
    alreadyAsBefore: int | None = None
    notReversed: int | None = None
    notReversedSample: list[dict[str, Any]] | None = None

    @property
    def found(self) -> int:
        """How many inconsistencies the scan found, all kinds together."""
        return sum(self.inconsistencies.values())

    @property
    def ended_well(self) -> bool:
        return self.status in ENDED_WELL

    def fixed_counts(self) -> dict[str, int]:
        """James's added / updated / removed counts of a projection repair, under their names."""
        return {
            name: value
            for name, value in self.as_json().items()
            if name.startswith(("added", "updated", "removed")) and isinstance(value, int)
        }

    def as_json(self) -> dict:
        """The report as its JSON file holds it (fields never set left out)."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


class ReportDraft(dict):
    """A report while its run writes it: a dict whose every key must be a field of RunReport. A write of any other
    key is refused where it happens, naming the key, rather than when the finished report is checked against the
    model (engine.reports.finish)."""

    def __init__(self, *args, **kwargs):
        super().__init__()
        self.update(*args, **kwargs)

    def __setitem__(self, key, value) -> None:
        super().__setitem__(_field(key), value)

    def setdefault(self, key, default=None):
        return super().setdefault(_field(key), default)

    def update(self, *args, **kwargs) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value


def _field(key: str) -> str:
    if key not in RunReport.model_fields:
        raise KeyError(f"{key!r} is not a field of the run report (james_consistency.report.run_report.RunReport)")
    return key


def package_version() -> str | None:
    try:
        return metadata.version("james-consistency")
    except metadata.PackageNotFoundError:
        return None


def read_report(path: str | Path) -> RunReport:
    """A report file, any version; ValueError naming the file when it is no run report."""
    return parse_report(json.loads(Path(path).read_text()), source=str(path))


def parse_report(document: dict, source: str = "report") -> RunReport:
    from pydantic import ValidationError

    try:
        return RunReport.model_validate(document)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in item['loc']) or '(top)'}: {item['msg']}" for item in error.errors()[:5]
        )
        raise ValueError(f"{source} is not a james-consistency run report: {problems}") from None


def json_schema() -> dict:
    """The published JSON Schema of the run report (docs/run-report.schema.json)."""
    schema = RunReport.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://james-consistency.invalid/run-report.schema.json"
    return schema


def summary_line(report: RunReport) -> str:
    """The run in one line: what it found, what it did (or would do), what is left."""
    if report.status == Status.NOT_APPLICABLE:  # nothing was read: only why
        return f"{report.target} {report.mode} on {report.keyspace}: {report.status}; {report.reason}"
    found = ", ".join(f"{kind} {count}" for kind, count in report.inconsistencies.items())
    line = f"{report.target} {report.mode} on {report.keyspace}: {report.status}; found {found}"
    if report.mode == Mode.REPAIR and report.passes is not None:
        line += f"; fixed {report.fixedCount or 0} in {len(report.passes)} passes"
        line += f"; conflicts {len(report.conflictingEntries or [])}; errors {report.failedCount or 0}"
    elif report.mode == Mode.REPAIR:
        line += "; " + ", ".join(f"{name} {count}" for name, count in report.fixed_counts().items())
        line += f"; already consistent on re-check {report.alreadyConsistentOnRecheck or 0}"
        line += f"; errors {report.failedCount or 0}"
    if report.mode == Mode.CHECK and report.plannedActions is not None:
        line += f"; planned {report.plannedActions}"
    if report.mode == Mode.VERIFY and report.remainingFixable is not None:
        line += f"; remaining fixable {report.remainingFixable}"
    elif report.mode == Mode.VERIFY:
        line += f"; remaining {report.remainingInconsistencies or 0}"
    if report.error:
        line += f"; {report.error}"
    return line + f" ({report.durationSeconds or 0}s)"


if __name__ == "__main__":  # the published schema, as docs/run-report.schema.json holds it
    print(json.dumps(json_schema(), indent=2, sort_keys=True))
