"""The Consistency view in the Airflow UI: the package's Airflow plugin (plugin.py), its FastAPI app (app.py), what its
pages show (pages.py, chart.py, airflow_side.py), their templates and their stylesheet and script (static/)."""
