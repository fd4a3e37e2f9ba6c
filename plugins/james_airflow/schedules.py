"""The night's order between DAGs. A DAG that ended well on a keyspace emits that keyspace's asset through an alias
(the keyspace is only known at run time, from the trigger form); the DAG that must follow it is scheduled on the asset
of the deployment's keyspace. A dry run, or a run on another keyspace, therefore starts nothing."""

from airflow.sdk import Asset, AssetAlias

# Emitted by message_consistency's report when no task failed and it was not a dry run: messageIdTable matches
# imapUidTable in that keyspace.
MESSAGES_CONSISTENT = AssetAlias("messages_consistent")


def keyspace_asset(alias: AssetAlias, keyspace: str) -> Asset:
    """The asset behind `alias` for one keyspace, e.g. james://james_demo/messages_consistent."""
    return Asset(uri=f"james://{keyspace}/{alias.name}")
