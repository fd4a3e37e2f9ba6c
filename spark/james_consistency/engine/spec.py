"""What a projection repair needs to know, declared once per projection; the engine does the rest."""

from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F


@dataclass(frozen=True)
class ReportNames:
    """James's report field names for this projection's task, so admins find what they know."""

    processed_truth: str
    processed_projection: str
    added: str
    updated: str
    removed: str


@dataclass(frozen=True)
class ProjectionSpec:
    """A projection derived row by row from a source of truth.

    `derive` turns the scanned truth DataFrame into the expected projection rows (same columns as `columns`);
    the engine full-outer-joins them with the scanned projection on `key` and compares every other column.
    `recheck` re-reads the truth of ONE candidate key from live Cassandra (in an executor) and returns the
    expected projection row as a dict, or None when the truth says no row should exist.
    """

    name: str
    truth_table: str
    projection_table: str
    key: tuple[str, ...]
    columns: tuple[str, ...]
    derive: Callable[[DataFrame], DataFrame]
    recheck: Callable[..., dict | None]
    report_names: ReportNames
    # Columns of the truth read by the scan (the derivation's input).
    truth_columns: tuple[str, ...] = ()
    # Scanned columns that help the re-check find the truth (e.g. messageId): every value seen at a candidate's key,
    # on either side, reaches the re-check as the array `<name>_seen`.
    hint_columns: tuple[str, ...] = ()
    # Identity of a candidate in the report's `fixedInconsistencies` sample, under James's names
    # (Cassandra lower-cases column names: mailboxid -> mailboxId).
    sample_columns: tuple[str, ...] = ()
    sample_names: dict[str, str] = field(default_factory=dict)
    # Column types by name (CQL), for binding keys read back from Spark.
    cql_types: dict[str, str] = field(default_factory=dict)
    # For projections that do not carry the hint columns themselves (e.g. messageDeleted has no messageId): a
    # function of the scanned truth giving (key..., hint...) for EVERY truth row, joined to the candidates.
    locate: Callable[[DataFrame], DataFrame] | None = None
    # The Great Expectations suite of the truth (projections of one truth share it).
    truth_suite: str = ""
    # For a truth that can be unreadable (ACL JSON): a function of the scanned truth giving (mailbox, problem) for
    # each unit that cannot be read; the projection rows whose `scope_column` names such a unit are left alone.
    unreadable: Callable[[DataFrame], DataFrame] | None = None
    scope_column: str = ""
    # The truth's health, measured during the scan: named aggregate columns judged by the truth suite, and the
    # filter that finds the rows behind a failure.
    truth_metrics: Callable[[], list[Column]] = field(default=lambda: [])
    truth_problem: Callable[[], Column] = field(default=lambda: F.lit(False))
    # A truth spread over several tables: `read_truth(read)` builds it with `read(table, columns)` (a connector
    # scan); the default scans `truth_table`. Every table it reads is named in `extra_truth_tables` (pre-flight).
    read_truth: Callable[[Callable[[str, tuple[str, ...]], DataFrame]], DataFrame] | None = None
    extra_truth_tables: tuple[str, ...] = ()
    # Only part of the projection table is this repair's business (e.g. MAILBOX quota rows, not SIEVE ones).
    projection_view: Callable[[DataFrame], DataFrame] | None = None
    # When expected and actual rows are equivalent without being equal (an absent counter row is a zero; an
    # add-only index holding more than expected), a condition over the diff's expected_/actual_ columns.
    equivalent: Callable[[], Column] | None = None
    # How candidates are read and written in the executors: (session, ApplyContext, spec) -> a writer with
    # read/consistent/write/remove (engine.apply.ProjectionWriter for plain rows).
    writer: Callable | None = None
    # The kinds of fixes that can take something away from users (judged by the plan-safety gate): rewriting a row
    # replaces its values, deleting it removes them; an add-only projection has none.
    destructive_kinds: tuple[str, ...] = ("outdated", "orphan")
    # Candidates sharing these columns are re-checked one after the other in the same task (e.g. the count and size
    # rows of one quota root, recounted once).
    group_columns: tuple[str, ...] = ()
    # Adds the projection's James report fields once the run's figures are known: (report) -> None.
    finish_report: Callable[[dict], None] | None = None

    @property
    def truth_suite_name(self) -> str:
        return self.truth_suite or f"{self.name}_truth_health"

    @property
    def value_columns(self) -> tuple[str, ...]:
        return tuple(column for column in self.columns if column not in self.key)
