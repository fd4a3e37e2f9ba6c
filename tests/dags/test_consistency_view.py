"""The Consistency view (the package's Airflow plugin) as the api-server serves it, in process: Airflow's whole
api-server app (`create_app()`, the plugin mounted by its entry point, the auth manager, the login endpoint) under
FastAPI's TestClient, on the test session's Airflow home. The reports it shows are written by a real repair on the
test node; the broken ones are that report damaged.

The real api-server, its UI in Chromium and a running night's progress: tests/dags/test_undo_repair_dag.py."""

import json
import re
import shutil
import uuid
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from james_consistency.cassandra.schema import create_schema
from james_consistency.engine.reports import write_report
from james_consistency.engine.run import RunOptions
from james_consistency.jobs.targets import run_target
from james_consistency.report.run_report import SCHEMA_VERSION
from support.messages import break_every_kind, platform

ADMIN, VIEWER = ("admin", "admin-password"), ("viewer", "viewer-password")
DAG_ID = "message_consistency"


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    """The api-server's app with two users of the simple auth manager: an admin and a viewer."""
    from airflow.api_fastapi.app import create_app, purge_cached_app

    passwords = tmp_path_factory.mktemp("users") / "passwords.json"
    passwords.write_text(json.dumps({ADMIN[0]: ADMIN[1], VIEWER[0]: VIEWER[1]}))
    with pytest.MonkeyPatch.context() as environment:
        environment.setenv("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS", f"{ADMIN[0]}:admin,{VIEWER[0]}:viewer")
        environment.setenv("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE", str(passwords))
        purge_cached_app()
        try:
            with TestClient(create_app(), base_url="http://127.0.0.1") as client:  # `with`: the lifespan runs
                yield client
        finally:
            purge_cached_app()


def token(api, user) -> str:
    response = api.post("/auth/token", json={"username": user[0], "password": user[1]})
    assert response.status_code == 201, response.text
    return response.json()["access_token"]


def get(api, path, user=ADMIN):
    """A page as the UI's iframe asks for it: with the login cookie."""
    api.cookies.set("_token", token(api, user))
    try:
        return api.get(path)
    finally:
        api.cookies.clear()


@pytest.fixture(scope="module")
def night(cql, cassandra_settings, spark, tmp_path_factory):
    """A real repair's report (it fixed every kind, kept before-images: undoable), as a DAG run's `repair` step;
    with a `check` step that cannot be read and a `verify` step of a newer schema version."""
    from james_airflow.runs import run_folder

    keyspace = f"view_{uuid.uuid4().hex[:10]}"
    create_schema(cql, keyspace, "3.9")
    found = break_every_kind(cql, keyspace, "3.9", platform(cql, keyspace, "3.9"))
    work = tmp_path_factory.mktemp("night")
    options = RunOptions("messages", keyspace, "repair", max_destructive_share=0.5, run_dir=str(work / "messages"))
    report = run_target(spark, cassandra_settings, options)
    run_id = f"manual__{uuid.uuid4().hex[:8]}T00:00:00+00:00"
    folder = run_folder(DAG_ID, run_id)
    write_report(report, folder / "repair.json")
    (folder / "check.json").write_text('{"runId": "cut short')
    (folder / "work").mkdir()
    (folder / "work" / "before-images.json").write_text("{}")  # a work file of the run: no report, no problem
    write_report({**report, "schemaVersion": SCHEMA_VERSION + 1, "mode": "verify"}, folder / "verify.json")
    yield {"keyspace": keyspace, "run_id": run_id, "report": report, "found": found, "folder": folder}
    shutil.rmtree(folder, ignore_errors=True)
    cql.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=120)


def test_anonymous_and_forged_requests_are_refused(api):
    for path in ("/james/", "/james/progress.json", f"/james/runs/{DAG_ID}/any", "/james/static/consistency.js"):
        anonymous = api.get(path)
        assert anonymous.status_code == 401 and anonymous.json() == {"detail": "Not authenticated"}, path
    forged = api.get("/james/", headers={"Authorization": "Bearer not.a.jwt"})
    assert forged.status_code == 403


def test_the_ui_lists_both_views_of_the_plugin(api):
    """A view Airflow's API refuses would hide the whole plugin from the UI, with only a warning in its log."""
    plugins = api.get("/api/v2/plugins", headers={"Authorization": f"Bearer {token(api, VIEWER)}"}).json()["plugins"]
    [plugin] = [plugin for plugin in plugins if plugin["name"] == "james_consistency"]
    views = {view["url_route"]: view for view in plugin["external_views"]}
    assert (
        views["james-consistency"] | {"destination": "nav", "href": "james/", "category": "browse"}
        == views["james-consistency"]
    )
    assert views["james-consistency-run"]["destination"] == "dag_run"
    assert plugin["fastapi_apps"] == [
        {"app": "fastapi.applications.FastAPI", "url_prefix": "/james", "name": "james-consistency"}
    ]


def figures(html: str, keyspace: str) -> dict[str, str]:
    """The figures (data-figure cells) of one keyspace's article on the Consistency page."""
    article = re.search(rf'<article class="projection" data-keyspace="{keyspace}".*?</article>', html, re.S).group(0)
    return {name: value.strip() for name, value in re.findall(r'data-figure="([^"]+)">([^<]*)<', article)}


def test_the_consistency_page_shows_the_last_run_as_its_report_says(api, night):
    page = get(api, "/james/")

    assert page.status_code == 200
    assert "script-src 'self'" in page.headers["content-security-policy"]
    shown, report = figures(page.text, night["keyspace"]), night["report"]
    assert shown["found"] == f"{sum(report['inconsistencies'].values()):,}"
    assert {kind: shown[f"found-{kind}"] for kind in night["found"]} == {
        kind: f"{count:,}" for kind, count in night["found"].items()
    }
    fixed = report["addedMessageIdEntries"] + report["updatedMessageIdEntries"] + report["removedMessageIdEntries"]
    assert shown["fixed"] == f"{fixed:,}" and fixed == sum(night["found"].values())
    assert shown["status"] == "COMPLETED" and shown["remaining"] == "-"
    assert '<svg xmlns="http://www.w3.org/2000/svg" class="trend"' in page.text
    # The run can still be undone, and the admin may trigger the undo; the viewer sees the run without the button.
    assert report["workDir"] in page.text and 'data-undo-run-dir="' + report["workDir"] in page.text
    assert "data-undo-run-dir" not in get(api, "/james/", VIEWER).text
    # One keyspace's page: its own projections only.
    alone = get(api, f"/james/?keyspace={night['keyspace']}").text
    assert re.findall(r'<article class="projection" data-keyspace="([^"]+)"', alone) == [night["keyspace"]]
    # The damaged reports of the run are named with their paths, the rest of the page as usual.
    problems = re.findall(r'<tr class="problem">.*?</tr>', page.text, re.S)
    check = next(row for row in problems if "check.json" in row)
    verify = next(row for row in problems if "verify.json" in row)
    assert str(night["folder"] / "check.json") in check and "not JSON" in check
    assert f"schemaVersion {SCHEMA_VERSION + 1}: this version reads 0 to {SCHEMA_VERSION}" in verify
    assert str(night["folder"] / "work") not in page.text


def test_a_run_view_shows_each_step_its_gates_and_serves_their_data_docs(api, night, monkeypatch):
    from james_airflow.ui import airflow_side

    # The run's job tasks as Airflow would list them: one more than the reports kept, whose report is missing.
    monkeypatch.setattr(airflow_side, "job_tasks", lambda dag_id, run_id: ["check", "repair", "verify", "report"])
    page = get(api, f"/james/runs/{DAG_ID}/{quote(night['run_id'], safe='')}")

    assert page.status_code == 200, page.text
    assert re.findall(r'<section class="step" id="step-(\w+)"', page.text) == ["check", "repair", "verify", "report"]
    repair = re.search(r'<section class="step" id="step-repair".*?</section>', page.text, re.S).group(0)
    gates = re.findall(r'<tr class="gate" data-gate="([^"]+)" data-success="(\w+)">', repair)
    assert gates == [(gate["name"], "true") for gate in night["report"]["gates"]]
    assert 'data-figure="beforeImages">' + f"{night['report']['beforeImages']['records']:,}" in repair
    for step, why in (("check", "not JSON"), ("verify", "schemaVersion"), ("report", "missing")):
        section = re.search(rf'<section class="step" id="step-{step}".*?</section>', page.text, re.S).group(0)
        assert why in section and str(night["folder"] / f"{step}.json") in section, step
    # Each gate's own Data Docs page, one click away, served by the view (and nothing outside the site).
    links = re.findall(r'<a class="data-docs" href="([^"]+)"', repair)
    assert len(links) == len(gates) > 0
    for link in links:
        docs = get(api, link)
        assert docs.status_code == 200 and "text/html" in docs.headers["content-type"]
        assert "Validation" in docs.text and "'unsafe-inline'" in docs.headers["content-security-policy"]
    outside = get(api, "/james/data-docs/..%2F..%2F..%2F..%2Fgreat_expectations.yml")
    assert outside.status_code == 404 and outside.json() == {
        "detail": "no Data Docs page ../../../../great_expectations.yml"
    }


def test_a_run_of_another_dag_has_nothing_to_show(api):
    page = get(api, "/james/runs/some_other_dag/manual__2026-01-01T00%3A00%3A00%2B00%3A00")

    assert page.status_code == 200 and "No james-consistency report for this run." in page.text
