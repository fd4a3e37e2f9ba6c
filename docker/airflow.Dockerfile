# Airflow 3.3 with this project's pinned requirements, the connector jars and the project itself.
FROM apache/airflow:3.3.2-python3.11
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless maven \
 && rm -rf /var/lib/apt/lists/*
ENV JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64
USER airflow
COPY --chown=airflow:root requirements.txt /opt/james-consistency/requirements.txt
RUN pip install --no-cache-dir --no-deps -r /opt/james-consistency/requirements.txt
COPY --chown=airflow:root . /opt/james-consistency
RUN mvn --batch-mode --quiet -f /opt/james-consistency/jars/spark/pom.xml package \
 && pip install --no-cache-dir --no-deps -e /opt/james-consistency
ENV JAMES_CONSISTENCY_LOCAL_DIR=/opt/airflow/james
