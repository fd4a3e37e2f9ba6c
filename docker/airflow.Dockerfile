# Airflow 3.3 with this project's pinned requirements, the Spark Cassandra Connector jars and the project itself
# (the product spark/james_consistency with its jar from spark/jvm, and plugins/; the local kit, kit/, stays out: see
# the .dockerignore).
# The Spark jobs run from here as spark-submit clients (deploy mode client) against the standalone cluster, with
# pip's pyspark 3.5.8 and the Java 17 runtime of the official Spark image (same Spark version as the cluster).
# The executors do not have the project: each job ships them the product zip built here (spark.files), at the path
# spark_env.PRODUCT_ZIP names given JAMES_CONSISTENCY_LOCAL_DIR.
# Build context: the repository root (see docker/airflow.Dockerfile.dockerignore for what is left out).
ARG SPARK_IMAGE=apache/spark:3.5.8-scala2.12-java17-python3-ubuntu
ARG AIRFLOW_IMAGE=apache/airflow:3.3.2-python3.11

FROM ${SPARK_IMAGE} AS spark

# The connector and its dependencies from Maven Central, resolved once at build time (no Ivy at run time), and the
# product's JVM side (spark/jvm) compiled against them and the Spark image's jars, as scripts/setup.sh does.
FROM maven:3.9-eclipse-temurin-17 AS jars
COPY jars/spark/pom.xml /build/jars/spark/pom.xml
RUN mvn --batch-mode --quiet -f /build/jars/spark/pom.xml package
COPY --from=spark /opt/spark/jars /build/spark-jars
COPY spark/jvm /build/spark/jvm
RUN mkdir /build/classes \
 && javac --release 11 -nowarn -d /build/classes -cp "/build/spark-jars/*:/build/.local/jars/spark/*" /build/spark/jvm/*.java \
 && jar cf /build/.local/jars/spark/james-consistency-jvm.jar -C /build/classes .

FROM ${AIRFLOW_IMAGE}
USER root
COPY --from=spark /opt/java/openjdk /opt/java/openjdk
ENV JAVA_HOME=/opt/java/openjdk \
    PATH=/opt/java/openjdk/bin:${PATH}
RUN mkdir -p /opt/james-consistency/.local/jars/spark /opt/james-consistency/.local/dist \
      /opt/james-consistency/.local/reports /opt/james-consistency/.local/gx /opt/james-consistency/.local/alerts \
 && chown -R airflow:root /opt/james-consistency
USER airflow
COPY --chown=airflow:root requirements.txt /opt/james-consistency/requirements.txt
RUN pip install --no-cache-dir --no-deps -r /opt/james-consistency/requirements.txt
COPY --chown=airflow:root --from=jars /build/.local/jars/spark/ /opt/james-consistency/.local/jars/spark/
COPY --chown=airflow:root . /opt/james-consistency
ENV JAMES_CONSISTENCY_LOCAL_DIR=/opt/james-consistency/.local
# The product zip, as the kit's build_product_zip writes it at set-up (the kit is not in this image): every .py of
# the package james_consistency, before anything imports it (no __pycache__).
RUN cd /opt/james-consistency/spark \
 && python -c "import pathlib, sys, zipfile; \
archive = zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED); \
[archive.write(path, path.as_posix()) for path in sorted(pathlib.Path('james_consistency').rglob('*.py')) \
 if '__pycache__' not in path.parts]; \
archive.close()" /opt/james-consistency/.local/dist/james_consistency.zip
RUN pip install --no-cache-dir --no-deps -e /opt/james-consistency \
 && python -c "import importlib.util, james_airflow, james_consistency.paths as p, james_consistency.spark_env as s; \
assert p.spark_jars(); assert s.cluster_shipping_conf('spark://spark-master:7077')['spark.files'] == str(s.PRODUCT_ZIP); \
assert importlib.util.find_spec('james_consistency_kit') is None, 'the local kit is not for the image'"
ENV GX_ANALYTICS_ENABLED=false \
    PYSPARK_PYTHON=python3 \
    PYSPARK_DRIVER_PYTHON=python3
