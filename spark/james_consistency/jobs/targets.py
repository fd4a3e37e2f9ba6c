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
from james_consistency.mailboxes.repair import MailboxRepair
from james_consistency.projections import CHECKS, TARGETS, projection_spec

MAILBOXES = "mailboxes"
# Every target a job or the command line takes: the projections, the checks, and the offline mailbox repair.
ALL_TARGETS = (*TARGETS, *CHECKS, MAILBOXES)


def confirm(options: RunOptions) -> None:
    """Before any JVM starts: the offline mailbox repair does not repair without its typed confirmation."""
    if options.target == MAILBOXES and options.mode == "repair" and options.confirmation != CONFIRMATION:
        raise OperatorError(
            "the mailbox repair can cancel users' actions and must only run while James's SMTP, IMAP and JMAP "
            f"services are stopped: confirm with --i-know-what-i-am-doing {CONFIRMATION}"
        )


def repair_for(options: RunOptions, generation: str, keyspace_tables: frozenset[str] = frozenset()) -> Repair:
    """The Repair of `options.target` for a James generation (NotApplicable when the generation has no such
    table, OperatorError for an unknown target)."""
    if options.target == MAILBOXES:
        return MailboxRepair(generation, merge=options.merge, orphan_paths=options.orphan_paths)
    spec = projection_spec(
        options.target,
        generation,
        keyspace_tables=keyspace_tables,
        remove_unused_flags=options.remove_unused_flags,
    )
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
