#!/usr/bin/env bash
# Airflow on SQLite under .local/airflow: the metadata database, the connections the DAGs use, the one-slot pool.
# Idempotent and quiet when already done. Connections hold no credentials here: the local node has none; a
# deployment sets them in its secrets backend or AIRFLOW_CONN_* environment variables.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
mkdir -p "$AIRFLOW_HOME"
stamp="$AIRFLOW_HOME/.initialised"
wanted="$(cat requirements.txt scripts/airflow-init.sh | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null || true)" = "$wanted" ]; then
  exit 0
fi
echo "setup: initialising Airflow in $AIRFLOW_HOME (SQLite)"
airflow db migrate >"$AIRFLOW_HOME/db-migrate.log" 2>&1 || { tail -20 "$AIRFLOW_HOME/db-migrate.log"; exit 1; }

add_connection() {  # id, then `airflow connections add` options; replaced if it exists
  airflow connections delete "$1" >/dev/null 2>&1 || true
  airflow connections add "$@" >/dev/null
}
add_connection cassandra_default --conn-type cassandra --conn-host 127.0.0.1 --conn-port 9042 \
  --conn-extra '{"load_balancing_policy": "RoundRobinPolicy"}'
add_connection spark_default --conn-type spark --conn-host 'local[*]' \
  --conn-extra '{"spark-binary": "spark-submit"}'
airflow pools set cassandra_heavy 1 "Heavy Cassandra scans and repairs: one at a time" >/dev/null
echo "$wanted" >"$stamp"
