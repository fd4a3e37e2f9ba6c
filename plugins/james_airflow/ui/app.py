"""The Consistency view: a FastAPI app that Airflow's api-server mounts under /james (james_airflow.ui.plugin), shown
inside the Airflow UI (its navigation, and a tab on every DAG run).

    /                              per keyspace and target: the last run, a chart of the last nights, the approvals
                                   waiting, the runs still undoable (with the undo button), the jobs running now
    /runs/<dag>/<run>              a DAG run's reports: gates (Data Docs one click away), found, fixed, errors,
                                   samples, ranges, before-images; its jobs' progress while they run
    /progress.json, /runs/<dag>/<run>/progress.json
                                   the progress the running jobs publish (report.progress), which the pages' script
                                   polls while they are open
    /data-docs/<page>              the gates' Great Expectations Data Docs, from the GX root's site
    /static/<file>                 the pages' stylesheet and script, shipped in the package

Every route asks Airflow's own authentication (`get_user`: the UI's `_token` cookie or a Bearer token; 401
without one) and shows a DAG's runs only to a user who may read them. The undo button is shown to a user who may
trigger the undo DAG; the browser then triggers it through Airflow's REST API, which checks that permission again.
No page fetches anything from elsewhere: the Content-Security-Policy allows this server only (the Data Docs pages of
GX name CDNs for their styles, which the browser is told not to fetch).
"""

from pathlib import Path
from typing import Annotated

from airflow.api_fastapi.auth.managers.models.base_user import BaseUser
from airflow.api_fastapi.core_api.security import get_user
from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.templating import Jinja2Templates
from markupsafe import Markup

from james_airflow.ui import airflow_side, pages
from james_airflow.ui.chart import trend_svg
from james_airflow.ui.plugin import URL_PREFIX

HERE = Path(__file__).parent
STATIC_FILES = {"consistency.css": "text/css", "consistency.js": "text/javascript"}
PAGE_POLICY = (
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; "
    "frame-ancestors 'self'"
)
# GX's Data Docs pages carry inline scripts and styles of their own.
DATA_DOCS_POLICY = (
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
    "script-src 'self' 'unsafe-inline'; connect-src 'self'; frame-ancestors 'self'"
)

User = Annotated[BaseUser, Depends(get_user)]
templates = Jinja2Templates(directory=HERE / "templates")
app = FastAPI(title="james-consistency", docs_url=None, redoc_url=None, openapi_url=None)


@app.middleware("http")
async def content_security_policy(request: Request, call_next):
    response = await call_next(request)
    data_docs = "/data-docs/" in request.url.path
    response.headers["Content-Security-Policy"] = DATA_DOCS_POLICY if data_docs else PAGE_POLICY
    return response


def reports_dir() -> Path:
    from james_consistency.runtime.paths import REPORTS_DIR

    return REPORTS_DIR


def data_docs_site() -> Path:
    from james_consistency.gates import gx_root

    return gx_root() / "gx" / "uncommitted" / "data_docs" / "local_site"


def _paths(request: Request) -> dict:
    """This app's path and Airflow's (its [api] base_url's path) as the browser sees them."""
    prefix = request.scope.get("root_path", "").rstrip("/")
    return {"prefix": prefix, "airflow": prefix.removesuffix(URL_PREFIX)}


def data_docs_link(prefix: str, path: str) -> dict:
    """A gate's Data Docs page as this app serves it: `href` when the page is in the site and still kept, else why
    not (`missing`)."""
    if not path:
        return {"missing": "no Data Docs page recorded"}
    site = data_docs_site().resolve()
    page = Path(path).resolve()
    if not page.is_relative_to(site):
        return {"missing": f"{path} is outside this server's Data Docs ({site})"}
    if not page.is_file():
        return {"missing": f"{path} is no longer kept (JAMES_GX_RESULTS_KEPT)"}
    return {"href": f"{prefix}/data-docs/{page.relative_to(site).as_posix()}"}


class Visibility:
    """Which DAGs' runs the user may see (asked once per DAG and request)."""

    def __init__(self, user: BaseUser):
        self.user, self.known = user, {}

    def __call__(self, dag_id: str) -> bool:
        if dag_id not in self.known:
            self.known[dag_id] = airflow_side.may_read_runs(self.user, dag_id)
        return self.known[dag_id]

    def entry(self, run: str) -> bool:
        dag_run = pages.dag_run_of(run)
        return dag_run is None or self(dag_run[0])


@app.get("/", response_class=HTMLResponse)
def overview(request: Request, user: User, keyspace: str | None = None):
    """Every keyspace and target (only `keyspace`'s, when given)."""
    visible = Visibility(user)
    seen = pages.overview(reports_dir())
    if keyspace:
        seen.undoable = [entry for entry in seen.undoable if entry.keyspace == keyspace]
        seen.running = [job for job in seen.running if job.get("keyspace") == keyspace]
    projections = []
    for projection in seen.projections:
        if keyspace and projection.keyspace != keyspace:
            continue
        runs = [run for run in projection.runs if visible.entry(run.run)]
        if runs:
            shown = pages.Projection(projection.keyspace, projection.target, runs)
            title = f"{projection.target} on {projection.keyspace}: found, fixed and remaining per run"
            projections.append((shown, Markup(trend_svg(runs, title))))
    shown_runs = [run.run for projection, _ in projections for run in projection.runs]
    shown_runs += [entry.run for entry in seen.undoable] + [problem.run for problem in seen.problems]
    dags = {dag_run[0] for run in shown_runs if (dag_run := pages.dag_run_of(run)) and visible(dag_run[0])}
    context = {
        "user": user.get_name(),
        "keyspace": keyspace,
        "projections": projections,
        "run_ids": airflow_side.run_ids(dags),
        "approvals": [approval for approval in airflow_side.approvals_waiting() if visible(approval.dag_id)],
        "undoable": [entry for entry in seen.undoable if visible.entry(entry.run)],
        "may_undo": airflow_side.may_trigger(user, airflow_side.UNDO_DAG),
        "problems": [problem for problem in seen.problems if not problem.run or visible.entry(problem.run)],
        "running": [job for job in seen.running if visible.entry(job["run"])],
        "undo_dag": airflow_side.UNDO_DAG,
        **_paths(request),
    }
    return templates.TemplateResponse(request, "overview.html", context)


@app.get("/progress.json")
def running_progress(user: User) -> dict:
    visible = Visibility(user)
    return {"jobs": [job for job in pages.running_jobs(reports_dir()) if visible.entry(job["run"])]}


def _readable_run(user: BaseUser, dag_id: str) -> None:
    if not airflow_side.may_read_runs(user, dag_id):
        raise HTTPException(status_code=403, detail="Forbidden")


@app.get("/runs/{dag_id}/{run_id}", response_class=HTMLResponse)
def run_view(request: Request, dag_id: str, run_id: str, user: User):
    _readable_run(user, dag_id)
    paths = _paths(request)
    steps = pages.run_steps(dag_id, run_id, airflow_side.job_tasks(dag_id, run_id))
    gates = {
        (step.task, index): data_docs_link(paths["prefix"], gate.data_docs_page or gate.data_docs)
        for step in steps
        if step.report
        for index, gate in enumerate(step.report.gates)
    }
    undoable = pages.undoable_entry(dag_id, run_id, pages.overview(reports_dir()).undoable) if steps else None
    context = {
        "user": user.get_name(),
        "dag_id": dag_id,
        "run_id": run_id,
        "steps": steps,
        "gates": gates,
        "samples": {step.task: pages.samples(step.report) for step in steps if step.report},
        "columns": pages.columns,
        "undoable": undoable,
        "may_undo": undoable is not None and airflow_side.may_trigger(user, airflow_side.UNDO_DAG),
        "undo_dag": airflow_side.UNDO_DAG,
        **paths,
    }
    return templates.TemplateResponse(request, "run.html", context)


@app.get("/runs/{dag_id}/{run_id}/progress.json")
def run_progress(dag_id: str, run_id: str, user: User) -> dict:
    _readable_run(user, dag_id)
    return {"jobs": pages.run_progress(dag_id, run_id)}


@app.get("/data-docs/{page:path}")
def data_docs(page: str, user: User):
    site = data_docs_site().resolve()
    path = (site / page).resolve()
    if not path.is_relative_to(site) or not path.is_file():
        raise HTTPException(status_code=404, detail=f"no Data Docs page {page}")
    return FileResponse(path)


@app.get("/static/{name}")
def static(name: str, user: User):
    if name not in STATIC_FILES:
        raise HTTPException(status_code=404, detail=f"no file {name}")
    return FileResponse(HERE / "static" / name, media_type=STATIC_FILES[name])
