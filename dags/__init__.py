"""The DAG files of james-consistency, one per DAG, thin (wiring, schedules, params, callbacks): package data
that the bundle of `james_airflow.bundle` serves where the package is installed."""
