"""What a finished dag.test() run shows: its task states and what its report task pushed (test code may read the
metadata database; task code may not)."""

from types import SimpleNamespace


def task_states(run) -> dict[str, str]:
    return {ti.task_id: str(ti.state) for ti in run.get_task_instances()}


def report_summary(run, task_id: str = "report") -> dict | None:
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        value = session.scalar(
            select(XComModel.value).where(
                XComModel.dag_id == run.dag_id,
                XComModel.run_id == run.run_id,
                XComModel.task_id == task_id,
                XComModel.key == "return_value",
            )
        )
    return None if value is None else XComModel.deserialize_value(SimpleNamespace(value=value))


def announcements(keyspace) -> list[dict]:
    """The asset events of the keyspace's messages_consistent asset in the metadata database."""
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        rows = session.execute(
            select(AssetEvent.source_dag_id, AssetEvent.source_task_id, AssetEvent.source_run_id, AssetEvent.extra)
            .join(AssetModel, AssetEvent.asset_id == AssetModel.id)
            .where(AssetModel.uri == f"james://{keyspace}/messages_consistent")
        ).all()
    return [dict(row._mapping) for row in rows]
