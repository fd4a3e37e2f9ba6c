"""Cassandra's consistency levels a repair reads and writes at, and the levels of a run's reads as James is configured.

James 3.9.x re-reads imapUidTable at STRONG (its driver's `LWT` profile: SERIAL, or LOCAL_SERIAL) only when it writes
messages with lightweight transactions (`message.write.strong.consistency.unsafe`, true by default), otherwise at the
driver's regular level; every other table it reads at the regular level. `read_levels` gives a run the same levels
from the settings that mirror James's (JAMES_MESSAGE_WRITE_STRONG_CONSISTENCY, JAMES_LWT_SERIAL_CONSISTENCY), unless
the run names a level of its own (`--truth-consistency`), which then wins for every truth re-read. A scan never runs
at a serial level: that guarantee is one partition's (a Paxos round each), which a range read does not get.

A module of its own, without the Cassandra driver, so the DAG files (parsed with no heavy import) share it with the
jobs; `james_consistency.cassandra.cql` re-exports the list.
"""

from dataclasses import dataclass

from james_consistency.errors import OperatorError
from james_consistency.settings import setting

# What the repairs read their truth and write at unless told otherwise, and the Python driver sessions' default:
# the regular level (James's sample driver configuration says QUORUM: the same within one data center).
DEFAULT_CONSISTENCY_LEVEL = "LOCAL_QUORUM"
CONSISTENCY_LEVELS = (DEFAULT_CONSISTENCY_LEVEL, "QUORUM", "LOCAL_SERIAL", "SERIAL", "ONE", "LOCAL_ONE", "ALL")
# The levels of James's `LWT` driver profile: a read at one of them sees the latest lightweight-transaction write.
SERIAL_LEVELS = ("SERIAL", "LOCAL_SERIAL")
# The trigger forms' choice of no level of their own: the run reads as James is configured (`read_levels(None)`).
AS_JAMES = "AS_JAMES"


@dataclass(frozen=True)
class ReadLevels:
    """The levels one run reads at: `message_truth`, imapUidTable's re-reads (messages, deleted, unseen, recent,
    flags, counters, quotas); `truth`, the re-reads of every other truth table (mailbox, paths, eventStore, message
    metadata, attachments); `scan`, a token-range scan of both tables."""

    message_truth: str
    truth: str
    scan: str


def lwt_serial_level() -> str:
    """James's `LWT` driver profile's level (JAMES_LWT_SERIAL_CONSISTENCY): SERIAL or LOCAL_SERIAL."""
    level = setting("JAMES_LWT_SERIAL_CONSISTENCY").upper()
    if level not in SERIAL_LEVELS:
        raise OperatorError(
            f"setting JAMES_LWT_SERIAL_CONSISTENCY={level!r} is not valid: expected SERIAL or LOCAL_SERIAL"
        )
    return level


def read_levels(explicit: str | None = None) -> ReadLevels:
    """A run's read levels: `explicit` (a run's `--truth-consistency`) for every truth re-read when given; otherwise
    imapUidTable's re-reads as James 3.9.x makes them (its LWT level when it writes messages with lightweight
    transactions, JAMES_MESSAGE_WRITE_STRONG_CONSISTENCY, else the regular level) and the other truth tables' at the
    regular level. The scan reads at `explicit` unless that is a serial level, then at the regular level."""
    if explicit is not None and explicit not in CONSISTENCY_LEVELS:
        raise OperatorError(f"unknown consistency level '{explicit}': one of {', '.join(CONSISTENCY_LEVELS)}")
    scan = explicit if explicit is not None and explicit not in SERIAL_LEVELS else DEFAULT_CONSISTENCY_LEVEL
    if explicit is not None:
        return ReadLevels(message_truth=explicit, truth=explicit, scan=scan)
    strong = setting("JAMES_MESSAGE_WRITE_STRONG_CONSISTENCY")
    serial = lwt_serial_level()  # checked even when unused: a wrong value is said at once, not the day it matters
    return ReadLevels(
        message_truth=serial if strong else DEFAULT_CONSISTENCY_LEVEL, truth=DEFAULT_CONSISTENCY_LEVEL, scan=scan
    )
