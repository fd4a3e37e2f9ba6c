"""What the Consistency view asks Airflow itself, from inside its api-server: who may see or trigger what (the auth
manager, as Airflow's REST API asks it), a DAG run's job tasks, and the approvals waiting (the metadata database)."""

from dataclasses import dataclass
from datetime import datetime

from airflow.api_fastapi.app import get_auth_manager
from airflow.api_fastapi.auth.managers.models.base_user import BaseUser
from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity, DagDetails
from airflow.models.dag import DagModel
from airflow.models.dagrun import DagRun
from airflow.models.hitl import HITLDetail
from airflow.models.taskinstance import TaskInstance
from airflow.utils.session import create_session
from airflow.utils.state import TaskInstanceState
from sqlalchemy import select

from james_airflow.consistency_dag import HEAVY_POOL

# The DAGs whose runs wait for a human: the offline mailbox repair and the undo.
APPROVAL_DAGS = ("mailbox_offline_repair", "undo_repair")
UNDO_DAG = "undo_repair"
ENDED = (TaskInstanceState.SUCCESS, TaskInstanceState.FAILED, TaskInstanceState.UP_FOR_RETRY)


def _authorized(user: BaseUser, dag_id: str, method: str) -> bool:
    return get_auth_manager().is_authorized_dag(
        method=method,
        access_entity=DagAccessEntity.RUN,
        details=DagDetails(id=dag_id, team_name=DagModel.get_team_name(dag_id)),
        user=user,
    )


def may_read_runs(user: BaseUser, dag_id: str) -> bool:
    """What GET /api/v2/dags/{dag_id}/dagRuns asks."""
    return _authorized(user, dag_id, "GET")


def may_trigger(user: BaseUser, dag_id: str) -> bool:
    """What POST /api/v2/dags/{dag_id}/dagRuns (the trigger form) asks."""
    return _authorized(user, dag_id, "POST")


def job_tasks(dag_id: str, run_id: str) -> list[str]:
    """The Spark job tasks of a DAG run that ended (each writes a report), in the order they started: the package's
    jobs are the tasks of the heavy pool."""
    with create_session() as session:
        rows = session.execute(
            select(TaskInstance.task_id)
            .where(
                TaskInstance.dag_id == dag_id,
                TaskInstance.run_id == run_id,
                TaskInstance.pool == HEAVY_POOL,
                TaskInstance.state.in_(ENDED),
            )
            .order_by(TaskInstance.start_date)
        ).all()
    return [row.task_id for row in rows]


def run_ids(dag_ids: set[str]) -> dict[tuple[str, str], str]:
    """(dag id, run folder name) -> run id, for the runs of `dag_ids` (a report folder is named after its run id with
    what a path cannot hold replaced)."""
    from james_airflow.runs import run_folder

    if not dag_ids:
        return {}
    with create_session() as session:
        rows = session.execute(select(DagRun.dag_id, DagRun.run_id).where(DagRun.dag_id.in_(dag_ids))).all()
    return {(row.dag_id, run_folder(row.dag_id, row.run_id).name): row.run_id for row in rows}


@dataclass(frozen=True)
class Approval:
    dag_id: str
    run_id: str
    task_id: str
    subject: str
    since: datetime


def approvals_waiting() -> list[Approval]:
    """The approval requests of the offline mailbox repair and the undo nobody answered yet, oldest first."""
    with create_session() as session:
        rows = session.execute(
            select(
                TaskInstance.dag_id,
                TaskInstance.run_id,
                TaskInstance.task_id,
                HITLDetail.subject,
                HITLDetail.created_at,
            )
            .join(HITLDetail, HITLDetail.ti_id == TaskInstance.id)
            .where(
                TaskInstance.dag_id.in_(APPROVAL_DAGS),
                HITLDetail.responded_at.is_(None),
                TaskInstance.state.in_((TaskInstanceState.AWAITING_INPUT, TaskInstanceState.DEFERRED)),
            )
            .order_by(HITLDetail.created_at)
        ).all()
    return [Approval(row.dag_id, row.run_id, row.task_id, row.subject, row.created_at) for row in rows]
