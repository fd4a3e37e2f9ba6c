"""Faults of the counting projections: mailboxCounters and the users' current quotas off by increments lost or
doubled."""

from james_consistency_kit.faults.base import Damage, Injection, register


def counters_wrong(job: Injection) -> list[dict]:
    """Counter increments lost or doubled (James only logs a failed counter write): one `count` increment lost,
    one `unseen` increment applied twice."""
    broken = []
    for row in job.pick(f"SELECT mailboxid, count, unseen FROM {job.keyspace}.mailboxcounters", lambda r: (r[0],)):
        job.write(
            f"UPDATE {job.keyspace}.mailboxcounters SET count = count - 1, unseen = unseen + 1 WHERE mailboxid = ?",
            (row.mailboxid,),
        )
        broken.append(
            {
                "projection": "mailboxCounters",
                "mailboxId": str(row.mailboxid),
                "expected_kind": "outdated",
                "table": "mailboxCounters",
                "before": {"count": row.count, "unseen": row.unseen},
                "after": {"count": (row.count or 0) - 1, "unseen": (row.unseen or 0) + 1},
            }
        )
    return broken


def quota_wrong(job: Injection) -> list[dict]:
    """A user's current quota off: usage increments lost or doubled."""
    broken = []
    if job.quota_table == "quotacurrentvalue":
        query = f"SELECT identifier, quotacomponent, quotatype, currentvalue FROM {job.keyspace}.quotacurrentvalue"
        for row in job.pick(query, lambda r: tuple(r)[:3], where=lambda r: r.quotacomponent == "MAILBOX"):
            delta = 7 if row.quotatype == "count" else 4_096
            job.write(
                f"UPDATE {job.keyspace}.quotacurrentvalue SET currentvalue = currentvalue + ? "
                "WHERE identifier = ? AND quotacomponent = ? AND quotatype = ?",
                (delta, row.identifier, row.quotacomponent, row.quotatype),
            )
            broken.append(
                {
                    "projection": "quotaCurrentValue",
                    "quotaRoot": row.identifier,
                    "quotaComponent": row.quotacomponent,
                    "quotaType": row.quotatype,
                    "expected_kind": "outdated",
                    "table": "quotaCurrentValue",
                    "before": {"currentvalue": row.currentvalue},
                    "after": {"currentvalue": row.currentvalue + delta},
                }
            )
    else:
        query = f"SELECT quotaroot, messagecount, storage FROM {job.keyspace}.currentquota"
        for row in job.pick(query, lambda r: (r.quotaroot,)):
            job.write(
                f"UPDATE {job.keyspace}.currentquota SET messagecount = messagecount + 7, storage = storage - 100 "
                "WHERE quotaroot = ?",
                (row.quotaroot,),
            )
            broken.append(
                {
                    "projection": "currentQuota",
                    "quotaRoot": row.quotaroot,
                    "expected_kind": "outdated",
                    "table": "currentQuota",
                    "before": {"messagecount": row.messagecount, "storage": row.storage},
                    "after": {"messagecount": (row.messagecount or 0) + 7, "storage": (row.storage or 0) - 100},
                }
            )
    return broken


register(
    {
        "counters-wrong": Damage(
            "mailboxCounters count/unseen off (lost or doubled increment)", ("mailboxcounters",), counters_wrong
        ),
        "quota-wrong": Damage("current quota off (3.9 quotaCurrentValue, 3.5 currentQuota)", (), quota_wrong),
    }
)
