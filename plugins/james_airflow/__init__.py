"""Airflow-side code of james-consistency: the consistency DAG factory, its Spark job operator and its alerts."""
