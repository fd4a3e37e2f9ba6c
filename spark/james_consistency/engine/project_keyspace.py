"""The project's own keyspace (`james_consistency`): the token-range journal and the before-images live there, created
with the replication of the keyspace the run repairs, so that they are as available as the data."""

PROJECT_KEYSPACE = "james_consistency"


def ensure_project_keyspace(session, repaired_keyspace: str) -> None:
    replication = session.execute(
        "SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = %s", (repaired_keyspace,)
    ).one()
    strategy = dict(replication.replication) if replication else {"class": "SimpleStrategy", "replication_factor": 1}
    options = ", ".join(f"'{key}': '{value}'" for key, value in strategy.items())
    session.execute(f"CREATE KEYSPACE IF NOT EXISTS {PROJECT_KEYSPACE} WITH replication = {{{options}}}")
