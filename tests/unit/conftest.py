"""The unit layer's Spark: a small local session without the Cassandra connector (pure DataFrame functions only).

It overrides the `spark` fixture of tests/conftest.py for tests/unit, when the unit tests run alone. A session
already active in this process is used as it is; when tests of other layers run in the same pytest session, the unit
tests use the session with the connector that those need (Spark cannot add the connector's jars to a running JVM).
"""

import importlib.util
import sys
import types
from pathlib import Path

import pytest
from james_consistency.runtime.spark_env import (
    driver_java_options,
    import_named_classes,
    require_java,
    use_this_interpreter,
)


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
def spark(request):
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        yield active
        return
    unit_tests = Path(__file__).parent
    if any(unit_tests not in Path(item.path).parents for item in request.session.items):
        # Tests of other layers run later in this process and need the connector, which only a JVM started with its
        # jars has: start the session they will get (tests/conftest.py's, which stops it).
        from support.spark_session import suite_session

        yield suite_session(request.getfixturevalue("cassandra_settings"))
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
    import_named_classes(session)
    yield session
    session.stop()
