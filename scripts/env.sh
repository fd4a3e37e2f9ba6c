# Sourced by the scripts: the environment every local command runs in (paths only, no credentials).
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PATH="$ROOT/.venv/bin:$PATH"
export AIRFLOW_HOME="${AIRFLOW_HOME:-$ROOT/.local/airflow}"
# The DAGs come from the installed package's bundle (james_airflow.bundle), as in a deployment; the DAGs and
# plugins folders keep Airflow's defaults under AIRFLOW_HOME, which hold nothing of this repository.
export AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST='[{"name": "james-consistency", "classpath": "james_airflow.bundle.JamesConsistencyDagBundle", "kwargs": {}}]'
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export GX_ANALYTICS_ENABLED=false
export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}"
export PYSPARK_PYTHON="$ROOT/.venv/bin/python"
export PYSPARK_DRIVER_PYTHON="$ROOT/.venv/bin/python"
