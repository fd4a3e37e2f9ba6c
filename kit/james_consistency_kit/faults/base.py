"""What every fault family shares: the `Injection` a kind breaks rows with, the `Damage` it does, the registry of
kinds, and `inject`, which runs one kind and writes its manifest."""

import heapq
import json
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from cassandra.concurrent import execute_concurrent_with_args
from cassandra.query import SimpleStatement
from james_consistency.cassandra.cql import CassandraSettings, close, connect, table_names
from james_consistency.cassandra.schema import GENERATIONS, detect_generation, validate_keyspace_name
from james_consistency.errors import OperatorError
from james_consistency.runtime.paths import LOCAL_DIR

FAULTS_DIR = LOCAL_DIR / "faults"
# Rows kept aside while scanning, in case none of the chosen ones passes its check.
SPARES = 32


@dataclass(frozen=True)
class Damage:
    """What one fault kind does: the tables it needs, the schema generations it exists in, the function."""

    description: str
    tables: tuple[str, ...]
    breaks: Callable[["Injection"], list[dict]]
    generations: tuple[str, ...] = GENERATIONS

    def __str__(self) -> str:
        return self.description


def plain(value):
    """A JSON value for a CQL value: ids and dates as strings, sets as sorted lists, UDTs as objects."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, set | frozenset | list | tuple) and not hasattr(value, "_fields"):
        return sorted(plain(item) for item in value)
    if hasattr(value, "_asdict"):
        return {key: plain(item) for key, item in value._asdict().items()}
    if hasattr(value, "__iter__"):  # the driver's SortedSet
        return sorted(plain(item) for item in value)
    return str(value)


def row_values(row) -> dict | None:
    return None if row is None else {key: plain(value) for key, value in row._asdict().items()}


@dataclass
class Injection:
    """One `inject` call: the session, what to break, and the damage queued until the scan is over."""

    session: object
    keyspace: str
    generation: str
    kind: str
    rate: float
    seed: int
    # Where the users' current quotas are: James 3.9 writes quotaCurrentValue, 3.5 to 3.8 currentQuota.
    quota_table: str = "quotacurrentvalue"
    writes: list[tuple[str, tuple]] = field(default_factory=list)
    _prepared: dict = field(default_factory=dict)
    _owners: dict | None = None

    # ---- reading ---------------------------------------------------------------------------------------------

    def digest(self, key: tuple) -> int:
        return zlib.crc32(f"{self.seed}|{self.kind}|{'|'.join(map(str, key))}".encode())

    def pick(
        self,
        query: str,
        key: Callable,
        where: Callable | None = None,
        valid: Callable[[list], list] | None = None,
    ) -> list:
        """Rows of `query` (passing `where`) whose key hashes under the rate; `valid` keeps the chosen rows whose
        damage would be real. At least one row when the rate is above 0 and a valid candidate exists."""
        threshold = int(self.rate * 2**32)
        chosen, spares = [], []
        for number, row in enumerate(self.session.execute(SimpleStatement(query, fetch_size=5_000))):
            if where is not None and not where(row):
                continue
            digest = self.digest(key(row))
            if digest < threshold:
                chosen.append(row)
            elif self.rate > 0:
                entry = (-digest, number, row)
                if len(spares) < SPARES:
                    heapq.heappush(spares, entry)
                elif entry > spares[0]:
                    heapq.heapreplace(spares, entry)
        if valid is not None:
            chosen = valid(chosen) if chosen else []
        if not chosen and spares:
            for _, _, row in sorted(spares, reverse=True):
                if valid is None or valid([row]):
                    return [row]
        return chosen

    def prepare(self, query: str):
        if query not in self._prepared:
            self._prepared[query] = self.session.prepare(query)
        return self._prepared[query]

    def read(self, query: str, parameters: list[tuple]) -> list:
        """One row (or None) per parameter tuple, read concurrently."""
        if not parameters:
            return []
        results = execute_concurrent_with_args(self.session, self.prepare(query), parameters, concurrency=64)
        rows = []
        for success, result in results:
            if not success:
                raise OperatorError(f"reading {self.keyspace} failed: {result}")
            rows.append(result.one())
        return rows

    def owners(self) -> dict:
        """mailboxId -> owner, from the mailbox table."""
        if self._owners is None:
            self._owners = {
                row.id: row.mailboxbase.user
                for row in self.session.execute(f"SELECT id, mailboxbase FROM {self.keyspace}.mailbox")
                if row.mailboxbase is not None
            }
        return self._owners

    def users(self) -> list[str]:
        return sorted(set(self.owners().values()))

    # ---- writing ---------------------------------------------------------------------------------------------

    def write(self, query: str, parameters: tuple) -> None:
        self.writes.append((query, parameters))

    def flush(self) -> None:
        by_query: dict[str, list[tuple]] = {}
        for query, parameters in self.writes:
            by_query.setdefault(query, []).append(parameters)
        for query, parameters in by_query.items():
            for success, result in execute_concurrent_with_args(
                self.session, self.prepare(query), parameters, concurrency=64
            ):
                if not success:
                    raise OperatorError(f"writing the damage failed ({query.split(' WHERE')[0]}): {result}")
        self.writes.clear()


# Every kind, in the order `break --kind list` shows them: each family module registers its own.
KINDS: dict[str, Damage] = {}


def register(kinds: dict[str, Damage]) -> None:
    clashing = KINDS.keys() & kinds.keys()
    if clashing:
        raise ValueError(f"fault kinds registered twice: {sorted(clashing)}")
    KINDS.update(kinds)


def kinds_text() -> str:
    """The kinds, one per line, as `break --kind list` prints them."""
    return "\n".join(f"{kind:<26} {damage.description}" for kind, damage in KINDS.items())


def inject(
    settings: CassandraSettings,
    *,
    keyspace: str,
    kind: str,
    rate: float,
    random_seed: int = 7,
    manifest_path: str | None = None,
) -> dict:
    """Break about `rate` of the candidate rows the way `kind` says; write the JSON manifest and return it."""
    if kind not in KINDS:
        raise OperatorError(f"unknown fault kind '{kind}': choose one of {', '.join(KINDS)}")
    if not 0 <= rate <= 1:
        raise OperatorError(f"rate {rate} is outside 0..1")
    damage = KINDS[kind]
    keyspace = validate_keyspace_name(keyspace)
    session = connect(settings, keyspace)
    try:
        generation = detect_generation(session, keyspace)
        if generation is None:
            raise OperatorError(f"keyspace '{keyspace}' has no James tables: run `james-consistency seed` first")
        if generation not in damage.generations:
            raise OperatorError(
                f"fault kind '{kind}' exists only in the James {'/'.join(damage.generations)} schema; "
                f"keyspace '{keyspace}' holds the {generation} schema"
            )
        tables = table_names(session, keyspace)
        quota_table = "quotacurrentvalue" if "quotacurrentvalue" in tables else "currentquota"
        needed = damage.tables or (quota_table,)
        missing = [table for table in needed if table not in tables]
        if missing:
            raise OperatorError(f"keyspace '{keyspace}' has no table {', '.join(missing)} needed by '{kind}'")
        job = Injection(session, keyspace, generation, kind, rate, random_seed, quota_table)
        rows = damage.breaks(job)
        job.flush()
    finally:
        close(session)
    created = datetime.now(UTC)
    path = Path(manifest_path or FAULTS_DIR / f"{keyspace}-{kind}-{created.strftime('%Y%m%dT%H%M%S%f')}.json")
    manifest = {
        "kind": kind,
        "description": damage.description,
        "keyspace": keyspace,
        "generation": generation,
        "rate": rate,
        "random_seed": random_seed,
        "tables": sorted({row["table"] for row in rows}) or list(needed),
        "count": len(rows),
        "created_at": created.isoformat(),
        "path": str(path),
        "rows": rows,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifest, indent=2, default=plain) + "\n")
    return manifest
