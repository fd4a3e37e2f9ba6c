# A Spark 3.5 worker whose Python matches the driver's (3.11, the Airflow image's): PySpark refuses executors on
# another minor version, and the official image's Ubuntu Python is 3.10. Spark itself and its Java 17 runtime are
# copied unchanged from the official image. The executors' Python (/usr/local/bin/python3, SPARK_EXECUTOR_PYTHON in
# docker-compose.yaml) gets the packages scripts/setup.sh puts in .local/worker-venv for `make cluster-test`: pyspark,
# py4j, cassandra-driver and its dependencies, at requirements.txt's pins; not this project. Each job ships the
# product zip (spark.files) and puts it on its executors' PYTHONPATH (spark_env.cluster_shipping_conf).
# Nothing is shared with the driver's container: a run's work folder is on HDFS (JAMES_WORK_ROOT).
ARG SPARK_IMAGE=apache/spark:3.5.8-scala2.12-java17-python3-ubuntu

FROM ${SPARK_IMAGE} AS spark

FROM python:3.11-slim-bookworm
RUN apt-get update \
 && apt-get install -y --no-install-recommends procps tini curl \
 && rm -rf /var/lib/apt/lists/*
COPY --from=spark /opt/java/openjdk /opt/java/openjdk
COPY --from=spark /opt/spark /opt/spark
ENV JAVA_HOME=/opt/java/openjdk \
    SPARK_HOME=/opt/spark \
    PATH=/opt/java/openjdk/bin:/opt/spark/bin:/opt/spark/sbin:${PATH} \
    PYSPARK_PYTHON=/usr/local/bin/python3
COPY requirements.txt /tmp/requirements.txt
# The worker venv's packages (pyspark, py4j, cassandra-driver, geomet, click, six) and cassandra-driver's own
# dependencies (Deprecated, wrapt), pinned; pip check proves nothing they need is missing.
RUN grep -iE '^(pyspark|py4j|cassandra-driver|geomet|click|six|deprecated|wrapt)==' /tmp/requirements.txt \
      > /tmp/requirements-executors.txt \
 && pip install --no-cache-dir --no-deps -r /tmp/requirements-executors.txt \
 && pip check \
 && rm /tmp/requirements*.txt \
 && /usr/local/bin/python3 -c "import importlib.util, pyspark, cassandra.cluster; \
assert importlib.util.find_spec('james_consistency') is None, 'the executors receive the product from the job'"
RUN useradd --uid 50000 --gid 0 --home-dir /opt/spark/work-dir --no-create-home spark-job \
 && mkdir -p /opt/spark/work-dir \
 && chown -R 50000:0 /opt/spark/work-dir
USER 50000
WORKDIR /opt/spark/work-dir
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["/opt/spark/bin/spark-class", "org.apache.spark.deploy.worker.Worker", "spark://spark-master:7077"]
