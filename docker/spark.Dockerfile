# A Spark 3.5 worker whose Python matches the driver's (3.11, the Airflow image's): PySpark refuses executors on
# another minor version, and the official image's Ubuntu Python is 3.10. Spark itself and its Java 17 runtime are
# copied unchanged from the official image; the executors' Python packages are the pinned requirements (without
# Airflow), the job's code comes from the ./spark volume (PYTHONPATH).
# Runs as uid 50000 / gid 0 like the Airflow image, so the driver and the executors share the run folders.
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
    PYSPARK_PYTHON=python3 \
    PYTHONPATH=/opt/james-consistency/spark
COPY requirements.txt /tmp/requirements.txt
RUN grep -v '^apache-airflow' /tmp/requirements.txt > /tmp/requirements-executors.txt \
 && pip install --no-cache-dir --no-deps -r /tmp/requirements-executors.txt \
 && rm /tmp/requirements*.txt
RUN useradd --uid 50000 --gid 0 --home-dir /opt/spark/work-dir --no-create-home spark-job \
 && mkdir -p /opt/spark/work-dir /opt/james-consistency/.local/runs \
 && chown -R 50000:0 /opt/spark/work-dir /opt/james-consistency
USER 50000
WORKDIR /opt/spark/work-dir
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["/opt/spark/bin/spark-class", "org.apache.spark.deploy.worker.Worker", "spark://spark-master:7077"]
