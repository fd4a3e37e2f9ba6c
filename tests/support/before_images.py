"""What a repair's before-image recorder left in the project's keyspace."""

from james_consistency.engine.before_images import KEYS_TABLE
from james_consistency.engine.project_keyspace import PROJECT_KEYSPACE


def tables_with_key_entries(cql, keyspace: str) -> set[str]:
    """The tables of `keyspace` whose keys a repair entered in the keys table (which run wrote a key last)."""
    rows = cql.execute(f"SELECT keyspace_name, table_name FROM {PROJECT_KEYSPACE}.{KEYS_TABLE}")
    return {row.table_name for row in rows if row.keyspace_name == keyspace}
