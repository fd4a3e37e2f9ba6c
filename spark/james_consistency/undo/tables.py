"""One table as the undo reads and writes it, and an image's JSON values decoded for the driver."""

import json
import uuid
from datetime import date, datetime
from decimal import Decimal

from james_consistency.engine import before_images as images
from james_consistency.engine.live import Query, one, prepared
from james_consistency.errors import OperatorError


class Table:
    """One table as the undo reads and writes it: its columns' CQL types (from the driver's schema metadata), the
    statements built for them, values decoded from an image's JSON."""

    def __init__(self, session, keyspace: str, name: str):
        self.session, self.name = session, f"{keyspace}.{name}"
        metadata = _table_metadata(session, keyspace, name)
        self.types = {column: metadata.columns[column].cql_type for column in metadata.columns}
        self.key_columns = tuple(column.name for column in (*metadata.partition_key, *metadata.clustering_key))

    def decoded(self, row: dict) -> dict:
        return {column: decoded(value, self.types[column]) for column, value in row.items()}

    def same(self, current: dict | None, image: dict | None, columns: tuple[str, ...]) -> bool:
        return images.row_json(current, columns) == images.row_json(image, columns)

    def _where(self, key: dict) -> tuple[str, list]:
        names = [column for column in self.key_columns if column in key]
        return " AND ".join(f"{column} = ?" for column in names), [key[column] for column in names]

    def _value(self, column: str, value) -> tuple[str, list]:
        """A value's CQL placeholder(s): a UDT as a literal with one placeholder per field."""
        if isinstance(value, dict) and not self.types[column].startswith("map<"):
            fields = sorted(value)
            return "{" + ", ".join(f"{field}: ?" for field in fields) + "}", [value[field] for field in fields]
        return "?", [value]

    def read(self, key: dict, columns: tuple[str, ...], consistency: str):
        where, values = self._where(key)
        rows = yield Query(
            prepared(self.session, f"SELECT {', '.join(columns)} FROM {self.name} WHERE {where}", consistency), values
        )
        return one(rows)

    def delete(self, key: dict, timestamp: int, consistency: str):
        where, values = self._where(key)
        statement = prepared(self.session, f"DELETE FROM {self.name} USING TIMESTAMP ? WHERE {where}", consistency)
        yield Query(statement, [timestamp, *values])

    def write(self, row: dict, key: dict, timestamp: int, by_update: bool, consistency: str):
        """The row's former values at `timestamp`: an INSERT, or an UPDATE for a table James writes only so."""
        if by_update:
            settable = [column for column in sorted(row) if column not in key]
            parts = [self._value(column, row[column]) for column in settable]
            assignments = ", ".join(f"{column} = {part[0]}" for column, part in zip(settable, parts, strict=True))
            where, key_values = self._where(key)
            cql = f"UPDATE {self.name} USING TIMESTAMP ? SET {assignments} WHERE {where}"
            values = [timestamp, *(value for part in parts for value in part[1]), *key_values]
        else:
            columns = sorted(row)
            parts = [self._value(column, row[column]) for column in columns]
            cql = (
                f"INSERT INTO {self.name} ({', '.join(columns)}) VALUES ({', '.join(part[0] for part in parts)}) "
                "USING TIMESTAMP ?"
            )
            values = [*(value for part in parts for value in part[1]), timestamp]
        yield Query(prepared(self.session, cql, consistency), values)

    def put_elements_back(self, key: dict, before: dict | None, written: dict | None, timestamp: int, consistency):
        """A set's elements the repair added taken out, those it took out put back, at `timestamp`."""
        where, key_values = self._where(key)
        for column in sorted(set((before or {}) | (written or {})) - set(key)):
            had, has = set((before or {}).get(column) or ()), set((written or {}).get(column) or ())
            for sign, elements in (("-", has - had), ("+", had - has)):
                if elements:
                    cql = f"UPDATE {self.name} USING TIMESTAMP ? SET {column} = {column} {sign} ? WHERE {where}"
                    yield Query(prepared(self.session, cql, consistency), [timestamp, elements, *key_values])

    def add(self, key: dict, deltas: dict, consistency: str):
        where, key_values = self._where(key)
        columns = sorted(deltas)
        increments = ", ".join(f"{column} = {column} + ?" for column in columns)
        statement = prepared(self.session, f"UPDATE {self.name} SET {increments} WHERE {where}", consistency)
        # Not retried: a timed-out increment may have been applied, and a second one would double it.
        yield Query(statement, [*(deltas[column] for column in columns), *key_values], retried=False)

    def reverse(self, key: dict, before: dict | None, written: dict | None, consistency: str):
        """The repair's lightweight transaction taken back by another, conditioned on the row holding what the
        repair wrote; whether it applied."""
        where, key_values = self._where(key)
        if before is None:  # the repair inserted the row
            conditions = [column for column in sorted(written) if column not in key and self._comparable(column)]
            parts = [self._value(column, written[column]) for column in conditions]
            condition = " AND ".join(f"{column} = {part[0]}" for column, part in zip(conditions, parts, strict=True))
            cql = f"DELETE FROM {self.name} WHERE {where}" + (f" IF {condition}" if condition else " IF EXISTS")
            values = [*key_values, *(value for part in parts for value in part[1])]
        elif written is None:  # the repair deleted the row
            columns = sorted(before)
            parts = [self._value(column, before[column]) for column in columns]
            placeholders = ", ".join(part[0] for part in parts)
            cql = f"INSERT INTO {self.name} ({', '.join(columns)}) VALUES ({placeholders}) IF NOT EXISTS"
            values = [value for part in parts for value in part[1]]
        else:  # the repair rewrote some columns
            changed = [c for c in sorted(written) if c not in key and json.dumps(images.encoded(written[c])) !=
                       json.dumps(images.encoded(before.get(c)))]  # fmt: skip
            new, old = (
                [self._value(column, before.get(column)) for column in changed],
                [self._value(column, written[column]) for column in changed],
            )
            assignments = ", ".join(f"{column} = {part[0]}" for column, part in zip(changed, new, strict=True))
            condition = " AND ".join(f"{column} = {part[0]}" for column, part in zip(changed, old, strict=True))
            cql = f"UPDATE {self.name} SET {assignments} WHERE {where} IF {condition}"
            values = [
                *(value for part in new for value in part[1]),
                *key_values,
                *(value for part in old for value in part[1]),
            ]
        rows = yield Query(prepared(self.session, cql, consistency), values, retried=False)
        return bool(one(rows)["[applied]"])

    def _comparable(self, column: str) -> bool:
        """A column a condition can compare (not a collection)."""
        return not self.types[column].startswith(("set<", "list<", "map<"))


def _table_metadata(session, keyspace: str, name: str):
    """The driver's metadata of a table, the whole schema read again when the table is not in it: the product's
    sessions read no schema when they connect (cql.connect), and a session that does follows schema changes by events,
    where an event whose refresh failed or was skipped (a timeout, no schema agreement; logged at debug level only)
    leaves its table out until the next full refresh."""
    for attempt in range(2):
        found = session.cluster.metadata.keyspaces.get(keyspace)
        if found is not None and name in found.tables:
            return found.tables[name]
        if attempt == 0:
            session.cluster.refresh_schema_metadata()
    raise OperatorError(f"table {keyspace}.{name} of a before-image does not exist: it was dropped since the repair")


def decoded(value, cql_type: str):
    """An image's JSON value as the driver binds it for a column of `cql_type`."""
    if value is None:
        return None
    cql_type = cql_type.strip()
    if cql_type.startswith("frozen<"):
        return decoded(value, cql_type[len("frozen<") : -1])
    if cql_type in ("uuid", "timeuuid"):
        return uuid.UUID(value)
    if cql_type == "timestamp":
        return datetime.fromisoformat(value)
    if cql_type == "date":
        return date.fromisoformat(value)
    if cql_type == "blob":
        return bytes.fromhex(value[2:])
    if cql_type == "decimal":
        return Decimal(value)
    if cql_type.startswith(("set<", "list<")):
        inner = cql_type[cql_type.index("<") + 1 : -1]
        items = [decoded(item, inner) for item in value]
        return set(items) if cql_type.startswith("set<") else items
    if cql_type.startswith("map<"):
        key_type, value_type = (part.strip() for part in cql_type[4:-1].split(",", 1))
        return {decoded(key, key_type): decoded(item, value_type) for key, item in value.items()}
    return value
