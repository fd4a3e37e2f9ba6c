"""The shape of a multi-target repair DAG, built in memory (no Airflow database, nothing run): one independent
branch per target, then one report."""

import pytest
from james_airflow.consistency_dag import multi_target_consistency_dag

TARGETS = {"acl": "UserMailboxACL against the ACL truth", "aclv2": "aclv2 against eventStore"}


def test_each_target_is_checked_short_circuited_repaired_and_verified_on_its_own_branch_before_one_report():
    dag = multi_target_consistency_dag(
        dag_id="acl_shape", targets=TARGETS, title="the ACLs", cron_variable="JAMES_ACL_REPAIR_CRON", doc_md="doc"
    )

    assert {task.task_id: sorted(task.upstream_task_ids) for task in dag.tasks} == {
        "check_acl": [],
        "anything_to_repair_acl": ["check_acl"],
        "repair_acl": ["anything_to_repair_acl"],
        "verify_acl": ["repair_acl"],
        "check_aclv2": [],
        "anything_to_repair_aclv2": ["check_aclv2"],
        "repair_aclv2": ["anything_to_repair_aclv2"],
        "verify_aclv2": ["repair_aclv2"],
        "report": ["verify_acl", "verify_aclv2"],
    }
    # Each branch's later jobs read its own check's report and reuse its scan.
    assert dag.get_task("anything_to_repair_aclv2").op_kwargs == {"check_step": "check_aclv2"}
    assert [dag.get_task(f"{mode}_aclv2").scan_step for mode in ("repair", "verify")] == ["check_aclv2"] * 2
    assert dag.get_task("check_acl").doc_md == "Check UserMailboxACL against the ACL truth"


def test_a_multi_target_dag_runs_on_a_cron_or_after_an_asset_nothing_else():
    with pytest.raises(ValueError, match="acl_shape: give a cron setting"):
        multi_target_consistency_dag(dag_id="acl_shape", targets=TARGETS, title="the ACLs", doc_md="doc")
