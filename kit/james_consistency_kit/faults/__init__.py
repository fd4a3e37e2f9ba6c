"""`james-consistency break`: reproduce one of James's partial-write failures and record exactly what was broken.

Each kind does what a half-applied James write leaves behind (see the reference's "How James writes"): the write
that succeeded is kept, the one that failed is missing or stale. Candidate rows are streamed from Cassandra with the
Python driver (about 10 s per million rows, memory bounded by the rows chosen, not the table) and chosen by a hash
of their key, the kind and the random seed: about `rate` of them, at least one when there is any. A chosen row is
checked first (its counterpart must exist, so the damage is real even in an already broken keyspace); all damage is
written after the scan, concurrently.

The manifest (JSON) lists every broken row: the projection where a repair will find it, its key columns, the
inconsistency kind the repair should classify it as, the table written with the values before and after, and,
under `also`, the other inconsistencies the same failure leaves (a half-applied delete leaves the counters too).

One module per family of tables (messages, acl, mailboxes, indexes, counters and quotas), each registering its kinds
with `base`, which holds what they share and `inject`.
"""

# Each family registers its kinds when imported: in this order, that of `break --kind list`.
# isort: off
from james_consistency_kit.faults import messages, acl, mailboxes, indexes, counters  # noqa: F401

# isort: on
from james_consistency_kit.faults.base import FAULTS_DIR, KINDS, Damage, Injection, inject, kinds_text

__all__ = ["FAULTS_DIR", "KINDS", "Damage", "Injection", "inject", "kinds_text"]
