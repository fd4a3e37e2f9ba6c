"""docker-compose.yaml describes a real multi-node deployment with the shape `make cluster-test` proves: a ring of
three Cassandra nodes, Spark executors without this project that receive the product zip from each job, run work
folders on a Hadoop filesystem (HDFS) rather than on a folder the driver and the executors share, and an Airflow
image that installs the package from its wheel and takes its DAGs from the package's bundle. Parsed and checked
here, and validated by the docker client's compose (`docker compose config -q`, or the standalone `docker-compose`)
where one is installed."""

import json
import os
import re
import shutil
import subprocess
import zipfile
from itertools import pairwise
from pathlib import Path
from urllib.parse import urlsplit

import pyspark
import pytest
import yaml
from james_airflow.bundle import BUNDLE_CONFIG
from james_consistency.runtime.package_data import JVM_JAR_NAME, package_path
from james_consistency.runtime.paths import PROJECT_ROOT, SPARK_JARS_DIR
from james_consistency.settings import CATALOGUE

COMPOSE = PROJECT_ROOT / "docker-compose.yaml"
AIRFLOW_SERVICES = ("airflow-apiserver", "airflow-scheduler", "airflow-dag-processor", "airflow-triggerer")
CASSANDRA_NODES = ("cassandra-1", "cassandra-2", "cassandra-3")
SECRETS = {"POSTGRES_PASSWORD": "local-only", "AIRFLOW_JWT_SECRET": "local-only"}
PROJECT_HOME = "/opt/james-consistency"
# Variables of Spark itself the driver's services set (Spark reads them, not this project's code).
SPARKS_OWN = {"SPARK_LOCAL_HOSTNAME"}


def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def dockerfile(service: dict) -> str:
    assert service["build"]["context"] == "."
    return (PROJECT_ROOT / service["build"]["dockerfile"]).read_text()


def mounts(service: dict) -> dict[str, str]:
    """A service's volumes as {target: source} (a named volume or a host path)."""
    return {volume.split(":")[1]: volume.split(":")[0] for volume in service.get("volumes", [])}


def instructions(text: str) -> list[str]:
    """A Dockerfile's instructions, continuation lines joined as Docker joins them."""
    joined = text.replace("\\\n", "")
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def stages(text: str) -> dict[str, list[str]]:
    """A multi-stage Dockerfile's instructions per stage (the unnamed last stage is "final")."""
    found: dict[str, list[str]] = {}
    current = None
    for line in instructions(text):
        if line.startswith("FROM "):
            current = line.split(" AS ")[1] if " AS " in line else "final"
            found[current] = []
        elif current is not None:
            found[current].append(line)
    return found


def image_environment(lines: list[str]) -> dict[str, str]:
    """The ENV values a stage sets (`ENV A=1 B=2` form)."""
    return dict(
        pair.split("=", 1) for line in lines if line.startswith("ENV ") for pair in line.removeprefix("ENV ").split()
    )


def read_by_the_code() -> str:
    """The Python of the product and the Airflow side (what runs in the Airflow image), as one text."""
    return "\n".join(
        path.read_text() for folder in ("spark", "plugins") for path in (PROJECT_ROOT / folder).rglob("*.py")
    )


def compose_client() -> list[str] | None:
    """Compose v2 (the docker plugin, or its standalone binary); v1 (`docker-compose` 1.x, end of life) does not
    know the top-level `name`."""
    for client in (["docker", "compose"], ["docker-compose"]):
        if not shutil.which(client[0]):
            continue
        probe = subprocess.run([*client, "version"], capture_output=True, text=True, timeout=60)
        if probe.returncode == 0 and re.search(r"version v?2\.", probe.stdout):
            return client
    return None


def compose_v1_client() -> list[str] | None:
    """Debian's docker-compose 1.29 (Compose v1, installed by set-up where no v2 client is): it validates everything
    but the Compose Specification's top-level `name`."""
    if not shutil.which("docker-compose"):
        return None
    probe = subprocess.run(["docker-compose", "version"], capture_output=True, text=True, timeout=60)
    return ["docker-compose"] if probe.returncode == 0 and re.search(r"version 1\.", probe.stdout) else None


def test_services_images_and_health_checks():
    services = compose()["services"]

    assert {
        *CASSANDRA_NODES,
        "hdfs-namenode",
        "hdfs-datanode",
        "spark-master",
        "spark-worker",
        "postgres",
        "airflow-init",
        *AIRFLOW_SERVICES,
    } <= set(services)
    spark_image = services["spark-master"]["image"]
    assert re.fullmatch(r"apache/spark:3\.5\.\d+-scala2\.12-java17-python3-ubuntu", spark_image)
    assert f"SPARK_IMAGE={spark_image}" in dockerfile(services["spark-worker"]), "the worker is the same Spark"
    for name, service in services.items():
        if name != "airflow-init":
            assert "healthcheck" in service, name
    assert services["airflow-init"]["restart"] == "no"
    for name in AIRFLOW_SERVICES:
        assert services[name]["depends_on"]["airflow-init"]["condition"] == "service_completed_successfully", name
        assert services[name]["depends_on"]["postgres"]["condition"] == "service_healthy", name
    scheduler_needs = services["airflow-scheduler"]["depends_on"]
    assert {scheduler_needs[s]["condition"] for s in (*CASSANDRA_NODES, "hdfs-datanode", "spark-worker")} == {
        "service_healthy"
    }
    assert "cassandra_heavy 1" in str(services["airflow-init"]["command"])


def test_cassandra_is_a_ring_of_three_nodes_for_replication_3():
    services = compose()["services"]
    nodes = [services[name] for name in CASSANDRA_NODES]

    assert {node["image"] for node in nodes} == {"cassandra:5.0"}
    assert all(node["environment"] == nodes[0]["environment"] for node in nodes), "one cluster, one data center"
    assert nodes[0]["environment"]["CASSANDRA_DC"] == "datacenter1"
    assert all("cqlsh" in str(node["healthcheck"]["test"]) for node in nodes), "each node answers CQL"
    for previous, name in pairwise(CASSANDRA_NODES):
        assert services[name]["depends_on"][previous]["condition"] == "service_healthy", name
    last_check = " ".join(services[CASSANDRA_NODES[-1]]["healthcheck"]["test"])
    assert "nodetool status" in last_check and "grep -c '^UN')\" -ge 3" in last_check, "the ring sees 3 nodes UN"
    header = COMPOSE.read_text().split("\nname:", 1)[0]
    assert "NetworkTopologyStrategy {'datacenter1': 3}" in header
    assert "--replication-factor 3 --datacenter datacenter1" in header


def test_the_workers_python_has_no_project_code():
    worker = compose()["services"]["spark-worker"]
    text = dockerfile(worker)
    setup = (PROJECT_ROOT / "scripts" / "setup.sh").read_text()
    worker_venv = set(re.search(r"grep -iE '\^\(([^)]+)\)=='", setup).group(1).split("|"))
    installed = set(re.search(r"grep -iE '\^\(([^)]+)\)==' /tmp/requirements.txt", text).group(1).split("|"))

    assert PROJECT_HOME not in str(worker.get("volumes", [])) and "./spark" not in str(worker.get("volumes", []))
    assert "PYTHONPATH" not in worker.get("environment", {}) and "PYTHONPATH" not in "\n".join(instructions(text))
    copied = [line.split()[-2] for line in instructions(text) if line.startswith("COPY") and "--from" not in line]
    assert copied == ["requirements.txt"], "the worker image holds no project file"
    assert worker_venv <= installed, "the packages of make cluster-test's workers (.local/worker-venv)"
    assert installed - worker_venv <= {"deprecated", "wrapt"}, "nothing beyond those and cassandra-driver's needs"
    assert "--no-deps" in text and "pip check" in text
    assert "find_spec('james_consistency') is None" in text


def test_the_driver_and_the_workers_share_no_folder():
    document = compose()
    services = document["services"]
    driver, worker = services["airflow-scheduler"], services["spark-worker"]

    assert set(mounts(driver).values()) & set(mounts(worker).values()) == set()
    assert "james-runs" not in (document.get("volumes") or {})
    for name, service in services.items():
        assert not any(target.endswith("/runs") for target in mounts(service)), name


def test_the_work_folder_is_on_hdfs_served_by_the_namenode_of_the_file():
    services = compose()["services"]
    roots = {services[name]["environment"]["JAMES_WORK_ROOT"] for name in AIRFLOW_SERVICES}

    assert len(roots) == 1
    root = urlsplit(roots.pop())
    assert root.scheme == "hdfs" and root.path.strip("/"), "a Hadoop URL root, not a local folder"
    namenode = services[root.hostname]
    assert namenode["image"] == "apache/hadoop:3" and namenode["command"] == ["hdfs", "namenode"]
    assert namenode["environment"]["CORE-SITE.XML_fs.defaultFS"] == f"hdfs://{root.hostname}:{root.port}"
    name_dir = namenode["environment"]["HDFS-SITE.XML_dfs.namenode.name.dir"]
    assert name_dir == f"file://{namenode['environment']['ENSURE_NAMENODE_DIR']}", "formatted on first start"
    assert mounts(namenode)["/data"] and f"/{root.port}" in str(namenode["healthcheck"]["test"])
    datanode = services["hdfs-datanode"]
    assert datanode["image"] == namenode["image"] and datanode["command"] == ["hdfs", "datanode"]
    assert datanode["environment"]["CORE-SITE.XML_fs.defaultFS"] == f"hdfs://{root.hostname}:{root.port}"
    assert datanode["environment"]["HDFS-SITE.XML_dfs.replication"] == "1", "one datanode"
    assert datanode["depends_on"][root.hostname]["condition"] == "service_healthy"
    assert mounts(datanode)["/data"] and "Live datanodes" in str(datanode["healthcheck"]["test"])


def test_the_airflow_image_installs_the_wheel_and_nothing_else_of_the_repository():
    """The last stage installs `james-consistency[airflow]` from the wheel the wheel stage built (its declared
    dependencies at the lock's versions, pip check clean), copies no file of the repository but the lock, and points
    the package at its folder of jars, reports and GX results; the DAGs come from the bundle, the executors' zip from
    the installed package."""
    services = compose()["services"]
    built = stages(dockerfile(services["airflow-scheduler"]))
    final = built["final"]

    copies = [line for line in final if line.startswith("COPY")]
    assert [line.split()[-2] for line in copies if "--from" not in line] == ["requirements.txt"]
    assert "--from=wheel /home/airflow/dist/ /tmp/dist/" in " ".join(copies)
    install = next(line for line in final if line.startswith("RUN pip install"))
    assert "-c /tmp/requirements.txt" in install and '"james-consistency[airflow] @ file://' in install
    assert "--no-deps" not in install and "pip check" in install, "the declared dependencies, consistent"
    assert image_environment(final)["JAMES_CONSISTENCY_LOCAL_DIR"] == PROJECT_HOME
    assert "find_spec('james_consistency_kit') is None" in final[-1] and "spark_jars()" in final[-1]
    wheel = built["wheel"]
    assert any(line.startswith("RUN pip wheel") and "--no-deps" in line for line in wheel)
    assert f"/build/jvm/{JVM_JAR_NAME} /home/airflow/src/spark/james_consistency/jvm/" in " ".join(wheel)
    worker_text = dockerfile(services["spark-worker"])
    for name in AIRFLOW_SERVICES:
        executor_python = services[name]["environment"]["SPARK_EXECUTOR_PYTHON"]
        assert executor_python.startswith("/usr/local/bin/python3") and executor_python in worker_text, name
    assert "FROM python:3.11" in worker_text, "python:3.11's interpreter is /usr/local/bin/python3"


def test_the_airflow_image_compiles_the_products_jvm_side_into_the_package(tmp_path):
    """The image's javac and jar commands, run here with the image's folders mapped to this machine's (pip's Spark
    jars for the Spark image's), give the jar set-up builds, where the wheel takes it from; the connector's jars go
    to the jars folder of the package's local dir, which the image names as its folder of jars (no download)."""
    services = compose()["services"]
    built = stages(dockerfile(services["airflow-scheduler"]))
    compiled = next(line for line in built["jars"] if line.startswith("RUN") and "javac" in line)
    copied = next(line for line in built["final"] if line.startswith("COPY") and "--from=jars" in line)
    assert copied.split()[-2:] == ["/build/.local/jars/spark/", f"{PROJECT_HOME}/jars/spark/"]
    assert image_environment(built["final"])["JAMES_SPARK_JARS_DIR"] == f"{PROJECT_HOME}/jars/spark", "no download"
    assert f"/build/jvm/{JVM_JAR_NAME}" in compiled
    assert (package_path("jvm") / JVM_JAR_NAME).is_file(), "set-up builds the same jar"

    pyspark_jars = Path(pyspark.__file__).parent / "jars"
    (tmp_path / "jars").mkdir()
    for jar in SPARK_JARS_DIR.glob("*.jar"):
        (tmp_path / "jars" / jar.name).symlink_to(jar)
    (tmp_path / "jvm").mkdir()
    for source in package_path("jvm").glob("*.java"):
        (tmp_path / "jvm" / source.name).symlink_to(source)
    command = (
        compiled.removeprefix("RUN ")
        .replace("/build/spark-jars", str(pyspark_jars))
        .replace("/build/.local/jars/spark", str(tmp_path / "jars"))
        .replace("/build/classes", str(tmp_path / "classes"))
        .replace("/build/jvm", str(tmp_path / "jvm"))
    )
    subprocess.run(["bash", "-c", command], check=True, timeout=120)
    with zipfile.ZipFile(tmp_path / "jvm" / JVM_JAR_NAME) as jar:
        assert "org/james/consistency/TokenRangeScan.class" in jar.namelist()


def test_the_compose_file_uses_the_projects_settings_names():
    """Every JAMES_* variable is in the settings catalogue; every SPARK_* or CASSANDRA_* variable the driver's
    services set is one the project's code reads (or Spark's own); a ${...} the file interpolates is one of those
    too, or passes a variable of an image through under its own name. CASSANDRA_* on the Cassandra nodes and
    SPARK_WORKER_* on the worker are the images' own settings."""
    text = COMPOSE.read_text()
    services = compose()["services"]
    code = read_by_the_code()

    for name, service in services.items():
        unknown = [key for key in service.get("environment") or {} if key.startswith("JAMES_") and key not in CATALOGUE]
        assert unknown == [], name
    for name in AIRFLOW_SERVICES:
        for key in services[name]["environment"]:
            if key.startswith(("SPARK_", "CASSANDRA_")) and key not in SPARKS_OWN:
                assert f'"{key}"' in code, f"{name}: {key} is not a name the project reads"
    interpolated = [
        (key, variable)
        for key, value in re.findall(r"^\s*([\w.-]+): (.*)$", text, re.MULTILINE)
        for variable in re.findall(r"\$\{(\w+)", value)
    ]
    assert interpolated
    for key, variable in interpolated:
        if variable.startswith("JAMES_"):
            assert variable in CATALOGUE, variable
        elif variable.startswith(("SPARK_", "CASSANDRA_")):
            assert variable == key or f'"{variable}"' in code, f"{key}: ${{{variable}}}"


def test_the_spark_versions_and_python_versions_match():
    services = compose()["services"]
    spark_version = re.search(r"apache/spark:(3\.5\.\d+)", services["spark-master"]["image"]).group(1)
    pinned = dict(
        line.split("==") for line in (PROJECT_ROOT / "requirements.txt").read_text().splitlines() if "==" in line
    )

    assert pinned["pyspark"] == spark_version, "the client's spark-submit and the cluster run the same Spark"
    airflow_dockerfile = dockerfile(services["airflow-scheduler"])
    assert f"apache/airflow:{pinned['apache-airflow']}-python3.11" in airflow_dockerfile
    assert "FROM python:3.11" in dockerfile(services["spark-worker"]), "executors need the driver's Python minor"


def test_airflow_is_built_from_the_pinned_requirements_and_points_at_the_cluster():
    services = compose()["services"]
    scheduler = services["airflow-scheduler"]
    text = dockerfile(scheduler)

    assert "requirements.txt" in text and "jars/spark/pom.xml" in text
    environment = scheduler["environment"]
    assert environment["AIRFLOW_CONN_CASSANDRA_DEFAULT"].startswith("cassandra://cassandra-1:9042")
    assert environment["AIRFLOW_CONN_SPARK_DEFAULT"].startswith("spark://spark-master:7077")
    assert environment["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].startswith("postgresql+psycopg2://airflow:${POSTGRES")
    assert environment["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == "http://airflow-apiserver:8080/execution/"
    assert environment["AIRFLOW__API_AUTH__JWT_SECRET"].startswith("${AIRFLOW_JWT_SECRET:?")
    assert environment["SPARK_LOCAL_HOSTNAME"] == scheduler["hostname"] == "airflow-scheduler"
    for name in AIRFLOW_SERVICES:
        assert (
            services[name]["environment"]["AIRFLOW_CONN_CASSANDRA_DEFAULT"]
            == environment["AIRFLOW_CONN_CASSANDRA_DEFAULT"]
        )
        targets = set(mounts(services[name]))
        assert targets == {
            f"{PROJECT_HOME}/reports",
            f"{PROJECT_HOME}/gx",
            f"{PROJECT_HOME}/alerts",
            "/opt/airflow/logs",
        }, f"{name}: state only; the code, the DAGs and the suites are the installed package's"
        assert not any(volume.startswith(".") for volume in services[name]["volumes"]), name
        environment = services[name]["environment"]
        assert BUNDLE_CONFIG in json.loads(environment["AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST"]), name
        assert "AIRFLOW__CORE__DAGS_FOLDER" not in environment and "AIRFLOW__CORE__PLUGINS_FOLDER" not in environment


def test_no_password_is_written_in_the_file():
    text = COMPOSE.read_text()

    assert "${POSTGRES_PASSWORD:?" in text
    for line in text.splitlines():
        if re.search(r"PASSWORD|SECRET|FERNET", line) and ":" in line and not line.lstrip().startswith("#"):
            assert "${" in line, line


def test_the_dockerfiles_leave_local_state_out_of_the_images():
    for name in ("airflow", "spark"):
        lines = (PROJECT_ROOT / "docker" / f"{name}.Dockerfile.dockerignore").read_text().splitlines()
        ignored = {line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")}
        assert {".local", ".venv", ".git"} <= ignored, name
        assert "kit" in ignored, f"{name}: the local kit (kit/) is never shipped to a deployment"


def test_docker_compose_config_accepts_the_file():
    client = compose_client()
    if client is None:
        pytest.skip("no Compose v2 client on this machine (`docker compose` plugin or standalone `docker-compose` v2)")
    env = {**os.environ, **SECRETS}
    result = subprocess.run(
        [*client, "-f", str(COMPOSE), "config", "-q"], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr

    missing = subprocess.run(
        [*client, "-f", str(COMPOSE), "config", "-q"],
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k not in SECRETS},
        timeout=120,
    )
    assert missing.returncode != 0 and "POSTGRES_PASSWORD" in missing.stderr + missing.stdout


def test_debians_compose_v1_accepts_the_file_but_its_project_name(tmp_path):
    client = compose_v1_client()
    if client is None:
        pytest.skip("no docker-compose 1.x (Debian's docker-compose package) on this machine")
    without_name = tmp_path / "docker-compose.yaml"
    without_name.write_text(re.sub(r"(?m)^name: .*$", "", COMPOSE.read_text()))
    command = [*client, "--project-directory", str(PROJECT_ROOT), "-f", str(without_name), "config"]

    rendered = subprocess.run(command, capture_output=True, text=True, env={**os.environ, **SECRETS}, timeout=120)
    assert rendered.returncode == 0, rendered.stderr
    assert set(yaml.safe_load(rendered.stdout)["services"]) == set(compose()["services"])

    no_secrets = {name: value for name, value in os.environ.items() if name not in SECRETS}
    refused = subprocess.run(command, capture_output=True, text=True, env=no_secrets, timeout=120)
    assert refused.returncode != 0 and "POSTGRES_PASSWORD" in refused.stderr
