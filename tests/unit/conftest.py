"""The unit layer's Spark: a small local session without the Cassandra connector (pure DataFrame functions only).

It overrides the `spark` fixture of tests/conftest.py for tests/unit. A session already active in this process (the
integration tests' one, with the connector, when both layers run in one pytest session) is used as it is and left
running; a session started here is stopped at the end.
"""

import importlib.util
import sys
import types
from pathlib import Path

import pytest
from james_consistency.spark_env import driver_java_options, require_java, use_this_interpreter


def _spark_testing_without_pandas() -> None:
    """Make `from pyspark.testing.utils import assertDataFrameEqual` work without pyarrow: pyspark.testing's
    __init__ imports pandas-on-Spark, which requires pyarrow (not a dependency of this project), while its `utils`
    module (assertDataFrameEqual, assertSchemaEqual) needs neither. The package is registered bare, then `utils` is
    imported as usual."""
    try:
        import pyspark.testing  # noqa: F401
    except ImportError:
        package = types.ModuleType("pyspark.testing")
        package.__path__ = [str(Path(importlib.util.find_spec("pyspark").origin).parent / "testing")]
        sys.modules["pyspark.testing"] = package


_spark_testing_without_pandas()


def pytest_configure(config):
    # assertDataFrameEqual tries pandas-on-Spark on every call; its pandas version check warns before pyarrow fails.
    config.addinivalue_line("filterwarnings", "ignore:distutils Version classes are deprecated:DeprecationWarning")


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        yield active
        return
    use_this_interpreter()
    require_java()
    session = (
        SparkSession.builder.appName("james-consistency-unit")
        .master("local[1]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.default.parallelism", "1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", driver_java_options(quick_jit=True))
        # A few rows per query: compiling code for each plan costs far more than running it (the unit layer runs
        # about twice as fast interpreted). It checks what the functions compute; the integration tests run the
        # jobs' own configuration.
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.sql.codegen.wholeStage", "false")
        .config("spark.sql.codegen.factoryMode", "NO_CODEGEN")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
