"""The bench page's impact section: what a night costs James's users (`bench impact`, impact.py), from the latest
impact result: the targets, the traffic's latency per period and per kind of operation, the trade-off between a
night's scan limit and its duration, and the two figures (plots.py)."""

from james_consistency_kit.bench import formatting as show
from james_consistency_kit.bench.results import BenchFile

IMPACT = "impact"
TIMELINE_FIGURE = "impact-latency.png"
TRADE_OFF_FIGURE = "impact-trade-off.png"

KINDS = {
    "all": "every operation",
    "readMailbox": "read a mailbox's page (messageIdTable by uid range)",
    "readMessage": "read a message (imapUidTable by messageId)",
    "readCounters": "read a mailbox's counters",
    "add": "add a message",
    "flags": "change flags",
    "move": "move a message",
    "delete": "delete a message",
}

TARGETS = {
    "defaultNightP99WithinTwice": "a default night keeps the traffic's p99 within 2x its p99 without a night",
    "noFailureDuringDefaultNight": "no traffic operation fails or times out during a default night",
    "defaultNightWithoutTrafficWithin125": "without traffic, a default night takes at most 1.25x the unthrottled one",
    "convergesUnderTraffic": "under traffic every night converges (its verify finds nothing left)",
    "noUserWriteUndone": "no user write is undone",
}

METHOD = """\
`make bench-impact` runs `james-consistency bench impact --messages 100000` on the local node: a James-like client
(`kit/james_consistency_kit/bench/client.py`) sends operations at a fixed rate, about 7 reads for 3 writes: what James
reads most for IMAP and JMAP users (a page of 50 uids of a mailbox's messageIdTable rows, a message's imapUidTable rows
by messageId, a mailbox's counters) and the kit's traffic writes in James's order (add, flags, move, delete; every one
complete, logged). It is open-loop: an operation is sent when it is due whether or not the ones before it finished,
and its latency runs from when it was due, so that a stall of Cassandra shows in every operation that waited behind it
(no coordinated omission). An operation times out after 2 s (the DataStax Java driver 4's default request timeout,
which James uses). The client is a process of its own, at a higher priority than the night (it stands for James,
which has machines of its own); Cassandra, Spark and the client share the machine's cores.

On one seeded keyspace, in one run: without traffic, a default night and an unthrottled one, twice in turn (after one
untimed night: a warm JVM); then with the client running: no night, a default night, an unthrottled night, a night at
each fixed scan limit (shares of the unthrottled scan rate), and no night again. A night is the nightly DAG's work
(a check in token ranges keeping its scan, then the repair and the verify reusing it, with the DAGs' 5 s re-check
delay); each of its steps gets the load's limits as a DAG run's do (the scan reads at them, the repair's and the
verify's re-checks keep to the rate the scan ended at): a default night a scheduled night's (the settings, the
adaptive mode on as JAMES_ADAPTIVE_RATE says), an unthrottled night none. Before each night the keyspace is broken
again (1 % of its messages: messageIdTable rows missing or with stale flags), and the operations due while that
happens belong to no period. Afterwards every write of the client's log is read back against the projection tables
(the check of the live-traffic tests): a night that took a user's write back would show there.

The rate: 100 operations a second, the highest of those tried at which the traffic's p99 without a night is that of a
light load. On 2026-12-04, client alone on 100,000 messages, 40 s each: p99 14.0, 14.2 and 13.4 ms at 25, 50 and 100
operations a second with a quarter of the machine busy at 100; at 200 it was 121 ms. The machine serves 100 with room
to spare; what a night adds to it is the night's.
"""


def impact_section(result: BenchFile, folder: str) -> str:
    """The section of the latest impact result, its figures in `folder` (beside the page)."""
    figures = result.figures
    periods = figures["periods"]
    traffic = figures["traffic"]
    lines = [
        "## What a night costs James's users",
        "",
        METHOD,
        f"### `bench impact`: {figures['messages']:,} messages, {show.percent(figures['inconsistencyRate'])} broken "
        "before each night",
        "",
        f"`{result.name}`, {show.when(figures.get('date'), None)}{show.commit(figures)}. Traffic: "
        f"{traffic['opsPerSecond']:g} operations a second ({traffic['operations']:,} in all). Machine: "
        + show.machine(figures.get("machine") or {}),
        "",
        *_targets(figures),
        *_periods(periods),
        *_kinds(periods),
        *_trade_off(figures["tradeOff"]),
        "![the traffic's latency over time, each period shaded, the nights' steps and scan rates marked]"
        f"({folder}/{TIMELINE_FIGURE})",
        "",
        "![each night under traffic: its duration and the traffic's p99 over the p99 without a night]"
        f"({folder}/{TRADE_OFF_FIGURE})",
        "",
    ]
    return "\n".join(lines)


def impact_note(figures: dict) -> str:
    """An impact result in the history: its ratios."""
    ratios = figures.get("ratios", {})
    return (
        f"impact at {figures.get('traffic', {}).get('opsPerSecond', 0):g} ops/s: traffic p99 "
        f"{show.ratio(ratios.get('defaultNightP99OverNoNight'))} during a default night, "
        f"{show.ratio(ratios.get('unthrottledNightP99OverNoNight'))} during an unthrottled one; default night "
        f"without traffic {show.ratio(ratios.get('defaultOverUnthrottledWithoutTraffic'))} the unthrottled one"
    )


def period_name(name: str) -> str:
    if name.startswith("limit"):
        return f"night at {int(name[5:]):,} rows/s"
    return {
        "noNight": "no night",
        "defaultNight": "default night",
        "unthrottledNight": "unthrottled night",
        "noNightAgain": "no night, after",
    }.get(name, name)


def _targets(figures: dict) -> list[str]:
    ratios, targets = figures["ratios"], figures["targets"]
    alone = figures["withoutTraffic"]["meanSeconds"]
    shown = {
        "defaultNightP99WithinTwice": f"{show.ratio(ratios['defaultNightP99OverNoNight'])} (unthrottled night: "
        f"{show.ratio(ratios['unthrottledNightP99OverNoNight'])})",
        "defaultNightWithoutTrafficWithin125": f"{show.ratio(ratios['defaultOverUnthrottledWithoutTraffic'])} "
        f"({show.seconds(alone['default'])} / {show.seconds(alone['unthrottled'])})",
        "noUserWriteUndone": f"{targets['noUserWriteUndone']['value']} of {figures['userWrites']['logged']:,} writes",
    }
    rows = [
        "| target | measured | limit | met |",
        "|---|---|---|---|",
        *(
            f"| {TARGETS[key]} | {shown.get(key, target['value'])} | {_limit(key, target['limit'])} "
            f"| {'yes' if target['met'] else '**no**'} |"
            for key, target in targets.items()
        ),
        "",
    ]
    return rows


def _limit(key: str, limit: float) -> str:
    return show.ratio(limit) if key in ("defaultNightP99WithinTwice", "defaultNightWithoutTrafficWithin125") else "0"


def _periods(periods: dict) -> list[str]:
    lines = [
        "Every operation of the traffic, per period (a night's period runs from its check's start to its verify's "
        "end):",
        "",
        "| period | the night | p50 | p99 | max | p99 / without a night | errors | timeouts "
        "| machine: busy cores (Cassandra's) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, period in periods.items():
        every = period["latency"]["all"]
        cpu = period.get("machineCpu") or {}
        lines.append(
            f"| {period_name(name)} | {_night(period.get('night'))} | {_ms(every['p50Ms'])} | {_ms(every['p99Ms'])} "
            f"| {_ms(every['maxMs'])} | {show.ratio(period.get('p99OverNoNight'))} | {every['errors']} "
            f"| {every['timeouts']} | {cpu.get('busyCores', '—')} of {cpu.get('cores', '?')} "
            f"({cpu.get('cassandraCores', '—')}) |"
        )
    return [*lines, ""]


def _night(night: dict | None) -> str:
    if not night:
        return "—"
    steps = ", ".join(f"{step} {show.seconds(seconds)}" for step, seconds in night["steps"].items())
    text = f"{show.seconds(night['seconds'])} ({steps}); {night['remainingAfterVerify']} left"
    load = night.get("loadReport") or {}
    if night["load"]["adaptive"]:
        target = load.get("latencyTargetMs")
        text += f"; adaptive, canary target {_ms(target)}" if target else "; adaptive"
        text += f", held back {show.seconds(load.get('heldBackSeconds'))}"
    if load.get("rowsPerSecond"):
        text += f"; scan {round(load['rowsPerSecond']):,} rows/s"
    return text


def _kinds(periods: dict) -> list[str]:
    shown = [name for name in ("noNight", "defaultNight", "unthrottledNight") if name in periods]
    kinds = [kind for kind in KINDS if kind in periods["noNight"]["latency"]]
    return [
        "Per kind of operation, p50 / p99 / max:",
        "",
        "| operation | " + " | ".join(period_name(name) for name in shown) + " |",
        "|---|" + "---:|" * len(shown),
        *(
            f"| {KINDS[kind]} | " + " | ".join(_spread(periods[name]["latency"].get(kind)) for name in shown) + " |"
            for kind in kinds
        ),
        "",
    ]


def _spread(figures: dict | None) -> str:
    if not figures:
        return "—"
    return f"{_ms(figures['p50Ms'])} / {_ms(figures['p99Ms'])} / {_ms(figures['maxMs'])}"


def _trade_off(points: list[dict]) -> list[str]:
    return [
        "The trade-off: each night under traffic, its scan's limit, its duration and what it cost the traffic's p99, "
        "over the whole night and while its scan read (the part the limit governs; the rest is the steps' start-up, "
        "the re-checks and the verify):",
        "",
        "| night | scan limit | duration | traffic p99 / without a night | the same while the scan read |",
        "|---|---|---:|---:|---:|",
        *(
            f"| {period_name(point['night'])} | {_load(point)} | {show.seconds(point['nightSeconds'])} "
            f"| {show.ratio(point['p99OverNoNight'])} | {show.ratio(point.get('p99OverNoNightDuringScan'))} |"
            for point in points
        ),
        "",
    ]


def _load(point: dict) -> str:
    limit = f"{round(point['scanRowsPerSecond']):,} rows/s" if point["scanRowsPerSecond"] else "none"
    return f"{limit}, adaptive" if point["adaptive"] else limit


def _ms(value: float | None) -> str:
    return f"{value:,.1f} ms" if value is not None else "—"
