"""Health checks of a truth, as named counts measured during the scan (judged by the truth's GX suite)."""

from functools import reduce

from pyspark.sql import Column
from pyspark.sql import functions as F


def counted_problems(problems: dict[str, Column]) -> list[Column]:
    """One count per named problem: how many truth rows have it."""
    return [F.count(F.when(condition, 1)).alias(name) for name, condition in problems.items()]


def any_problem(problems: dict[str, Column]) -> Column:
    return reduce(lambda left, right: left | right, problems.values())


def message_truth_problems() -> dict[str, Column]:
    """imapUidTable rows no James would write."""
    uid, modseq = F.col("uid"), F.col("modseq")
    return {
        "null_messageid": F.col("messageid").isNull(),
        "null_mailboxid": F.col("mailboxid").isNull(),
        "null_uid": uid.isNull(),
        "uid_below_1": uid < 1,
        "null_modseq": modseq.isNull(),
        "negative_modseq": modseq < 0,
    }


def acl_event_problems() -> dict[str, Column]:
    return {
        "null_aggregateid": F.col("aggregateid").isNull(),
        "negative_eventid": F.col("eventid") < 0,
        "null_event": F.col("event").isNull(),
    }


def legacy_acl_problems() -> dict[str, Column]:
    return {"null_id": F.col("id").isNull()}
