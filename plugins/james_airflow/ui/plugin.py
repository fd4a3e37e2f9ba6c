"""The package's Airflow plugin, registered by its `airflow.plugins` entry point (pyproject.toml): the Consistency
view's FastAPI app mounted by the api-server under URL_PREFIX, a Consistency entry in the navigation (Browse) and a
"Consistency report" tab on every DAG run, both shown inside the UI (`url_route`: an iframe, which the UI's login
cookie reaches).

Airflow loads the plugins in every process, each task's included (for their macros): this module stays light, and
the app (FastAPI, Airflow's authentication) is imported only when Airflow asks for it, in the api-server or
`airflow plugins`.
"""

from airflow.plugins_manager import AirflowPlugin

# Under the api-server's root; never /api/v2, /ui, /execution, /auth or /pluginsv2 (Airflow refuses those).
URL_PREFIX = "/james"


class _App:
    """The `fastapi_apps` entry, built on first use."""

    def __get__(self, plugin, owner) -> list[dict]:
        from james_airflow.ui.app import app

        return [{"app": app, "url_prefix": URL_PREFIX, "name": "james-consistency"}]


class JamesConsistencyPlugin(AirflowPlugin):
    name = "james_consistency"
    fastapi_apps = _App()
    # The hrefs are relative to the UI's base (its [api] base_url) and end with "/": `james` alone is the UI's own
    # route. A view Airflow's API refuses (a key missing, a wrong destination) would hide the whole plugin from the
    # UI: tests/dags/test_consistency_view.py lists them through /api/v2/plugins.
    external_views = [
        {
            "name": "Consistency",
            "href": "james/",
            "destination": "nav",
            "url_route": "james-consistency",
            "category": "browse",
        },
        {
            "name": "Consistency report",
            "href": "james/runs/{DAG_ID}/{RUN_ID}",
            "destination": "dag_run",
            "url_route": "james-consistency-run",
        },
    ]
