# The two commands of the README: `make run` (the main job on the embedded default) and `make test` (the suite).
# Both do all the set-up first (scripts/setup.sh is idempotent and fast when everything is in place).
SHELL := /bin/bash
.PHONY: setup run demo test test-end-to-end lint format bench bench-impact ui traffic cluster-test wheel

setup:
	@scripts/setup.sh

run: setup
	@. scripts/env.sh && james-consistency demo

# Every DAG: the message repair, ACL, indexes, counters (scheduled by the message repair's asset) and the offline
# mailbox repair waiting for approval.
demo: setup
	@. scripts/env.sh && james-consistency demo --all

test: setup
	@scripts/test.sh

# The end-to-end stories (marker end_to_end) and the cluster layer; CI runs them after `make test`.
test-end-to-end: setup
	@scripts/test.sh end-to-end

lint: setup
	@. scripts/env.sh && ruff check . && ruff format --check .

format: setup
	@. scripts/env.sh && ruff check --fix . && ruff format .

ui: setup
	@. scripts/env.sh && james-consistency ui

bench: setup
	@. scripts/env.sh && james-consistency cassandra start && james-consistency bench messages --messages 1000000 --inconsistency-rate 0.01

# What a night costs James's users: a James-like client's latency without a night, during a default night, an
# unthrottled one and nights at fixed scan limits (docs/benchmarks.md; about 20 minutes on 2 shared cores).
bench-impact: setup
	@. scripts/env.sh && james-consistency cassandra start && james-consistency bench impact --messages 100000

# The repairs under live traffic (a James-like writer process; about 3-4 minutes on 2 shared cores).
traffic: setup
	@. scripts/env.sh && pytest -s -q tests/integration/test_live_traffic.py

# The repairs through a local Spark standalone cluster on a local 3-node Cassandra ring (started and stopped by the
# tests; see docs/architecture.md, "Tests"). Also part of `make test-end-to-end`.
cluster-test: setup
	@. scripts/env.sh && pytest -q -p no:cacheprovider tests/cluster

# The wheels an operator installs (dist/): james-consistency (the product, its Airflow side, the DAGs, the suites and
# the JVM jar set-up compiles) and the local kit's; docs/deployment.md, "Installing into an existing Airflow".
wheel: setup
	@. scripts/env.sh && uv build --quiet --wheel --out-dir dist . && uv build --quiet --wheel --out-dir dist kit
