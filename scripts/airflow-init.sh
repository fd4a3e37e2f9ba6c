#!/usr/bin/env bash
# Airflow on SQLite under .local/airflow (git-ignored; AIRFLOW_HOME overrides): the metadata database, the
# connections the DAGs use, the one-slot pool for heavy Cassandra jobs. Called by scripts/setup.sh.
#
# Idempotent and quiet when already done (a stamp of this script and the pinned requirements, and the database
# file). Connections hold no credentials: the local node has none; a deployment sets them in its secrets backend or
# as AIRFLOW_CONN_CASSANDRA_DEFAULT / AIRFLOW_CONN_SPARK_DEFAULT, which take precedence over the database.
#   cassandra_default  cassandra://127.0.0.1:9042  (the local demo node; `james-consistency cassandra start`)
#   spark_default      spark, host local[*]        (SparkSubmitHook uses the host as --master when there is no port)
#   pool cassandra_heavy, 1 slot
# Connections that already exist are left as they are (an operator may have pointed them elsewhere); the pool is
# always set back to one slot.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
mkdir -p "$AIRFLOW_HOME"
stamp="$AIRFLOW_HOME/.initialised"
wanted="$(cat requirements.txt scripts/airflow-init.sh | sha256sum | cut -d' ' -f1)"
database_present=yes
if [ -z "${AIRFLOW__DATABASE__SQL_ALCHEMY_CONN:-}" ] && [ ! -f "$AIRFLOW_HOME/airflow.db" ]; then
  database_present=no
fi
if [ "$database_present" = yes ] && [ "$(cat "$stamp" 2>/dev/null || true)" = "$wanted" ]; then
  exit 0
fi

started=$(date +%s)
echo "setup: initialising Airflow in $AIRFLOW_HOME (SQLite)"
log="$AIRFLOW_HOME/airflow-init.log"
airflow db migrate >"$log" 2>&1 || { tail -20 "$log"; exit 1; }

# One Python process for the connections and the pool (each `airflow` CLI call costs ~4 s of start-up).
python - >>"$log" 2>&1 <<'EOF' || { tail -20 "$log"; exit 1; }
import json

from airflow.models import Connection, Pool
from airflow.utils.session import create_session
from sqlalchemy import select

wanted = [
    Connection(
        conn_id="cassandra_default",
        conn_type="cassandra",
        description="James's Cassandra cluster (local demo node; credentials only from a secrets backend or env)",
        host="127.0.0.1",
        port=9042,
        extra=json.dumps({"load_balancing_policy": "RoundRobinPolicy"}),
    ),
    Connection(
        conn_id="spark_default",
        conn_type="spark",
        description="Where spark-submit runs the repair jobs (--master)",
        host="local[*]",
        extra=json.dumps({"spark-binary": "spark-submit"}),
    ),
]
with create_session() as session:
    for connection in wanted:
        if session.scalar(select(Connection).filter_by(conn_id=connection.conn_id)) is None:
            session.add(connection)
            print(f"created connection {connection.conn_id}")
        else:
            print(f"connection {connection.conn_id} exists: left as it is")
Pool.create_or_update_pool(
    "cassandra_heavy", 1, "Heavy Cassandra scans and repairs: one at a time", include_deferred=False
)
print("pool cassandra_heavy: 1 slot")
EOF
echo "$wanted" >"$stamp"
echo "setup: Airflow ready in $(( $(date +%s) - started ))s (log: $log)"
