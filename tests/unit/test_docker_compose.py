"""docker-compose.yaml describes a real multi-node deployment.

Parsed and checked here: this machine's docker client has no compose plugin (`docker compose config` is not
available) and no engine.
"""

import yaml
from james_consistency.paths import PROJECT_ROOT

COMPOSE = PROJECT_ROOT / "docker-compose.yaml"


def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def test_services_images_and_health_checks():
    services = compose()["services"]

    assert {
        "cassandra-1",
        "cassandra-2",
        "spark-master",
        "spark-worker",
        "postgres",
        "airflow-init",
        "airflow-apiserver",
        "airflow-scheduler",
        "airflow-dag-processor",
        "airflow-triggerer",
    } <= set(services)
    assert services["cassandra-1"]["image"] == services["cassandra-2"]["image"] == "cassandra:5.0"
    spark_image = services["spark-master"]["image"]
    assert spark_image.startswith("apache/spark:3.5.") and "java17" in spark_image and "python3" in spark_image
    for name, service in services.items():
        if name != "airflow-init":
            assert "healthcheck" in service, name
    for name in ("airflow-apiserver", "airflow-scheduler", "airflow-dag-processor", "airflow-triggerer"):
        assert services[name]["depends_on"]["airflow-init"]["condition"] == "service_completed_successfully"
        assert services[name]["depends_on"]["postgres"]["condition"] == "service_healthy"


def test_airflow_is_built_from_the_pinned_requirements_and_points_at_the_cluster():
    services = compose()["services"]
    scheduler = services["airflow-scheduler"]
    dockerfile = (PROJECT_ROOT / scheduler["build"]["dockerfile"]).read_text()

    assert "apache/airflow:3.3." in dockerfile and "requirements.txt" in dockerfile
    environment = scheduler["environment"]
    assert environment["AIRFLOW_CONN_CASSANDRA_DEFAULT"].startswith("cassandra://cassandra-1:9042")
    assert environment["AIRFLOW_CONN_SPARK_DEFAULT"].startswith("spark://spark-master:7077")
    assert environment["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].startswith("postgresql+psycopg2://airflow:${POSTGRES")
    mounts = {volume.split(":")[1] for volume in scheduler["volumes"]}
    assert {"/opt/james-consistency/dags", "/opt/james-consistency/plugins", "/opt/james-consistency/spark"} <= mounts


def test_no_password_is_written_in_the_file():
    text = COMPOSE.read_text()

    assert "${POSTGRES_PASSWORD:?" in text
    for line in text.splitlines():
        if "PASSWORD" in line and ":" in line:
            assert "${" in line, line
