"""The in-process Spark session of a test session that runs integration tests: the product's `local_session` (the
connector, the test node), set for tables of tens to hundreds of rows.

Compiling code for each query plan (whole-stage code generation) and re-planning it (adaptive execution) costs far
more than running the plan on so few rows: on the message and mailbox repair tests, the session's JVM spent about
40 % less CPU without them. The jobs keep their own configuration where the tests run them as deployed (spark-submit
from the command line and the DAG tasks); only the shuffle's size (SPARK_SHUFFLE_PARTITIONS, tests/conftest.py) is
the suite's there too.

The session's JVM also compiles less eagerly (CompileThresholdScaling=4: a method must run four times as often before
it is compiled). With the default, a worker's session JVM was still compiling after 15 minutes of `make test`, and
the compile time it counted was about half of its processor time. Only the code the tests run often gets compiled.
"""

SMALL_TABLES_CONF = {
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}


def suite_session(settings):
    from james_consistency.runtime.spark_env import local_session

    session = local_session(
        "james-consistency-tests", settings, master="local[2]", java_options=("-XX:CompileThresholdScaling=4",)
    )
    for key, value in SMALL_TABLES_CONF.items():
        session.conf.set(key, value)
    return session
