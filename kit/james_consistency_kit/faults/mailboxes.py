"""Faults of the mailbox tables: a path without its mailbox, a mailbox without its path, one id under two paths, two
ids claiming one path (the offline mailbox repair's cases)."""

import random
import uuid
from collections.abc import Callable

from james_consistency_kit.faults.base import Damage, Injection, register, row_values


def _path_table(job: Injection) -> str:
    return "mailboxpathv3" if job.generation == "3.9" else "mailboxpathv2"


def _path_projection(job: Injection) -> str:
    return "mailboxPathV3" if job.generation == "3.9" else "mailboxPathV2"


def _path_text(namespace: str, user: str, name: str) -> str:
    return f"{namespace}:{user}:{name}"


def _registered(job: Injection) -> Callable[[list], list]:
    """Keeps the mailbox rows registered under their own path (a consistent pair)."""

    def valid(rows: list) -> list:
        paths = job.read(
            f"SELECT mailboxid FROM {job.keyspace}.{_path_table(job)} "
            "WHERE namespace = ? AND user = ? AND mailboxname = ?",
            [(row.mailboxbase.namespace, row.mailboxbase.user, row.name) for row in rows],
        )
        return [row for row, path in zip(rows, paths, strict=True) if path is not None and path.mailboxid == row.id]

    return valid


def _mailboxes(job: Injection) -> list:
    return job.pick(
        f"SELECT id, mailboxbase, name, uidvalidity FROM {job.keyspace}.mailbox",
        lambda r: (r.id,),
        where=lambda r: r.mailboxbase is not None,
        valid=_registered(job),
    )


def mailbox_path_orphan(job: Injection) -> list[dict]:
    """Mailbox deletion half-applied (or creation: path written, mailbox row not): a path without its mailbox."""
    broken = []
    for row in _mailboxes(job):
        job.write(f"DELETE FROM {job.keyspace}.mailbox WHERE id = ?", (row.id,))
        broken.append(
            {
                "projection": _path_projection(job),
                "mailboxPath": _path_text(row.mailboxbase.namespace, row.mailboxbase.user, row.name),
                "mailboxId": str(row.id),
                "expected_kind": "orphan-path",
                "table": "mailbox",
                "before": row_values(row),
                "after": None,
            }
        )
    return broken


def mailbox_orphan(job: Injection) -> list[dict]:
    """The mailbox row stays, its path registration is gone: the mailbox cannot be found by its name."""
    broken = []
    for row in _mailboxes(job):
        namespace, user = row.mailboxbase.namespace, row.mailboxbase.user
        job.write(
            f"DELETE FROM {job.keyspace}.{_path_table(job)} WHERE namespace = ? AND user = ? AND mailboxname = ?",
            (namespace, user, row.name),
        )
        broken.append(
            {
                "projection": "mailbox",
                "mailboxId": str(row.id),
                "mailboxPath": _path_text(namespace, user, row.name),
                "expected_kind": "orphan-mailbox",
                "table": _path_projection(job),
                "before": {"mailboxid": str(row.id)},
                "after": None,
            }
        )
    return broken


def mailbox_two_paths(job: Injection) -> list[dict]:
    """A rename stopped after its first write (register the new path): the mailbox row keeps its old name, and its
    id is registered under both paths."""
    broken = []
    for row in _mailboxes(job):
        namespace, user = row.mailboxbase.namespace, row.mailboxbase.user
        new_name = f"{row.name}-renamed"
        if job.generation == "3.9":
            job.write(
                f"INSERT INTO {job.keyspace}.mailboxpathv3 (namespace, user, mailboxname, mailboxid, uidvalidity) "
                "VALUES (?, ?, ?, ?, ?)",
                (namespace, user, new_name, row.id, row.uidvalidity),
            )
        else:
            job.write(
                f"INSERT INTO {job.keyspace}.mailboxpathv2 (namespace, user, mailboxname, mailboxid) "
                "VALUES (?, ?, ?, ?)",
                (namespace, user, new_name, row.id),
            )
        broken.append(
            {
                "projection": _path_projection(job),
                "mailboxPath": _path_text(namespace, user, new_name),
                "mailboxId": str(row.id),
                "registeredPath": _path_text(namespace, user, row.name),
                "expected_kind": "one-id-two-paths",
                "table": _path_projection(job),
                "before": None,
                "after": {"mailboxid": str(row.id)},
            }
        )
    return broken


def mailbox_path_conflict(job: Injection) -> list[dict]:
    """Delete then re-create half-applied: a second mailbox row claims a path registered to another id."""
    broken = []
    for row in _mailboxes(job):
        rng = random.Random(f"{job.seed}|{row.id}")
        # Another timeuuid of the same instant: only the node field differs.
        intruder = uuid.UUID(int=row.id.int ^ (rng.getrandbits(47) | 1), version=1)
        namespace, user = row.mailboxbase.namespace, row.mailboxbase.user
        job.write(
            f"INSERT INTO {job.keyspace}.mailbox (id, mailboxbase, name, uidvalidity) "
            "VALUES (?, {namespace: ?, user: ?}, ?, ?)",
            (intruder, namespace, user, row.name, row.uidvalidity + 1),
        )
        broken.append(
            {
                "projection": "mailbox",
                "mailboxId": str(intruder),
                "registeredMailboxId": str(row.id),
                "mailboxPath": _path_text(namespace, user, row.name),
                "expected_kind": "two-ids-one-path",
                "table": "mailbox",
                "before": None,
                "after": {"namespace": namespace, "user": user, "name": row.name, "uidvalidity": row.uidvalidity + 1},
            }
        )
    return broken


register(
    {
        "mailbox-path-orphan": Damage("path registration without its mailbox row", ("mailbox",), mailbox_path_orphan),
        "mailbox-orphan": Damage("mailbox row without its path registration", ("mailbox",), mailbox_orphan),
        "mailbox-two-paths": Damage(
            "one mailbox id registered under two paths (rename half-applied)", ("mailbox",), mailbox_two_paths
        ),
        "mailbox-path-conflict": Damage("two mailbox ids claiming one path", ("mailbox",), mailbox_path_conflict),
    }
)
