#!/usr/bin/env bash
# The test suite: lint, then every test against a real local Cassandra node (started by the pytest session
# fixture on port 19042 and stopped at the end), real Spark and real Airflow. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
ruff check .
ruff format --check .
started=$(date +%s)
status=0
pytest --durations=25 "$@" || status=$?
echo "test suite: $(( $(date +%s) - started ))s, pytest exit code $status"
exit $status
