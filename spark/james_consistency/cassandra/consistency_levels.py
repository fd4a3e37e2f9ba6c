"""Cassandra's consistency levels a repair may re-read its truth at (`--truth-consistency`), the default first.

A module of its own, without the Cassandra driver, so the DAG files (parsed with no heavy import) share it with the
jobs; `james_consistency.cassandra.cql` re-exports it.
"""

# What the repairs read their truth and write at unless told otherwise, and the Python driver sessions' default.
DEFAULT_CONSISTENCY_LEVEL = "LOCAL_QUORUM"
CONSISTENCY_LEVELS = (DEFAULT_CONSISTENCY_LEVEL, "QUORUM", "LOCAL_SERIAL", "SERIAL", "ONE", "LOCAL_ONE", "ALL")
