"""James 3.8.1's own tasks on the bench keyspace (the harness, james/harness-3.8.1/): SolveMessageInconsistencies
unthrottled and at its default 100 messages/s, RecomputeMailboxCounters, and James's report after our repair."""

import logging
import time
from dataclasses import dataclass
from functools import partial

from james_consistency.cassandra.cql import CassandraSettings, close, connect

from james_consistency_kit import james_harness
from james_consistency_kit.bench.jobs import run_job
from james_consistency_kit.bench.keyspace import (
    JAMES_VERSION,
    TARGET_FAULTS,
    bench_keyspace,
    break_kinds,
    prepare_keyspace,
)
from james_consistency_kit.bench.measure import timed

log = logging.getLogger("james_consistency")

JAMES_DEFAULT_RATE = 100  # SolveMessageInconsistenciesService.RunningOptions.DEFAULT, messages per second
# "Unthrottled": James's throttle makes one window of this many messages (RunningOptions accepts any positive int,
# as webadmin's messagesPerSecond does); its only remaining cost is the 1 s delay of that window, once per pass.
JAMES_UNTHROTTLED = 2**31 - 1
JAMES_PHASE_LIMIT_SECONDS = 600  # a James phase estimated longer runs on the sample keyspace instead
NOT_BUILT = {"skipped": "the James 3.8.1 harness is not built: make setup"}


def james_solve(
    settings: CassandraSettings, keyspace: str, target: str, messages_per_second: int | None = None
) -> dict:
    """James 3.8.1's own task on `keyspace` (one harness JVM): its report without the list of fixed ids, and the
    task's own wall time (the JVM start and the Guice wiring excluded)."""
    arguments = [target, "--keyspace", keyspace]
    if messages_per_second is not None:
        arguments += ["--messages-per-second", str(messages_per_second)]
    log.info("bench: James %s %s on %s", target, messages_per_second or "", keyspace)
    outcome = james_harness.run(JAMES_VERSION, "solve", arguments, settings)
    report = dict(outcome["additionalInformation"])
    for listed in ("fixedInconsistencies", "errors", "failedMailboxes"):
        if listed in report:
            report[listed] = len(report[listed])
    report.pop("timestamp", None)
    report.pop("runningOptions", None)
    return {"seconds": outcome["seconds"], "result": outcome["result"], "report": report}


def _james_message_figures(run: dict, keyspace: str, messages: int) -> dict:
    report = run["report"]
    truth_rows = report["processedImapUidEntries"]
    return {
        "keyspace": keyspace,
        "messages": messages,
        "seconds": run["seconds"],
        "truthRowsPerSecond": round(truth_rows / run["seconds"]) if run["seconds"] else None,
        "result": run["result"],
        **report,
    }


@dataclass(frozen=True)
class JamesSample:
    """The keyspace James's own message task runs on: the bench keyspace of min(messages, sample) messages, broken at
    the benched rate before each run (the benched keyspace itself when it is not larger than the sample)."""

    spark: object
    settings: CassandraSettings
    messages: int
    sample_messages: int
    rate: float
    seed: int
    prefix: str
    replication_factor: int = 1

    @property
    def keyspace(self) -> str:
        return bench_keyspace(self.sample_messages, self.prefix)

    @property
    def measured_on(self) -> str:
        if self.sample_messages == self.messages:
            return "the benched keyspace"
        return f"a sample keyspace of {self.sample_messages}"

    def break_again(self, offset: int) -> dict:
        return prepare_keyspace(
            self.spark,
            self.settings,
            self.keyspace,
            self.sample_messages,
            self.rate,
            self.seed + offset,
            self.replication_factor,
        )["broken"]

    def solve(self, messages_per_second: int, broken: dict, **extra) -> dict:
        """James's task on the sample, its figures (`broken` is what was broken before it)."""
        run = james_solve(self.settings, self.keyspace, "messages", messages_per_second)
        figures = _james_message_figures(run, self.keyspace, self.sample_messages)
        return {**figures, **extra, "broken": broken, "measuredOn": self.measured_on}


def james_message_phases(
    spark,
    settings: CassandraSettings,
    *,
    messages: int,
    rate: float,
    sample: int,
    seed: int,
    full_rows: int,
    prefix: str = "bench_james",
    replication_factor: int = 1,
) -> dict:
    """James's SolveMessageInconsistencies unthrottled and at its default rate, and James's report after our repair,
    on the sample keyspace. When the benched keyspace is larger, the unthrottled run is repeated on it if the
    sample's throughput puts it under JAMES_PHASE_LIMIT_SECONDS."""
    on = JamesSample(spark, settings, messages, min(messages, sample), rate, seed, prefix, replication_factor)
    figures = {"james": JAMES_VERSION, "sampleKeyspace": on.keyspace, "sampleMessages": on.sample_messages}
    unthrottled = figures["unthrottled"] = on.solve(JAMES_UNTHROTTLED, on.break_again(2))
    sample_rows = unthrottled["processedImapUidEntries"] + unthrottled["processedMessageIdEntries"]
    figures["defaultRate"] = _at_default_rate(on, sample_rows)
    figures.update(_our_repair_then_james(on))
    if on.sample_messages < messages:
        _unthrottled_on_the_benched_keyspace(on, figures, sample_rows / max(unthrottled["seconds"], 0.001), full_rows)
    return figures


def _at_default_rate(on: JamesSample, sample_rows: int) -> dict:
    """Both passes are throttled: the task reads (truth + projection rows) / rate seconds at least."""
    estimate = sample_rows / JAMES_DEFAULT_RATE
    if estimate > JAMES_PHASE_LIMIT_SECONDS:
        return {"skipped": f"estimated {estimate:.0f} s > {JAMES_PHASE_LIMIT_SECONDS} s: lower --james-sample"}
    return on.solve(JAMES_DEFAULT_RATE, on.break_again(3), messagesPerSecond=JAMES_DEFAULT_RATE)


def _our_repair_then_james(on: JamesSample) -> dict:
    """Our repair on the same (re-broken) keyspace, then James: its report must add nothing."""
    broken = on.break_again(4)
    repair = partial(run_job, on.spark, on.settings, "messages", on.keyspace, "repair", allow_destructive=True)
    ours = timed("repair (James sample)", on.spark, on.settings.port, repair)
    after = james_solve(on.settings, on.keyspace, "messages", JAMES_UNTHROTTLED)["report"]
    fixed_by_james = {
        name: after[name] for name in ("addedMessageIdEntries", "updatedMessageIdEntries", "removedMessageIdEntries")
    }
    return {
        "ourRepairOnSample": {
            "seconds": ours.seconds,
            "truthRowsPerSecond": round(ours.result["processedImapUidEntries"] / ours.seconds),
            "broken": broken,
            "found": ours.result["inconsistencies"],
        },
        "jamesAfterOurRepair": {**fixed_by_james, "addsNothing": not any(fixed_by_james.values())},
    }


def _unthrottled_on_the_benched_keyspace(on: JamesSample, figures: dict, sample_rate: float, full_rows: int) -> None:
    estimate = full_rows / sample_rate
    if estimate > JAMES_PHASE_LIMIT_SECONDS:
        figures["unthrottled"]["fullRunEstimateSeconds"] = round(estimate)
        return
    whole = JamesSample(on.spark, on.settings, on.messages, on.messages, on.rate, on.seed, on.prefix)
    figures["unthrottledOnSample"] = figures["unthrottled"]
    figures["unthrottled"] = whole.solve(JAMES_UNTHROTTLED, whole.break_again(5))


def _counter_rows(settings: CassandraSettings, keyspace: str) -> dict:
    session = connect(settings, keyspace)
    try:
        rows = session.execute(f"SELECT mailboxid, count, unseen FROM {keyspace}.mailboxcounters")
        return {row.mailboxid: (row.count, row.unseen) for row in rows}
    finally:
        close(session)


def james_counters_phases(
    settings: CassandraSettings, keyspace: str, *, truth_rows: int, rate: float, seed: int
) -> dict:
    """James's RecomputeMailboxCounters (it has no rate) on the benched keyspace: first right after our repair, where
    it must change no counter, then on the keyspace broken again at the same rate, timed."""
    if not james_harness.is_built(JAMES_VERSION):
        return dict(NOT_BUILT)
    before = _counter_rows(settings, keyspace)
    after_ours = james_solve(settings, keyspace, "counters")
    changed = sum(1 for mailbox, counts in _counter_rows(settings, keyspace).items() if before.get(mailbox) != counts)
    broken = break_kinds(settings, keyspace, TARGET_FAULTS["counters"], rate, seed + 7 + int(time.time()))
    run = james_solve(settings, keyspace, "counters")
    return {
        "james": JAMES_VERSION,
        "measuredOn": "the benched keyspace",
        "broken": broken,
        "seconds": run["seconds"],
        "truthRowsPerSecond": round(truth_rows / run["seconds"]) if run["seconds"] else None,
        "result": run["result"],
        **run["report"],
        "afterOurRepair": {
            "seconds": after_ours["seconds"],
            "result": after_ours["result"],
            "countersChangedByJames": changed,
            "addsNothing": changed == 0,
        },
    }
