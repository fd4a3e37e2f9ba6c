"""undo_repair through dag.test() on the real node, Spark and Airflow: a night's message_consistency repair taken
back behind the approval (answered through a real api-server, as in the UI), and a work folder that is no undoable
run's refused before anything runs. The DAG's shape is checked on the parsed DAG.

The night is watched and read in the Consistency view of that api-server, in Chromium: its progress moving while it
runs, then its figures, its gates and their Data Docs, its undo button. The view's screenshot goes to the test's
folder, and to docs/consistency-view.png with JAMES_DOCS_SCREENSHOTS=1."""

import shutil
import threading
import time
from urllib.parse import quote

import pytest
from james_consistency.cassandra.schema import create_schema
from james_consistency.runtime.paths import PROJECT_ROOT
from james_consistency.settings import setting
from james_consistency_kit.local_airflow import Api
from support.approvals import Approver, api_server
from support.browser import wait_for
from support.dag_runs import report_summary, task_states
from support.messages import break_every_kind, platform, projection, truth, write_times

DAG_ID = "undo_repair"
STEPS = ("check", "repair", "verify")
APPROVER, APPROVER_PASSWORD = "anna", "anna-approves"


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    with api_server(tmp_path_factory.mktemp("api"), {APPROVER: (APPROVER_PASSWORD, "op")}) as client:
        yield client


class NightWatcher(threading.Thread):
    """Watches the running jobs of a keyspace in the Consistency view: through the JSON its page polls (`ranges`: the
    ranges done each job published, by task) and on the page itself, open in Chromium (`shown`: each text of its
    "Running now" part naming the keyspace)."""

    def __init__(self, api: Api, token: str, keyspace: str, ui):
        super().__init__(daemon=True)
        self.api, self.token, self.keyspace, self.ui = api, token, keyspace, ui
        self.ranges: dict[str, list[tuple[int, int]]] = {}
        self.shown: list[str] = []
        self.stopped = threading.Event()
        self.error: BaseException | None = None

    def run(self):
        try:
            while not self.stopped.is_set():
                _, running = self.api.call("GET", "/james/progress.json", token=self.token)
                for job in running["jobs"]:
                    if job["keyspace"] == self.keyspace and job["ranges"]:
                        seen = self.ranges.setdefault(job["task"], [])
                        figures = (job["ranges"]["done"], job["ranges"]["total"])
                        if figures not in seen:
                            seen.append(figures)
                text = self.ui.text_of("#running")
                if self.keyspace in text and text not in self.shown:
                    self.shown.append(text)
                time.sleep(0.3)
        except BaseException as error:  # noqa: BLE001 - reported by the test
            self.error = error

    def stop(self):
        self.stopped.set()
        self.join(timeout=60)


@pytest.fixture
def undo_dag(dagbag, monkeypatch):
    """The DAG as deployed with `anna` as the only approver (parsed after the setting is set)."""
    monkeypatch.setenv("JAMES_MAILBOX_APPROVERS", APPROVER)
    return lambda: dagbag.get_dag(DAG_ID)


def test_undo_repair_is_manual_dry_run_approval_undo_report(dagbag):
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    dag = dagbag.get_dag(DAG_ID)

    assert dag.schedule is None and dag.max_active_runs == 1, "triggered by hand only"
    assert [task.task_id for task in dag.topological_sort()] == [
        "check",
        "anything_to_repair",
        "approve",
        "repair",
        "report",
    ]
    assert [(task.task_id, task.mode, task.pool) for task in dag.tasks if isinstance(task, SparkSubmitOperator)] == [
        ("check", "check", "cassandra_heavy"),
        ("repair", "repair", "cassandra_heavy"),
    ]
    form = dag.params.get_param("run_dir").schema
    assert form["type"] == "string" and form["title"] == "Work folder of the repair to undo"
    assert "confirmation" in dag.get_task("approve").params


def test_a_folder_that_is_no_undoable_run_is_refused_before_anything_runs(
    undo_dag, airflow_against_test_node, tmp_path
):
    run = undo_dag().test(run_conf={"run_dir": str(tmp_path / "not-a-repair")})

    assert str(run.state) == "failed"
    assert task_states(run) == {
        "check": "failed",
        "anything_to_repair": "upstream_failed",
        "approve": "upstream_failed",
        "repair": "upstream_failed",
        "report": "upstream_failed",
    }
    [alert] = airflow_against_test_node()
    assert alert["title"] == "undo_repair: a step failed"
    assert f"{tmp_path / 'not-a-repair'} is not the work folder of a repair that can still be undone" in str(alert)


@pytest.mark.end_to_end
def test_a_night_repair_undone_from_airflow_leaves_messageidtable_as_before(
    dagbag, undo_dag, api, cql, new_keyspace, airflow_against_test_node, browser, monkeypatch, tmp_path
):
    from james_airflow.runs import read_report
    from selenium.webdriver.common.by import By

    keyspace = new_keyspace("undodag")
    create_schema(cql, keyspace, "3.9")
    found = break_every_kind(cql, keyspace, "3.9", platform(cql, keyspace, "3.9"))
    broken = projection(cql, keyspace)
    # The Consistency view open in a browser while the night runs; its scan in 2 x 32 ranges, long enough to watch.
    monkeypatch.setenv("JAMES_TOKEN_RANGES", "32")
    ui = browser(api.base)
    ui.log_in(APPROVER, APPROVER_PASSWORD)
    ui.driver.get(f"{api.base}/plugin/james-consistency")
    ui.frame("Consistency")
    watcher = NightWatcher(api, Api(api.base).login(APPROVER, APPROVER_PASSWORD), keyspace, ui)
    watcher.start()
    try:
        night = dagbag.get_dag("message_consistency").test(
            run_conf={"keyspace": keyspace, "recheck_delay_seconds": 0, "max_destructive_share": 0.5}
        )
    finally:
        watcher.stop()
    assert str(night.state) == "success" and projection(cql, keyspace) == truth(cql, keyspace) != broken
    check, repair, verify = (read_report("message_consistency", night.run_id, step) for step in STEPS)
    fixed = sum(found.values())
    assert repair.beforeImages.records == fixed

    # The night's progress moved while it ran: through the JSON the page polls, and on the page.
    assert watcher.error is None, watcher.error
    scanned = watcher.ranges["check"]
    assert len(scanned) >= 2 and scanned == sorted(scanned) and scanned[-1][1] == check.ranges.total == 64, scanned
    assert any(0 < done < total for done, total in scanned), scanned
    assert len([text for text in watcher.shown if "ranges" in text]) >= 2, watcher.shown
    # The Consistency page, as the night's reports say: found per kind, fixed, remaining; its undo button.
    ui.driver.get(f"{api.base}/plugin/james-consistency")
    ui.frame("Consistency")
    # A job the page still saw running when it loaded reloads it once the job's end shows: undo on the settled page
    # (a reload between the click and the answer would take the answer away).
    wait_for("no job running on the page", lambda: not ui.driver.find_elements(By.CSS_SELECTOR, ".progress .job"), 60)
    article = ui.element(f"article[data-keyspace='{keyspace}'][data-target='messages']")
    shown = {cell.get_attribute("data-figure"): cell.text for cell in article.find_elements(By.CSS_SELECTOR, "td")}
    assert shown["found"] == str(check.found) and shown["status"] == "COMPLETED (64/64 ranges)"
    assert {kind: shown[f"found-{kind}"] for kind in check.inconsistencies} == {
        kind: str(count) for kind, count in check.inconsistencies.items()
    }
    assert shown["fixed"] == str(sum(repair.fixed_counts().values())) == str(fixed)
    assert shown["remaining"] == str(verify.remainingInconsistencies) == "0"
    # Its undo button: a confirmation in the page, then undo_repair triggered with the night's work folder (it stays
    # queued: no scheduler here). That run is deleted again; the undo below runs through dag.test().
    control = f"[data-undo-run-dir='{repair.workDir}']"
    ui.element(f"{control} button.undo-ask").click()
    ui.element(f"{control} button.undo-confirm").click()
    said = []  # what the page answered, named if the run never shows (a refused or slow trigger)

    def undo_run_shown() -> bool:
        said.append(ui.text_of(f"{control} output"))
        return f"{DAG_ID} run" in said[-1]

    try:
        wait_for("the undo run triggered from the page", undo_run_shown, 90)
    except TimeoutError as timeout:
        raise AssertionError(f"{timeout}; the page's answer: {said[-1:]!r}") from None
    anna = Api(api.base)
    anna.login(APPROVER, APPROVER_PASSWORD)
    triggered = [run for run in anna.runs(DAG_ID) if run["conf"] == {"run_dir": repair.workDir}]
    assert len(triggered) == 1, ui.text_of(f"{control} output")
    assert triggered[0]["dag_run_id"] in ui.text_of(f"{control} output")
    removed, _ = anna.call("DELETE", f"/api/v2/dags/{DAG_ID}/dagRuns/{quote(triggered[0]['dag_run_id'], safe='')}")
    assert removed == 204
    ui.click(f"//article[@data-keyspace='{keyspace}']//h3/a")  # this keyspace only
    wait_for("the keyspace's page", lambda: "only: every keyspace" in ui.text(), 30)
    ui.driver.switch_to.default_content()
    screenshot = ui.shot("consistency-view")
    if setting("JAMES_DOCS_SCREENSHOTS"):
        shutil.copy(screenshot, PROJECT_ROOT / "docs" / "consistency-view.png")
    # The run's tab: every gate of its three steps, each gate's Data Docs page one click away.
    ui.driver.get(
        f"{api.base}/dags/message_consistency/runs/{quote(night.run_id, safe='')}/plugin/james-consistency-run"
    )
    ui.frame("Consistency report")
    gates = [row.get_attribute("data-gate") for row in ui.driver.find_elements(By.CSS_SELECTOR, "tr.gate")]
    assert gates == [gate.name for step in (check, repair, verify) for gate in step.gates], gates
    ui.shot("consistency-report-tab")
    ui.click("(//a[@class='data-docs'])[1]")
    wait_for(
        "the gate's Data Docs page", lambda: "Expectation Validation Result" in ui.text() and gates[0] in ui.text(), 60
    )
    # Nobody logged in: refused.
    assert Api(api.base).call("GET", "/james/") == (401, {"detail": "Not authenticated"})
    approves = (APPROVER, APPROVER_PASSWORD, {"chosen_options": ["Approve"]})
    approver = Approver(api, DAG_ID, repair.workDir, (APPROVER, APPROVER_PASSWORD), [approves])
    approver.start()

    started = time.perf_counter()
    run = undo_dag().test(run_conf={"run_dir": repair.workDir})
    print(f"dag.test() {DAG_ID}: {time.perf_counter() - started:.0f}s")
    approver.join(timeout=60)
    assert approver.error is None and approver.statuses == [200], approver.error
    request = approver.request

    assert str(run.state) == "success"
    assert set(task_states(run).values()) == {"success"}
    assert projection(cql, keyspace) == broken, "messageIdTable is as it was before the repair"
    # What the approver was shown: the run undone and the dry run's plan per table and action.
    assert request["subject"] == f"Undo of the repair in {repair.workDir}: approve to take it back"
    assert request["assigned_users"] == [{"id": APPROVER, "name": APPROVER}]
    assert f"**Undone run** `{repair.runId}`: messages on keyspace `{keyspace}`" in request["body"]
    assert "| table | restored | newer-kept | already-as-before | not-reversed | failed |" in request["body"]
    assert f"| messageidtable | {fixed} | 0 | 0 | 0 | 0 |" in request["body"]
    assert "No typed confirmation is needed for this run" in request["body"]
    [notice] = [alert for alert in airflow_against_test_node() if alert.get("kind") == "approval-request"]
    assert notice["title"] == "undo_repair: approval requested" and repair.runId in notice["message"]
    summary = report_summary(run)
    assert (summary["undoneRunId"], summary["decision"]) == (repair.runId, "approved")
    assert summary["plan"] == {"messageidtable": {"restored": fixed}}
    assert summary["undo"]["status"] == "COMPLETED" and summary["undo"]["restored"] == fixed
    # Taken back, the run is no longer offered.
    written = write_times(cql, keyspace)
    again = undo_dag().test(run_conf={"run_dir": repair.workDir})
    assert task_states(again)["check"] == "failed" and write_times(cql, keyspace) == written
