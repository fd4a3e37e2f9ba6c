"""The repair targets by name, each resolved for a keyspace's James generation into the Repair the engine runs: a
projection (james_consistency.projections) or the offline mailbox repair (james_consistency.mailboxes).

The job entry points, the command line and the bench come through here; the engine never looks a target up.
"""

from pyspark.sql import SparkSession

from james_consistency.cassandra.cql import CassandraSettings, close, connect, require_tables, table_names
from james_consistency.cassandra.schema import detect_generation, validate_keyspace_name
from james_consistency.engine import reports
from james_consistency.engine.projection_repair import ProjectionRepair
from james_consistency.engine.run import RunOptions, execute, new_run_id
from james_consistency.engine.spec import Repair
from james_consistency.errors import NotApplicable, OperatorError
from james_consistency.mailboxes import CONFIRMATION
from james_consistency.mailboxes.options import MailboxOptions
from james_consistency.mailboxes.repair import MailboxRepair
from james_consistency.projections import CHECKS, TARGETS, projection_spec
from james_consistency.projections.flags import FlagOptions

MAILBOXES = "mailboxes"
# Every target a job or the command line takes: the projections, the checks, and the offline mailbox repair.
ALL_TARGETS = (*TARGETS, *CHECKS, MAILBOXES)
# The class of the own options of each target that has some (RunOptions.target_options).
TARGET_OPTIONS = {MAILBOXES: MailboxOptions, "flags": FlagOptions}


def target_options(options: RunOptions):
    """The target's own options: those given, or the target's defaults (None for a target without options of its
    own); OperatorError for options of another target."""
    kind, given = TARGET_OPTIONS.get(options.target), options.target_options
    if given is None:
        return kind() if kind else None
    if kind is None or not isinstance(given, kind):
        raise OperatorError(f"target '{options.target}' does not take {type(given).__name__}")
    return given


def confirm(options: RunOptions) -> None:
    """Before any JVM starts: the offline mailbox repair does not repair without its typed confirmation."""
    if (
        options.target == MAILBOXES
        and options.mode == "repair"
        and target_options(options).confirmation != CONFIRMATION
    ):
        raise OperatorError(
            "the mailbox repair can cancel users' actions and must only run while James's SMTP, IMAP and JMAP "
            f"services are stopped: confirm with --i-know-what-i-am-doing {CONFIRMATION}"
        )


def repair_for(options: RunOptions, generation: str, keyspace_tables: frozenset[str] = frozenset()) -> Repair:
    """The Repair of `options.target` for a James generation (NotApplicable when the generation has no such
    table, OperatorError for an unknown target)."""
    own = target_options(options)
    if options.target == MAILBOXES:
        return MailboxRepair(generation, own)
    spec = projection_spec(options.target, generation, keyspace_tables=keyspace_tables, target_options=own)
    return ProjectionRepair(spec, generation)


def resolve(settings: CassandraSettings, options: RunOptions) -> Repair:
    """The Repair of the options' target for its keyspace's James generation; OperatorError for a wrong keyspace or
    a missing table, NotApplicable for a target this generation does not have."""
    keyspace = validate_keyspace_name(options.keyspace)
    confirm(options)
    session = connect(settings, keyspace)
    try:
        generation = detect_generation(session, keyspace)
        if generation is None:
            raise OperatorError(f"keyspace '{keyspace}' has no James message tables (imapUidTable is missing)")
        repair = repair_for(options, generation, frozenset(table_names(session, keyspace)))
        require_tables(session, keyspace, list(repair.tables))
    finally:
        close(session)
    return repair


def run_target(spark: SparkSession, settings: CassandraSettings, options: RunOptions) -> dict:
    """Resolve the options' target and run it through the engine; a target the keyspace's generation does not have
    gives a NOT_APPLICABLE report."""
    options.validate()
    try:
        repair = resolve(settings, options)
    except NotApplicable as reason:
        return reports.not_applicable(options, new_run_id(), str(reason))
    return execute(spark, settings, options, repair)
