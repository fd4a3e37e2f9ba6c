#!/usr/bin/env bash
# All the set-up, idempotent: virtualenv with the pinned packages, the Java jars from Maven Central,
# the Airflow home on SQLite. Each step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3.11}"

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi

# The packages' folders, not what installing them writes there (kit/*.egg-info, a wheel build's kit/build): the next
# set-up would install everything again.
package_folders="$(ls -d spark/*/ plugins/*/ kit/*/ | grep -v -e '\.egg-info/$' -e '^kit/build/$')"
wanted="$( (cat requirements.txt pyproject.toml kit/pyproject.toml; echo "$package_folders") | sha256sum | cut -d' ' -f1)"
# pyspark is published as a source archive only, and uv builds it again at each install (about 17 s, and 0.3 to 1 GB
# more in its cache each time: the suite's installs once filled a disk). Built once into .local/wheels, which every
# install here (set-up, the workers' Python, the install tests) finds first.
pyspark_pin="$(grep '^pyspark==' requirements.txt)"
if ! ls .local/wheels/pyspark-"${pyspark_pin#pyspark==}"-*.whl >/dev/null 2>&1; then
  echo "setup: building the $pyspark_pin wheel into .local/wheels (once)"
  mkdir -p .local/wheels
  .venv/bin/python -m pip wheel --quiet --disable-pip-version-check --no-deps -w .local/wheels "$pyspark_pin"
fi
if [ "$(cat .venv/.installed 2>/dev/null || true)" != "$wanted" ]; then
  echo "setup: installing the pinned Python packages"
  .venv/bin/python -m pip install --quiet --disable-pip-version-check "$(grep '^uv==' requirements.txt)"
  .venv/bin/uv pip sync --quiet --python .venv/bin/python --find-links .local/wheels requirements.txt
  # The product and its Airflow side (pyproject.toml), and the local kit (kit/pyproject.toml), both editable.
  .venv/bin/uv pip install --quiet --python .venv/bin/python --no-deps -e . -e ./kit
  echo "$wanted" > .venv/.installed
fi
# uv installs without bytecode, and where PYTHONDONTWRITEBYTECODE is set (this machine's shells, some CI images)
# Python never writes it either: every job would compile its imports again (Great Expectations alone: about 3 s of
# CPU in each spark-submit). Compiled once here.
if [ "$(cat .venv/.compiled 2>/dev/null || true)" != "$wanted" ]; then
  echo "setup: byte-compiling the virtualenv's packages"
  packages="$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  .venv/bin/python -m compileall -q -j 0 "$packages" >/dev/null
  echo "$wanted" > .venv/.compiled
fi

if [ ! -f .local/jars/cassandra/cassandra-all-5.0.8.jar ]; then
  echo "setup: resolving Apache Cassandra 5.0.8 from Maven Central"
  mvn --batch-mode --quiet package -f jars/cassandra/pom.xml
fi
if [ ! -f .local/jars/spark/spark-cassandra-connector_2.12-3.5.1.jar ]; then
  echo "setup: resolving the Spark Cassandra Connector 3.5.1 from Maven Central"
  mvn --batch-mode --quiet package -f jars/spark/pom.xml
fi
# The JVM side of the product (the token-range scan), compiled against pip's Spark and the connector into the
# package, beside its sources: package data like the suites, shipped after the connector's jars to every Spark job.
jvm=spark/james_consistency/jvm
jvm_jar="$jvm/james-consistency-jvm.jar"
rm -f .local/jars/spark/james-consistency-jvm.jar  # where set-up compiled it before 0.2.0
if [ ! -f "$jvm_jar" ] || [ -n "$(find "$jvm" -name '*.java' -newer "$jvm_jar")" ]; then
  echo "setup: compiling $jvm/*.java into $jvm_jar"
  pyspark_jars="$(.venv/bin/python -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')"
  classes="$(mktemp -d)"
  javac --release 11 -nowarn -d "$classes" -cp "$pyspark_jars/*:.local/jars/spark/*" "$jvm"/*.java
  jar cf "$jvm_jar" -C "$classes" .
  rm -rf "$classes"
  rm -f .local/jars/spark-driver-classes.stamp  # the class archive holds the jar's former classes
fi
# The Spark driver's class archive (spark_env.ensure_class_archive): every spark-submit job starts ~2 s sooner.
.venv/bin/python -m james_consistency.runtime.spark_env

# What a Spark cluster's executors get besides the product zip (built from the installed package when a job is
# submitted): a Python with pyspark and the third-party packages only (no project), the local standalone cluster's
# workers' (`james-consistency spark start`). Versions pinned from .venv.
worker_packages="$(.venv/bin/python -m pip freeze --disable-pip-version-check 2>/dev/null |
  grep -iE '^(pyspark|py4j|cassandra-driver|geomet|click|six)==' | sort)"
if [ "$(cat .local/worker-venv/.installed 2>/dev/null || true)" != "$worker_packages" ]; then
  echo "setup: creating .local/worker-venv (the Spark workers' Python, without this project)"
  rm -rf .local/worker-venv
  "$PYTHON" -m venv .local/worker-venv
  # shellcheck disable=SC2086
  .local/worker-venv/bin/pip install --quiet --disable-pip-version-check --find-links .local/wheels $worker_packages
  echo "$worker_packages" > .local/worker-venv/.installed
fi

# The James harnesses (james/harness-<V>/): James's own code as writer, fault injector and oracle
# (`james-consistency james ...`). Rebuilt when a file of the harness folder (target/ aside) is newer than its jar.
for pom in james/harness-*/pom.xml; do
  [ -f "$pom" ] || continue
  folder="$(dirname "$pom")"
  version="${folder##*/harness-}"
  built=".local/jars/james-$version"
  if [ ! -f "$built/james-harness.jar" ] || [ ! -f "$built/classpath.txt" ] ||
    [ -n "$(find "$folder" -path "$folder/target" -prune -o -type f -newer "$built/james-harness.jar" -print -quit)" ]; then
    echo "setup: building the James $version harness (Maven Central)"
    mvn --batch-mode --quiet package -f "$pom"
  fi
done

# Debian packages the tests use: chromium and its WebDriver for the end-to-end test of the Airflow UI
# (tests/dags/test_airflow_ui.py), and Debian's docker-compose (1.29, Compose v1) to validate docker-compose.yaml
# where no Compose v2 client is installed (tests/unit/test_docker_compose.py).
debian_packages=()
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  debian_packages+=(chromium chromium-driver)
fi
if ! command -v docker-compose >/dev/null && ! docker compose version >/dev/null 2>&1; then
  debian_packages+=(docker-compose)
fi
if [ ${#debian_packages[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "setup: installing Debian's ${debian_packages[*]} (apt)"
    mkdir -p .local
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${debian_packages[@]}"; } >.local/apt.log 2>&1 ||
      { tail -20 .local/apt.log; exit 1; }
  else
    echo "setup: missing Debian packages the tests need: sudo apt-get install ${debian_packages[*]}"
  fi
fi

if [ -x scripts/airflow-init.sh ]; then
  scripts/airflow-init.sh
fi
