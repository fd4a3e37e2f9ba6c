"""What `make run` (the demo) prints of a DAG run: one line per job report of the run's folder, the jobs' progress
files beside them left out."""

import shutil
import uuid

from james_airflow.runs import report_path, run_folder
from james_consistency.engine.reports import write_report
from james_consistency.report.progress import progress_path, write_progress
from james_consistency_kit import demo


def test_the_demo_prints_each_report_of_a_run_and_not_the_progress_beside_it(capsys):
    dag_id, run_id = "message_consistency", f"test-{uuid.uuid4().hex}"
    check = report_path(dag_id, run_id, "check")
    report = {"type": "messages-consistency", "target": "messages", "mode": "check", "dryRun": True}
    report |= {"keyspace": "james", "runId": run_id, "result": "COMPLETED", "status": "COMPLETED"}
    report |= {"inconsistencies": {"missing": 2, "outdated": 0, "orphan": 0}}
    write_report(report, check)
    write_progress(progress_path(check), {"stage": "scan", "state": "ended", "startedAt": "", "updatedAt": ""})
    try:
        demo._print_reports(dag_id, run_id)
    finally:
        shutil.rmtree(run_folder(dag_id, run_id))

    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 1 and printed[0].split()[0] == "check" and "2" in printed[0], printed
