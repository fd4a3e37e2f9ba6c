# Airflow 3.3 with james-consistency installed from its wheel, as an operator installs it into an Airflow image:
# `james-consistency[airflow]` (the product, its Airflow side, the DAGs, the suites, the spark-submit entry points and
# the JVM side's jar) with its declared dependencies at requirements.txt's versions, the Spark Cassandra Connector
# jars and a Java 17 runtime. No file of the repository stays in the image: the DAGs come from the package's bundle
# (AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST in docker-compose.yaml), and each Spark job ships the executors a
# zip of the installed package (spark_env.cluster_shipping_conf). The local kit (kit/) is not installed.
# The Spark jobs run from here as spark-submit clients (deploy mode client) against the standalone cluster, with
# pip's pyspark 3.5.8 and the Java 17 runtime of the official Spark image (same Spark version as the cluster).
# Build context: the repository root (see docker/airflow.Dockerfile.dockerignore for what is left out).
ARG SPARK_IMAGE=apache/spark:3.5.8-scala2.12-java17-python3-ubuntu
ARG AIRFLOW_IMAGE=apache/airflow:3.3.2-python3.11

FROM ${SPARK_IMAGE} AS spark

# The connector and its dependencies from Maven Central, resolved once at build time (the image's JAMES_SPARK_JARS_DIR:
# nothing is downloaded at run time), and the product's JVM side compiled against them and the Spark image's jars, as
# scripts/setup.sh does.
FROM maven:3.9-eclipse-temurin-17 AS jars
COPY jars/spark/pom.xml /build/jars/spark/pom.xml
RUN mvn --batch-mode --quiet -f /build/jars/spark/pom.xml package
COPY --from=spark /opt/spark/jars /build/spark-jars
COPY spark/james_consistency/jvm /build/jvm
RUN mkdir /build/classes \
 && javac --release 11 -nowarn -d /build/classes -cp "/build/spark-jars/*:/build/.local/jars/spark/*" /build/jvm/*.java \
 && jar cf /build/jvm/james-consistency-jvm.jar -C /build/classes .

# The wheel, built from the repository with the JVM jar beside its sources (the build backend refuses it without).
FROM ${AIRFLOW_IMAGE} AS wheel
COPY --chown=airflow:root . /home/airflow/src
COPY --chown=airflow:root --from=jars /build/jvm/james-consistency-jvm.jar /home/airflow/src/spark/james_consistency/jvm/
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /home/airflow/dist /home/airflow/src

FROM ${AIRFLOW_IMAGE}
USER root
COPY --from=spark /opt/java/openjdk /opt/java/openjdk
ENV JAVA_HOME=/opt/java/openjdk \
    PATH=/opt/java/openjdk/bin:${PATH}
RUN mkdir -p /opt/james-consistency/jars/spark /opt/james-consistency/reports /opt/james-consistency/gx \
      /opt/james-consistency/alerts /opt/james-consistency/dist \
 && chown -R airflow:root /opt/james-consistency
USER airflow
COPY --chown=airflow:root --from=jars /build/.local/jars/spark/ /opt/james-consistency/jars/spark/
COPY --chown=airflow:root --from=wheel /home/airflow/dist/ /tmp/dist/
COPY --chown=airflow:root requirements.txt /tmp/requirements.txt
RUN pip install --no-cache-dir -c /tmp/requirements.txt \
      "james-consistency[airflow] @ file://$(ls /tmp/dist/james_consistency-*.whl)" \
 && pip check \
 && rm -rf /tmp/dist /tmp/requirements.txt
ENV JAMES_CONSISTENCY_LOCAL_DIR=/opt/james-consistency \
    JAMES_SPARK_JARS_DIR=/opt/james-consistency/jars/spark \
    GX_ANALYTICS_ENABLED=false \
    PYSPARK_PYTHON=python3 \
    PYSPARK_DRIVER_PYTHON=python3
# The install holds its package data and finds the connector's jars and its own; the DAGs' bundle is there; no kit.
RUN python -c "import importlib.util, james_airflow.bundle as b, james_consistency.runtime.connector_jars as j; \
assert j.spark_jars()[-1].name == 'james-consistency-jvm.jar'; assert (b.DAGS_FOLDER / 'message_consistency.py').is_file(); \
assert importlib.util.find_spec('james_consistency_kit') is None, 'the local kit is not for the image'"
