#!/usr/bin/env bash
# The tests, against a real local Cassandra node (started by the pytest session fixture on port 19042 and stopped at
# the end), real Spark and real Airflow. Extra arguments go to pytest.
#   scripts/test.sh              lint, then the suite (tests/unit, tests/integration, tests/dags) without the
#                                end-to-end stories, in JAMES_TEST_WORKERS pytest-xdist workers (2; 0: one process)
#   scripts/test.sh end-to-end   the end-to-end stories (several Airflow runs, James's harness, the UI, live traffic,
#                                the bench) and the cluster layer (tests/cluster: a local 3-node ring and a Spark
#                                standalone cluster, scheduled first), in the same workers
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
layer="suite"
if [ "${1:-}" = "end-to-end" ]; then
  layer="end-to-end"
  shift
fi

run() {
  local name="$1"
  shift
  local started status=0
  started=$(date +%s)
  pytest -p no:cacheprovider --durations=25 "$@" || status=$?
  echo "test $name: $(( $(date +%s) - started ))s, pytest exit code $status"
  return $status
}

workers="${JAMES_TEST_WORKERS:-2}"
parallel=()
if [ "$workers" -gt 0 ]; then
  # A whole test file per worker: its module fixtures (e.g. keyspaces James seeded) are built once. Not loadgroup:
  # pytest-xdist 3.8 groups by rewriting a test's node id, which pytest 9 no longer reads.
  parallel=(-n "$workers" --dist loadfile)
fi

if [ "$layer" = "suite" ]; then
  ruff check .
  ruff format --check .
  run suite -m "not end_to_end" "${parallel[@]}" "$@"
else
  run end-to-end -m end_to_end "${parallel[@]}" tests/cluster tests/unit tests/integration tests/dags "$@"
fi
