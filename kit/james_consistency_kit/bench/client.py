"""The impact bench's James-like client: what James asks of Cassandra for its IMAP and JMAP users, at a fixed rate of
operations, each operation's latency recorded.

Operations (weights in `ClientOptions.mix`):
- readMailbox: a mailbox's messageIdTable rows by uid range (an IMAP FETCH of a page, a JMAP Email/query);
- readMessage: a message's imapUidTable rows by messageId (a JMAP Email/get);
- readCounters: a mailbox's counters (an IMAP STATUS, a JMAP Mailbox/get);
- add, flags, move, delete: the kit's traffic writes (james_consistency_kit.traffic's Writer, in James's write order),
  every one complete (no simulated partial failure: the night must leave nothing behind them) and logged in the
  traffic log's format, so that what the night could have undone is checked afterwards.

Open loop: operation i is due at start + i / rate and is handed to a pool of threads at that time whether or not the
ones before it finished; its latency runs from when it was due, so a stall of Cassandra shows in every operation that
waited behind it instead of being hidden by a client that waits before sending more (coordinated omission). An
operation is timed out when a statement timed out, or when it ended more than `timeout_seconds` after it was due
(the DataStax Java driver 4 that James uses gives up on a request after 2 s by default). The client runs in a process
of its own, above the night's priority when it may (it stands for James, which has machines of its own).
"""

import json
import os
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from cassandra import OperationTimedOut, Timeout
from cassandra.cluster import EXEC_PROFILE_DEFAULT
from james_consistency.cassandra.cql import CassandraSettings, close, connect

from james_consistency_kit.traffic import MESSAGE_COLUMNS, TrafficOptions, Writer, log_line

READS = ("readMailbox", "readMessage", "readCounters")
WRITES = ("add", "flags", "move", "delete")
# A page of a mailbox, as a mail client fetches it.
PAGE_UIDS = 50
# Writers over disjoint sets of mailboxes (a uid or a modseq is handed out by one of them only), each writing one
# operation at a time, as James serves one mailbox's writes.
WRITER_SHARDS = 4
# Threads sending operations: enough that a stall of a few seconds at the chosen rate still sends on time.
THREADS = 32
# How much sooner than the night a client process is scheduled when it may be (a negative nice value needs root).
CLIENT_NICE = -5


@dataclass(frozen=True)
class ClientOptions:
    keyspace: str
    ops_per_second: float
    records_path: str  # one JSON line per operation: [due (epoch seconds), kind, latency (ms), outcome]
    log_path: str  # the traffic log of every write (james_consistency_kit.traffic's format)
    timeout_seconds: float = 2.0
    seed: int = 23
    # About 7 reads for 3 writes; as many messages added as deleted, so the keyspace keeps its size run after run.
    mix: dict = field(
        default_factory=lambda: {
            "readMailbox": 3,
            "readMessage": 2,
            "readCounters": 2,
            "flags": 1.2,
            "add": 0.7,
            "delete": 0.7,
            "move": 0.4,
        }
    )


@dataclass(frozen=True)
class Record:
    due: float  # when it was due, epoch seconds
    kind: str
    latency_ms: float
    outcome: str  # ok | error | timeout

    @staticmethod
    def read(path: str | Path) -> list["Record"]:
        records = []
        for line in Path(path).read_text().splitlines():
            due, kind, latency, outcome = json.loads(line)
            records.append(Record(due, kind, latency, outcome))
        return records


def run_client(settings: CassandraSettings, options: ClientOptions, ready, stop) -> None:
    """Send operations at the options' rate from when the client has loaded what it serves (`ready` is set then)
    until `stop` is set; then write every operation's record. The entry of the client's process."""
    raised = _raise_priority()
    session = connect(settings, options.keyspace)
    # Every statement gives up after the client's timeout (the profile's, read at each request).
    session.cluster.profile_manager.profiles[EXEC_PROFILE_DEFAULT].request_timeout = options.timeout_seconds
    try:
        client = Client(session, options)
        client.load()
        with Path(options.log_path).open("w") as log:
            client.log = log
            log.write(json.dumps({"started": time.time_ns() // 1000, "niceRaised": raised}) + "\n")
            ready.set()
            client.send_until(stop)
            log.write(json.dumps({"summary": client.summary(), "finished": time.time_ns() // 1000}) + "\n")
        with Path(options.records_path).open("w") as records:
            for record in client.records:
                records.write(json.dumps([record.due, record.kind, record.latency_ms, record.outcome]) + "\n")
    finally:
        close(session)


def _raise_priority() -> bool:
    try:
        os.setpriority(os.PRIO_PROCESS, 0, CLIENT_NICE)
        return True
    except (PermissionError, OSError):
        return False


class Client:
    def __init__(self, session, options: ClientOptions):
        self.session = session
        self.options = options
        self.random = random.Random(options.seed)
        self.writers: list[Writer] = []
        self.locks = [threading.Lock() for _ in range(WRITER_SHARDS)]
        self.mailboxes: list = []  # (mailboxId, highest uid at the start)
        self.message_ids: list = []
        self.records: list[Record] = []
        self.errors: list[str] = []  # the first few, for the figures
        self.log = None
        self._log_lock = threading.Lock()
        ks = options.keyspace
        self.statements = {
            "readMailbox": session.prepare(
                f"SELECT {', '.join(MESSAGE_COLUMNS)} FROM {ks}.messageidtable "
                "WHERE mailboxid = ? AND uid >= ? AND uid <= ?"
            ),
            "readMessage": session.prepare(
                f"SELECT {', '.join(MESSAGE_COLUMNS)} FROM {ks}.imapuidtable WHERE messageid = ?"
            ),
            "readCounters": session.prepare(f"SELECT count, unseen FROM {ks}.mailboxcounters WHERE mailboxid = ?"),
        }

    def load(self) -> None:
        """What the client serves: every mailbox and message of the keyspace, the writes shared among the writers
        by mailbox."""
        loaded = Writer(self.session, TrafficOptions(self.options.keyspace, self.options.log_path, partial_share=0))
        loaded.load()
        self.mailboxes = sorted(loaded.next_uid.items(), key=lambda item: str(item[0]))
        self.message_ids = sorted({key[0] for key in loaded.messages}, key=str)
        if not self.mailboxes or not self.message_ids:
            raise RuntimeError(f"keyspace {self.options.keyspace} has no mailbox or no message to serve")
        for shard in range(WRITER_SHARDS):
            mine = {mailbox for mailbox, _ in self.mailboxes[shard::WRITER_SHARDS]}
            writer = Writer(self.session, replace(loaded.options, seed=self.options.seed + shard))
            writer.messages = {key: row for key, row in loaded.messages.items() if key[1] in mine}
            writer.next_uid = {mailbox: loaded.next_uid[mailbox] for mailbox in mine}
            writer.next_modseq = {mailbox: loaded.next_modseq.get(mailbox, 0) for mailbox in mine}
            writer.users = loaded.users
            self.writers.append(writer)

    def send_until(self, stop) -> None:
        kinds = list(self.options.mix)
        weights = [self.options.mix[kind] for kind in kinds]
        interval = 1.0 / self.options.ops_per_second
        # Due times on the monotonic clock, recorded on the wall clock (the bench marks its periods on it).
        wall_offset = time.time() - time.monotonic()
        start = time.monotonic()
        with ThreadPoolExecutor(THREADS, thread_name_prefix="impact-client") as pool:
            sent = 0
            while not stop.is_set():
                due = start + sent * interval
                wait = due - time.monotonic()
                if wait > 0 and stop.wait(wait):
                    break
                kind = self.random.choices(kinds, weights)[0]
                pool.submit(self.operate, kind, sent, self.random.getrandbits(32), due, wall_offset)
                sent += 1

    def operate(self, kind: str, number: int, pick: int, due: float, wall_offset: float) -> None:
        try:
            ok = self.read(kind, random.Random(pick)) if kind in READS else self.write(kind, number)
            outcome = "ok" if ok else "error"
        except (OperationTimedOut, Timeout):
            outcome = "timeout"
        except Exception as error:  # noqa: BLE001 - any failure is a failed operation, counted and kept
            outcome = "error"
            if len(self.errors) < 5:
                self.errors.append(f"{kind}: {type(error).__name__}: {error}")
        latency = time.monotonic() - due
        if outcome == "ok" and latency > self.options.timeout_seconds:
            outcome = "timeout"
        self.records.append(Record(round(due + wall_offset, 3), kind, round(latency * 1000, 2), outcome))

    def read(self, kind: str, pick: random.Random) -> bool:
        if kind == "readMessage":
            values = (pick.choice(self.message_ids),)
        else:
            mailbox, highest = pick.choice(self.mailboxes)
            if kind == "readCounters":
                values = (mailbox,)
            else:
                first = pick.randint(1, max(1, highest - PAGE_UIDS + 1))
                values = (mailbox, first, first + PAGE_UIDS - 1)
        self.session.execute(self.statements[kind], values).all()
        return True

    def write(self, kind: str, number: int) -> bool:
        """One of the traffic's writes by the writer of a shard of the mailboxes, logged as the traffic writer logs
        it; False when James would have reported it failed (a lightweight transaction not applied)."""
        shard = number % WRITER_SHARDS
        with self.locks[shard]:
            started = time.time_ns() // 1000
            entry = getattr(self.writers[shard], f"op_{kind}")(False)
            entry = {"op": kind, "partial": False, "started": started, "finished": time.time_ns() // 1000, **entry}
        with self._log_lock:
            self.log.write(log_line(entry) + "\n")
        if "error" in entry and len(self.errors) < 5:
            self.errors.append(f"{kind}: {entry['error']}")
        return "error" not in entry

    def summary(self) -> dict:
        outcomes = {}
        for record in self.records:
            outcomes[record.outcome] = outcomes.get(record.outcome, 0) + 1
        return {"operations": len(self.records), "outcomes": outcomes, "firstErrors": self.errors}
