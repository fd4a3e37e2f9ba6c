"""`james-consistency bench <target>`: how fast a repair is, against the floor (and, for messages, against James).

In one Spark session it times, on the same broken keyspace:
- the floor: a bare connector scan of imapUidTable and messageIdTable (count only);
- the dry run (check) and the repair, as the operator runs them (gates included);
- a James-style reference on a sample: the solve-message-inconsistencies pass B, one truth row at a time through
  the Python driver (read the projection row, re-read the truth, write when they differ), unthrottled;
- James 3.8.1 itself (the harness, james/harness-3.8.1/): SolveMessageInconsistenciesTask unthrottled and at its
  default 100 messages/s, RecomputeMailboxCountersTask for `bench counters`, and James's report after our repair.
The bench keyspace is created by James's own `schema` command (its whole 3.8.1 schema, which its DAOs need), then
filled by the project's fast seeder: the message, mailbox, ACL and counter tables are column-identical.
It samples the driver's memory while each phase runs: the JVM heap (in local mode the executors share it) and the
Python process's resident set; and the machine's processor time each phase took, all of it and the local Cassandra
nodes' share (on a machine they share with Spark, a phase that keeps every core busy cannot get faster than the work
it does: the figures say which work that is).

`bench impact` measures what a night costs James's users instead: a James-like client's latency without a night and
during nights of each kind (impact.py).

Modules: keyspace (seeding and breaking the benched keyspace), measure (time, processor time, heap), jobs (the
engine), messages (the phases of `bench messages`), projection (`bench <other target>`), james (James's own tasks),
impact, client and latency (`bench impact`: its periods, its James-like client, its latency figures), results (the
JSON files and the run's record), report (`bench report`: docs/benchmarks.md from the JSON files; its sections in
report_phases, report_impact, report_model and report_history, its figures in plots, formatting in formatting).
"""

from james_consistency_kit.bench.keyspace import TARGET_FAULTS, bench_keyspace
from james_consistency_kit.bench.measure import CpuClock
from james_consistency_kit.bench.messages import bench_messages
from james_consistency_kit.bench.projection import bench_projection
from james_consistency_kit.bench.results import write_figures

__all__ = ["TARGET_FAULTS", "CpuClock", "bench_keyspace", "bench_messages", "bench_projection", "write_figures"]
