"""The benched keyspace: seeded once per size (and reused until the orphans broken shrank it), broken again before
each phase that repairs it."""

import json
import logging
import time
from collections.abc import Callable

from james_consistency.cassandra.cql import CassandraSettings, close, connect
from james_consistency.runtime.paths import LOCAL_DIR

from james_consistency_kit import james_harness

# The James release the bench compares with; when its harness is built, it creates the bench keyspace.
JAMES_VERSION = "3.8.1"

log = logging.getLogger("james_consistency")

BROKEN_KINDS = ("projection-missing", "projection-stale-flags", "projection-orphan")
# A bench's start seeds its keyspace afresh once it holds fewer messages than this share of the size asked for.
RESEED_BELOW = 0.98
# What the keyspace's marker counts of the messages the orphans deleted since it was seeded.
MESSAGES_DELETED = "messagesDeleted"

# The faults that break each projection other than messageIdTable (the bench of `messages` has its own).
TARGET_FAULTS = {
    "acl": ("acl-user-missing", "acl-user-wrong-rights", "acl-user-extra"),
    "aclv2": ("aclv2-missing", "aclv2-wrong"),
    "deleted": ("deleted-missing", "deleted-stale"),
    "unseen": ("unseen-missing", "unseen-stale"),
    "recent": ("recent-missing", "recent-stale"),
    "flags": ("applicable-flag-missing",),
    "counters": ("counters-wrong",),
    "quotas": ("quota-wrong",),
}


def bench_keyspace(messages: int, prefix: str = "bench_james") -> str:
    return f"{prefix}_{messages}"


def bench_prefix(replication_factor: int = 1) -> str:
    """The bench keyspaces' prefix: a replicated bench (on a ring) seeds keyspaces of its own."""
    return "bench_james" if replication_factor == 1 else f"bench_james_rf{replication_factor}"


def prepare_keyspace(
    spark,
    settings: CassandraSettings,
    keyspace: str,
    messages: int,
    rate: float,
    seed: int,
    replication_factor: int = 1,
    repair: Callable[[], object] | None = None,
    reseed_below: float | None = None,
) -> dict:
    """Seed `messages` messages (reused when the keyspace already holds them), then break `rate` of them. The keyspace
    is `repair`ed first: a bench stopped mid-way left it broken, and the rates would add up. With
    `reseed_below` (a bench's start), a reused keyspace left with fewer messages than that share of `messages` is
    dropped and seeded afresh: each orphan broken is a message deleted from imapUidTable for good, and the size
    benched would drift down bench after bench."""
    marker = LOCAL_DIR / "bench" / f"{keyspace}.json"
    seeded = json.loads(marker.read_text()) if _exists(settings, keyspace) and marker.exists() else None
    if seeded is not None and reseed_below is not None:
        left = _messages_left(spark, keyspace, seeded)
        if left < reseed_below * messages:
            log.info("bench keyspace %s holds %d of its %d messages: seeded afresh", keyspace, left, messages)
            from james_consistency_kit.seed import drop_keyspace

            drop_keyspace(settings, keyspace)
            seeded = None
    if seeded is None or seeded.get("requested", seeded.get("messages")) != messages:
        seeded = _seed(spark, settings, keyspace, messages, seed, replication_factor)
        _write_marker(marker, seeded)
    if repair is not None:
        # Seeded or reused, the keyspace is repaired before it is broken: the phases timed next then start in a JVM
        # that has scanned and repaired once (right after a seeding, the timed dry run ran 40 % slower).
        repair()
    # Break other rows than last time.
    kinds = BROKEN_KINDS if rate > 0 else ()
    broken = break_kinds(settings, keyspace, kinds, rate / len(BROKEN_KINDS), seed + int(time.time()))
    seeded[MESSAGES_DELETED] = seeded.get(MESSAGES_DELETED, 0) + broken.get("projection-orphan", 0)
    _write_marker(marker, seeded)
    return {"seeded": seeded, "broken": broken}


def _write_marker(marker, seeded: dict) -> None:
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps(seeded, default=str))


def _messages_left(spark, keyspace: str, seeded: dict) -> int:
    """The messages a reused keyspace still holds: as its marker counts them, else (a marker from before the count)
    as imapUidTable does."""
    if MESSAGES_DELETED in seeded:
        return seeded["messages"] - seeded[MESSAGES_DELETED]
    from james_consistency.engine.tables import read_table

    return read_table(spark, keyspace, "imapuidtable", ("messageid",)).count()


def break_kinds(settings: CassandraSettings, keyspace: str, kinds, rate: float, seed: int) -> dict[str, int]:
    """Break `rate` of the rows of each kind; how many each broke."""
    from james_consistency_kit.faults import inject

    return {
        kind: inject(settings, keyspace=keyspace, kind=kind, rate=rate, random_seed=seed, manifest_path=None)["count"]
        for kind in kinds
    }


def _exists(settings: CassandraSettings, keyspace: str) -> bool:
    session = connect(settings)
    try:
        query = "SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = %s"
        return session.execute(query, (keyspace,)).one() is not None
    finally:
        close(session)


def _seed(spark, settings: CassandraSettings, keyspace: str, messages: int, seed: int, replication_factor: int) -> dict:
    from james_consistency_kit.seed import seed_platform

    if james_harness.is_built(JAMES_VERSION):
        # James's DAOs are wired on its whole schema (currentQuota, ...): let James create the keyspace.
        arguments = ["--keyspace", keyspace, "--replication-factor", str(replication_factor)]
        james_harness.run(JAMES_VERSION, "schema", arguments, settings)
    mailboxes_per_user = 10
    messages_per_mailbox = 1000 if messages >= 100_000 else 100 if messages >= 1000 else max(1, messages // 10)
    seeded = seed_platform(
        settings,
        keyspace=keyspace,
        users=max(1, messages // (mailboxes_per_user * messages_per_mailbox)),
        mailboxes_per_user=mailboxes_per_user,
        messages_per_mailbox=messages_per_mailbox,
        random_seed=seed,
        spark=spark,
        replication_factor=replication_factor,
    )
    return {**seeded, "requested": messages}
