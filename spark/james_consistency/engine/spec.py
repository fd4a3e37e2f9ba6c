"""What the engine runs: a `Repair`, whose parts the five stages call. A projection repair is declared once per
projection as a `ProjectionSpec` of a few small parts (engine.projection_repair makes it a Repair); the offline
mailbox repair, which has no truth, gives its own parts (james_consistency.mailboxes.repair).

Every part checks itself when it is built, and so does the spec as a whole: a spec that names a column its projection
does not have, or half of a pair (an unreadable-truth finder without the column it scopes), fails at import time with
the projection's name, not at 3 a.m. in an executor.

    ProjectionSpec
      truth        Truth             where the source of truth is read (one table, or a reader over several)
      projection   Projection        the projection table: key, columns, how rows compare, what is destructive
      derive       truth -> expected projection rows (a DataFrame with the projection's columns)
      recheck      (session, context, key, candidate, current) -> steps (engine.live) whose answer is the expected
                                     row now, read live, or None (current: the projection row the writer has just
                                     read live at the key)
      report_names ReportNames       James's report field names for this task
      health       TruthHealth       the truth's health figures, judged by a Great Expectations suite
      hints        CandidateHints    optional: scanned values that help the re-check find the truth
      sample       Sample            optional: a candidate's identity in the report's samples
      unreadable   UnreadableTruth   optional: truth units that cannot be read, and the column scoping them
      writing      Writing           how candidates are read and written in the executors (optionally read
                                     first by the connector's direct join)
      finish_report                  optional: adds the projection's own report fields at the end
      mirrored_truth                 the expected row is the truth row itself: a ranged scan keeps digests, not rows
"""

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from james_consistency.engine.live import Steps

DESTRUCTIVE_BY_DEFAULT = ("outdated", "orphan")
FIX_KINDS = ("missing", "outdated", "orphan")


class SpecError(ValueError):
    """A projection spec contradicts itself (a programming error, found when the spec is built)."""


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise SpecError(message)


@dataclass(frozen=True)
class ReportNames:
    """James's report field names for this projection's task, so admins find what they know."""

    processed_truth: str
    processed_projection: str
    added: str
    updated: str
    removed: str


@dataclass(frozen=True)
class Truth:
    """The source of truth: `table`'s `columns` by a connector scan, or, for a truth spread over several tables,
    `read(read_table)` building it with `read_table(table, columns)`; every table it reads beyond `table` is named in
    `extra_tables` (checked before the scan, so a missing one is a clear error)."""

    table: str
    columns: tuple[str, ...] = ()
    read: Callable[[Callable[[str, tuple[str, ...]], DataFrame]], DataFrame] | None = None
    extra_tables: tuple[str, ...] = ()
    # Every expected projection row derives from the rows of ONE partition of `table` alone (a message row, a
    # mailbox's ACL events): a part of the ring then decides the rows it derives, and a run whose window ended
    # part-way fixes them. Aggregates over many partitions (counters, quotas, keywords) wait for the whole ring.
    partition_local: bool = False

    def __post_init__(self):
        _require(bool(self.table), "a truth needs its table")
        _require(
            not (self.partition_local and self.extra_tables), f"truth {self.table}: partition-local reads one table"
        )
        _require(bool(self.columns) or self.read is not None, f"truth {self.table}: name its columns or a reader")
        _require(
            not self.extra_tables or self.read is not None,
            f"truth {self.table}: extra tables {self.extra_tables} are read only by a reader",
        )

    @property
    def tables(self) -> tuple[str, ...]:
        return (self.table, *self.extra_tables)

    def scan(self, read_table: Callable[[str, tuple[str, ...]], DataFrame]) -> DataFrame:
        return self.read(read_table) if self.read else read_table(self.table, self.columns)


@dataclass(frozen=True)
class Projection:
    """The projection table. `view` keeps the part of it this repair owns (e.g. MAILBOX quota rows, not SIEVE ones);
    `equivalent` is a condition over the diff's expected_/actual_ columns for rows equivalent without being equal
    (an absent counter row is a zero; an add-only index holding more than expected); `destructive_kinds` are the
    kinds of fixes that can take something away from users (judged by the plan-safety gate)."""

    table: str
    key: tuple[str, ...]
    columns: tuple[str, ...]
    cql_types: dict[str, str]
    view: Callable[[DataFrame], DataFrame] | None = None
    equivalent: Callable[[], Column] | None = None
    destructive_kinds: tuple[str, ...] = DESTRUCTIVE_BY_DEFAULT

    def __post_init__(self):
        _require(bool(self.key), f"projection {self.table}: no key")
        missing = [column for column in self.key if column not in self.columns]
        _require(not missing, f"projection {self.table}: key columns {missing} are not among its columns")
        untyped = [column for column in self.key if column not in self.cql_types]
        _require(not untyped, f"projection {self.table}: key columns {untyped} have no CQL type")
        unknown = [kind for kind in self.destructive_kinds if kind not in FIX_KINDS]
        _require(not unknown, f"projection {self.table}: unknown fix kinds {unknown}")

    @property
    def value_columns(self) -> tuple[str, ...]:
        return tuple(column for column in self.columns if column not in self.key)


@dataclass(frozen=True)
class TruthHealth:
    """The truth's health, measured during the scan: named aggregate columns judged by the GX suite `suite`, and the
    filter that finds the rows behind a failure (a second scan, only when the gate failed)."""

    suite: str
    metrics: Callable[[], list[Column]] = lambda: []
    problem: Callable[[], Column] = lambda: F.lit(False)
    # The truth columns the metrics read: what a scan that keeps only digests of the truth keeps beside them.
    columns: tuple[str, ...] = ()

    def __post_init__(self):
        _require(bool(self.suite), "truth health needs its expectation suite")


@dataclass(frozen=True)
class CandidateHints:
    """Scanned columns that help the re-check find the truth (e.g. messageId): every value seen at a candidate's key
    reaches the re-check as the array `<name>_seen`. A projection that does not carry them itself (messageDeleted
    has no messageId) gives `locate(truth)`: (key..., hint...) for EVERY truth row, joined to the candidates."""

    columns: tuple[str, ...]
    locate: Callable[[DataFrame], DataFrame] | None = None

    def __post_init__(self):
        _require(bool(self.columns), "candidate hints need at least one column")


@dataclass(frozen=True)
class Sample:
    """A candidate's identity in the report's samples, under James's names (Cassandra lower-cases column names:
    mailboxid -> mailboxId)."""

    columns: tuple[str, ...] = ()
    names: dict[str, str] = field(default_factory=dict)

    def __post_init__(self):
        unnamed = [name for name in self.names if name not in self.columns]
        _require(not unnamed, f"sample names {unnamed} rename columns the sample does not hold")


@dataclass(frozen=True)
class UnreadableTruth:
    """A truth that can be unreadable (ACL JSON): `find(truth)` gives (mailbox, problem) per unit that cannot be
    read; the projection rows whose `scope_column` names such a unit are left alone and reported."""

    find: Callable[[DataFrame], DataFrame]
    scope_column: str

    def __post_init__(self):
        _require(bool(self.scope_column), "an unreadable-truth finder needs the projection column it scopes")


@dataclass(frozen=True)
class Writing:
    """How candidates are read and written in the executors: `writer(session, context, spec)` gives an object with
    read/consistent/write/remove, read/write/remove as steps (engine.live) (None: engine.apply.ProjectionWriter, plain
    rows). Candidates sharing
    `group_columns` are re-checked one after the other in one task (e.g. the rows of one quota root)."""

    writer: Callable | None = None
    group_columns: tuple[str, ...] = ()
    # Optional: the truth's live reads by direct join (engine.joined), for the plain writer. Given the candidates
    # with LIVE_PROJECTION and the run's LiveTables, returns them with LIVE_TRUTH, from which `recheck` then takes
    # the truth instead of querying it (when `context.joined_reads_from` is set).
    joined_truth: Callable | None = None

    def __post_init__(self):
        _require(
            self.joined_truth is None or (self.writer is None and not self.group_columns),
            "joined truth reads serve the plain writer, one candidate at a time",
        )


@dataclass(frozen=True)
class ProjectionSpec:
    """A projection derived row by row from a source of truth (see the module docstring for the parts).

    The engine full-outer-joins `derive(truth)` with the scanned projection on its key and compares every other
    column; `recheck` re-reads the truth of ONE candidate key from live Cassandra (in an executor).
    """

    name: str
    truth: Truth
    projection: Projection
    derive: Callable[[DataFrame], DataFrame]
    recheck: Callable[..., Steps]
    report_names: ReportNames
    health: TruthHealth
    hints: CandidateHints | None = None
    sample: Sample = Sample()
    unreadable: UnreadableTruth | None = None
    writing: Writing = Writing()
    finish_report: Callable[[dict], None] | None = None
    # The expected projection row is the truth row itself (derive selects the projection's columns of each truth
    # row): a scan in token ranges then keeps both tables as keys, digests and the columns the candidates and the
    # health figures read, not whole rows.
    mirrored_truth: bool = False

    def __post_init__(self):
        _require(bool(self.name), "a projection spec needs its name")
        if self.mirrored_truth:
            self._check_mirrored()
        columns = self.projection.columns
        hint_columns = self.hints.columns if self.hints else ()
        strange = [column for column in self.sample.columns if column not in (*columns, *hint_columns)]
        _require(not strange, f"{self.name}: sample columns {strange} are neither projection nor hint columns")
        if self.unreadable is not None:
            scope = self.unreadable.scope_column
            _require(scope in columns, f"{self.name}: unreadable truth scoped by {scope}, not a projection column")
        ungrouped = [column for column in self.writing.group_columns if column not in columns]
        _require(not ungrouped, f"{self.name}: group columns {ungrouped} are not projection columns")

    def _check_mirrored(self) -> None:
        truth, projection = self.truth, self.projection
        _require(
            truth.read is None and set(projection.columns) <= set(truth.columns),
            f"{self.name}: a mirrored truth is one table holding every projection column",
        )
        _require(
            projection.view is None and projection.equivalent is None and self.unreadable is None,
            f"{self.name}: a mirrored truth compares whole rows (no view, equivalence or unreadable truth)",
        )
        _require(self.hints is None or self.hints.locate is None, f"{self.name}: a mirrored truth locates nothing")
        unread = [column for column in self.health.columns if column not in truth.columns]
        _require(
            bool(self.health.columns) and not unread,
            f"{self.name}: a mirrored truth's health names the truth columns it reads (not {unread})",
        )

    # The names the engine and the writers use most, read from the parts.
    @property
    def key(self) -> tuple[str, ...]:
        return self.projection.key

    @property
    def columns(self) -> tuple[str, ...]:
        return self.projection.columns

    @property
    def value_columns(self) -> tuple[str, ...]:
        return self.projection.value_columns

    @property
    def projection_table(self) -> str:
        return self.projection.table

    @property
    def hint_columns(self) -> tuple[str, ...]:
        return self.hints.columns if self.hints else ()

    @property
    def diff_carried_columns(self) -> tuple[str, ...]:
        """The value columns the candidates take from the diff (hints, sample identity): carried through it as they
        are, beside the digest of the values."""
        wanted = (*self.hint_columns, *self.sample.columns)
        return tuple(column for column in dict.fromkeys(wanted) if column in self.value_columns)


class Repair(ABC):
    """A repair as the engine runs it (engine.run.execute): the engine owns the flow (scan, judge, plan, reconcile,
    summarize; passes), the run's identity and work folder, the gates' verdicts, the partition applier and the
    report's assembly; a repair gives these parts. `run` is the engine's Run, `scan` its Scan."""

    name: str
    generation: str
    report_type: str
    # The Great Expectations suite judging what the scan measured (None: a repair without one, the undo).
    health_suite: str | None
    # The Great Expectations data asset the health gate validates (None: named after its suite).
    health_asset: str | None = None
    # Tables that must exist before anything is read (checked when the target is resolved).
    tables: tuple[str, ...]
    # Repeat scan -> reconcile while a pass fixes something, at most `max_passes` times (one pass otherwise).
    passes: bool = False
    max_passes: int = 1
    # The typed confirmation a repair (mode repair) must be given, or None; and the one the operator typed.
    confirmation: str | None = None
    typed_confirmation: str | None = None

    @abstractmethod
    def report_fields(self, run) -> dict:
        """The fields of a new report beyond the ones every run has (James's names for this task)."""

    @abstractmethod
    def scan(self, run):
        """Read the tables once; write the candidates to the run's work folder; return the engine's Scan."""

    @abstractmethod
    def describe_truth(self, run, scan) -> None:
        """What the scan measured of the truth, into the report before the health gate judges it (a failed gate's
        alert quotes it)."""

    @abstractmethod
    def describe(self, run, scan) -> None:
        """What the scan found, into the report (after the health gate passed)."""

    @abstractmethod
    def check(self, run, scan) -> str:
        """The end of a check (dry run): the last report fields; the status."""

    @abstractmethod
    def safety(self, run, scan) -> None:
        """Gates before anything is written (the plan stage)."""

    @abstractmethod
    def anything_to_fix(self, run, scan) -> bool:
        """Whether a repair pass has work."""

    @abstractmethod
    def candidates(self, run, scan, context):
        """The candidates the reconcile stage re-checks (a DataFrame), and the ApplyContext of their re-check (the
        engine's `context`, which says whether to write, or one the repair derived from it)."""

    @abstractmethod
    def policy(self, run):
        """How each candidate is re-checked and fixed in the executors (engine.apply.Policy)."""

    @abstractmethod
    def count_pass(self, run, number: int, scan, outcomes) -> int:
        """A repair pass's outcomes (and the scan it started from) into the report; how many inconsistencies it
        fixed."""

    @abstractmethod
    def summarize(self, run, scan) -> str:
        """The end of a repair, after its passes (`scan` is the last one): the last report fields; the status."""

    @abstractmethod
    def verify(self, run, scan) -> str:
        """A verify after the scan: what is left, judged by its gate; the status."""

    def keep_health_verdict(self, run, scan, verdict) -> None:
        """The health gate's verdict (gates.GateResult) on the scan this run made, kept with the scan when a later
        run may reuse it (nothing to keep by default)."""
        return None

    def finish_report(self, run, status: str) -> str:
        """Last fields when the run ends (however it ends); the status may change (e.g. window ended)."""
        return status
