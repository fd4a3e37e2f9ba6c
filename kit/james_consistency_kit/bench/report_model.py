"""The bench page's model section: `bench model` (model.py) fitted on the messages bench's runs, how it predicts them
and the runs on a ring, and the nights it predicts on a cluster."""

from james_consistency_kit.bench import formatting as show
from james_consistency_kit.bench.model import against_the_bench, fitted, measured_runs, night, on_a_cluster
from james_consistency_kit.bench.results import BenchFile

# The nights the page predicts: 100M messages, 1 % broken, 6 Cassandra nodes of 8 cores (half of them for the night),
# on 10 Spark workers of 1, 4 and 8 cores.
MODELLED_NIGHTS = tuple(
    {"messages": 100_000_000, "broken_share": 0.01, "executor_cores": cores, "nodes": 6, "cores_per_node": 8}
    for cores in (10, 40, 80)
)
CASSANDRA_SHARE = 0.5
WINDOW_MINUTES = 60


def model_section(results: list[BenchFile]) -> str:
    """The model (`bench model`, kit/.../bench/model.py) fitted on the newest messages files on one node of the two
    largest sizes: how it predicts them and the runs on a ring, the constants of each, and the nights of
    MODELLED_NIGHTS; empty without two sizes on one node to fit on."""
    measured = measured_runs(results)
    if len({run.size for run in measured if run.one_node}) < 2:
        return ""
    constants, runs = fitted(measured)
    on_rings = on_a_cluster(measured)
    fits = {"one node": constants, **_fitted_per_ring(on_rings)}
    # A ring measured on another processor than the one-node fit's would be off by the machines' difference too.
    processor = runs[-1].processor
    on_rings_here = [run for run in on_rings if run.processor == processor]
    elsewhere = sorted({run.processor or "an unnamed processor" for run in on_rings if run.processor != processor})
    lines = [
        "## A night on a cluster (model)",
        "",
        "`james-consistency bench model` costs a nightly run (check, repair, verify) from the processor time the "
        "bench measured per row scanned and per candidate re-checked, on Cassandra's side and on Spark's, plus a "
        "fixed part per night. With Cassandra and Spark on machines of their own, the slower side bounds the night. "
        "Fitted on the nightly runs on one node of the newest files of the two largest sizes; a share of "
        f"{CASSANDRA_SHARE:.0%} of the Cassandra nodes' cores is given to the night. The constants come from a 2-core "
        "machine; below the fit, the same model against the runs on the local ring and Spark standalone cluster "
        "(all on these 2 cores: what it checks is the cost per row and per candidate, not the spread over machines). "
        "With replication factor 3 a quorum read asks two replicas and a fix writes three, and the executors are "
        "processes of their own: constants fitted on one node understate a replicated cluster; those fitted on the "
        "ring's own sizes are the ones to predict it with.",
        "",
        *_model_checks("the nightly runs it is fitted on", against_the_bench(constants, runs)),
        *_model_checks(
            "the nightly runs on the local ring and Spark cluster (not fitted on)",
            against_the_bench(constants, on_rings_here),
        ),
        *(
            [
                f"The runs on the local ring and Spark cluster were measured on another processor "
                f"({', '.join(elsewhere)}) than the one-node fit ({processor or 'an unnamed processor'}): the "
                "one-node constants are not checked against them, and each fit's constants and nights below are "
                "its own machine's.",
                "",
            ]
            if elsewhere
            else []
        ),
        *(
            line
            for where, fit in fits.items()
            if where != "one node"
            for line in _model_checks(
                f"the runs on {where}, with the constants fitted on its smallest and largest",
                against_the_bench(fit, [run for run in on_rings if run.where == where]),
            )
        ),
        *_constants_table(fits),
        "| constants from | messages | broken | Spark executor cores | Cassandra nodes | night | Cassandra CPU "
        f"| Spark CPU | bound by | fits in {WINDOW_MINUTES} min |",
        "|---|---:|---:|---:|---|---:|---:|---:|---|---|",
    ]
    for fitted_on, fit in fits.items():
        for wanted in MODELLED_NIGHTS:
            predicted = night(fit, **wanted, cassandra_share=CASSANDRA_SHARE, window_minutes=WINDOW_MINUTES)
            lines.append(
                f"| {fitted_on} | {predicted['messages']:,} | {show.percent(predicted['brokenShare'])} "
                f"| {predicted['executorCores']} | {predicted['cassandraNodes']} x {predicted['coresPerNode']} cores "
                f"| {predicted['seconds']:,} s | {predicted['cassandraCpuSeconds']:,} s "
                f"| {predicted['sparkCpuSeconds']:,} s "
                f"| {predicted['boundBy']} | {'yes' if predicted['fitsInWindow'] else 'no'} |"
            )
    return "\n".join(lines) + "\n"


def _fitted_per_ring(on_rings: list) -> dict:
    """The model's constants fitted on the runs of each ring and Spark cluster that ran two sizes or more."""
    by_place: dict[str, list] = {}
    for run in on_rings:
        by_place.setdefault(run.where, []).append(run)
    return {where: fitted(runs, given=True)[0] for where, runs in by_place.items() if len(runs) > 1}


def _constants_table(fits: dict) -> list[str]:
    """Each fit's constants side by side: what a row, a candidate and a night's fixed part cost where it ran."""
    if len(fits) < 2:
        return []
    rows = (
        ("Cassandra CPU per row read", lambda c: f"{c.cassandra_cpu_per_row * 1e6:.1f} µs"),
        ("Spark CPU per row read", lambda c: f"{c.spark_cpu_per_row * 1e6:.1f} µs"),
        ("Cassandra CPU per candidate", lambda c: f"{c.cassandra_cpu_per_candidate * 1e3:.2f} ms"),
        ("Spark CPU per candidate", lambda c: f"{c.spark_cpu_per_candidate * 1e3:.2f} ms"),
        ("a night's fixed part: wall", lambda c: f"{c.fixed_seconds:.1f} s"),
        ("a night's fixed part: Cassandra CPU", lambda c: f"{c.fixed_cassandra_cpu:.1f} s"),
        ("a night's fixed part: Spark CPU", lambda c: f"{c.fixed_spark_cpu:.1f} s"),
    )
    return [
        "The constants fitted on each place's two sizes:",
        "",
        "| constant | " + " | ".join(fits) + " |",
        "|---|" + "---:|" * len(fits),
        *(f"| {name} | " + " | ".join(shown(fit) for fit in fits.values()) + " |" for name, shown in rows),
        "",
    ]


def _model_checks(title: str, rows: list[dict]) -> list[str]:
    """The model's predictions of measured runs (on the runs' own cores), wall time and each side's CPU."""
    if not rows:
        return []
    return [
        f"The model against {title}:",
        "",
        "| nightly run | where | wall time, measured / model | off | Cassandra CPU, measured / model | off "
        "| Spark CPU, measured / model | off |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
        *(
            f"| {row['messages']:,} messages | {row['where']} "
            f"| {row['measuredSeconds']:.1f} s / {row['predictedSeconds']:.1f} s | {row['off']} "
            f"| {row['measuredCassandraCpuSeconds']:.1f} s / {row['predictedCassandraCpuSeconds']:.1f} s "
            f"| {row['cassandraCpuOff']} "
            f"| {row['measuredSparkCpuSeconds']:.1f} s / {row['predictedSparkCpuSeconds']:.1f} s "
            f"| {row['sparkCpuOff']} |"
            for row in rows
        ),
        "",
    ]
