"""Health checks of a truth, as named counts measured during the scan (judged by the truth's GX suite)."""

from collections.abc import Callable
from functools import reduce

from pyspark.sql import Column
from pyspark.sql import functions as F

from james_consistency.engine.spec import TruthHealth


def counted_problems(problems: dict[str, Column]) -> list[Column]:
    """One count per named problem: how many truth rows have it."""
    return [F.count(F.when(condition, 1)).alias(name) for name, condition in problems.items()]


def any_problem(problems: dict[str, Column]) -> Column:
    return reduce(lambda left, right: left | right, problems.values())


def truth_health(suite: str, problems: Callable[[], dict[str, Column]], columns: tuple[str, ...] = ()) -> TruthHealth:
    """The health part of a spec: each named problem counted during the scan, judged by `suite` (`columns`: the
    truth columns the problems read)."""
    return TruthHealth(
        suite,
        metrics=lambda: counted_problems(problems()),
        problem=lambda: any_problem(problems()),
        columns=columns,
    )


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


MESSAGE_TRUTH_HEALTH = truth_health(
    "messages_truth_health", message_truth_problems, columns=("messageid", "mailboxid", "uid", "modseq")
)
