"""Where the project keeps its local, git-ignored state (jars, node data, Airflow home, reports)."""

from pathlib import Path

from james_consistency.settings import setting

PROJECT_ROOT = Path(__file__).resolve().parents[2]
LOCAL_DIR = Path(setting("JAMES_CONSISTENCY_LOCAL_DIR") or PROJECT_ROOT / ".local")
JARS_DIR = LOCAL_DIR / "jars"
CASSANDRA_JARS_DIR = JARS_DIR / "cassandra"
SPARK_JARS_DIR = JARS_DIR / "spark"
REPORTS_DIR = LOCAL_DIR / "reports"
JOBS_DIR = PROJECT_ROOT / "spark" / "jobs"
LOG4J_CONFIG = PROJECT_ROOT / "spark" / "conf" / "log4j2.properties"


def spark_jars() -> list[Path]:
    """The Spark Cassandra Connector and its dependencies, resolved by `scripts/setup.sh`."""
    jars = sorted(SPARK_JARS_DIR.glob("*.jar"))
    if not jars:
        from james_consistency.errors import OperatorError

        raise OperatorError(f"no Spark Cassandra Connector jars in {SPARK_JARS_DIR}: run scripts/setup.sh first")
    return jars
