"""What a James-like writer's log (james_consistency_kit.traffic) says it wrote, checked against the projection
tables: every complete write of the writer must still be there after a repair, or after an undo."""

from james_consistency_kit.traffic import plain

KEY_COLUMNS = {
    "messageidtable": ("mailboxid", "uid"),
    "messagedeleted": ("mailboxid", "uid"),
    "firstunseen": ("mailboxid", "uid"),
    "mailboxrecents": ("mailboxid", "recent_mesage_uid"),
    "applicableflag": ("mailboxid",),
    "aclv2": ("id", "key"),
    "usermailboxacl": ("username", "mailboxid"),
}


def key_of(table: str, key: dict) -> tuple:
    return (table, *(str(key[column]) for column in KEY_COLUMNS[table]))


def read_projections(cql, keyspace) -> dict:
    """(table, key...) -> the row as plain JSON values, for every projection table the writer writes."""
    rows = {}
    for table, columns in KEY_COLUMNS.items():
        for row in cql.execute(f"SELECT * FROM {keyspace}.{table}"):
            values = {name: plain(value) for name, value in row._asdict().items()}
            rows[(table, *(str(values[column]) for column in columns))] = values
    return rows


def undone_writes(log: list[dict], projections: dict) -> list[dict]:
    """Projection rows whose last write by the writer (a complete operation) is not what the table holds now."""
    last: dict = {}
    undone = []
    for entry in log:
        for change in entry["projections"]:
            key = key_of(change["table"], change["key"])
            if change["table"] == "applicableflag":
                # Add-only: every keyword a complete operation added must still be there.
                held = set((projections.get(key) or {}).get("userflags") or ())
                if not entry["partial"] and not set(change["row"]["userflags"]) <= held:
                    undone.append({"key": key, "wrote": change["row"], "now": projections.get(key)})
                continue
            last[key] = (entry, change)
    for key, (entry, change) in last.items():
        if entry["partial"] or "error" in entry:
            continue
        now = projections.get(key)
        wrote = change["row"]
        if wrote is None:
            ok = now is None
        else:
            ok = now is not None and all(now.get(column) == value for column, value in wrote.items())
        if not ok:
            undone.append({"key": key, "op": entry["op"], "wrote": wrote, "now": now})
    return undone
