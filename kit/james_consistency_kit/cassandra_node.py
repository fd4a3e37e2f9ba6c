"""A real local Apache Cassandra 5.0 node, run from the cassandra-all jars of Maven Central as its own JVM.

Used by `james-consistency cassandra start|stop|status` and by the test suite's session fixture.
All of its state (config, data, logs, pid) lives in one git-ignored folder.
"""

import os
import secrets
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from james_consistency.errors import OperatorError
from james_consistency.runtime.paths import CASSANDRA_JARS_DIR, LOCAL_DIR
from james_consistency.runtime.spark_env import QUICK_JIT_OPTION
from james_consistency.settings import configured, setting

from james_consistency_kit.processes import DetachedService, alive, port_bindable, port_open, reap

# What the command line of a node's JVM holds (the bench counts these processes' processor time as Cassandra's).
CASSANDRA_MARKER = "CassandraDaemon"

# Cassandra 5.0's garbage collector settings (conf/jvm17-server.options). With the JVM's own G1 defaults (marking
# from 45 % of the heap) a 2 GB node whose memtables and caches hold about 900 MB marked the heap almost without a
# break: its concurrent marking thread took about a sixth of the node's CPU on two cores shared with Spark.
G1_OPTIONS = [
    "-XX:+UseG1GC",
    "-XX:+ParallelRefProcEnabled",
    "-XX:MaxTenuringThreshold=1",
    "-XX:G1HeapRegionSize=16m",
    "-XX:G1RSetUpdatingPauseTimePercent=5",
    "-XX:MaxGCPauseMillis=300",
    "-XX:InitiatingHeapOccupancyPercent=70",
]

# From Cassandra 5.0's conf/jvm17-server.options: the module openings it needs on Java 17.
JVM17_OPTIONS = [
    "-Djdk.attach.allowAttachSelf=true",
    "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED",
    "--add-exports=java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED",
    "--add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED",
    "--add-exports=java.rmi/sun.rmi.server=ALL-UNNAMED",
    "--add-exports=java.sql/java.sql=ALL-UNNAMED",
    "--add-exports=java.base/java.lang.ref=ALL-UNNAMED",
    "--add-exports=jdk.unsupported/sun.misc=ALL-UNNAMED",
    "--add-exports=jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED",
    "--add-exports=jdk.attach/sun.tools.attach=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.module=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.loader=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.reflect=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.math=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.module=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.util.jar=ALL-UNNAMED",
    "--add-opens=jdk.management/com.sun.management.internal=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens=jdk.compiler/com.sun.tools.javac=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Dio.netty.allocator.useCacheForAllThreads=true",
    "-Dio.netty.allocator.maxOrder=11",
    *G1_OPTIONS,
    "-Xss256k",
    "-Djava.net.preferIPv4Stack=true",
]

# Skip the waits a multi-node cluster needs: one node, nobody to gossip with.
FAST_START_OPTIONS = [
    "-Dcassandra.superuser_setup_delay_ms=0",
    "-Dcassandra.ring_delay_ms=1000",
    "-Dcassandra.skip_wait_for_gossip_to_settle=0",
]

# The line a starting node logs first: errors before the last one are an earlier run's.
START_LOGGED = " - JVM vendor/version: "

# system.log rolls over at 20 MB and keeps 3 old files, like Cassandra's own configuration (a test node's log grew past
# 100 MB in a day); the old files are zipped.
LOGBACK_XML = """<configuration scan="false">
  <appender name="FILE" class="ch.qos.logback.core.rolling.RollingFileAppender">
    <file>{log_dir}/system.log</file>
    <rollingPolicy class="ch.qos.logback.core.rolling.FixedWindowRollingPolicy">
      <fileNamePattern>{log_dir}/system.log.%i.zip</fileNamePattern>
      <minIndex>1</minIndex>
      <maxIndex>3</maxIndex>
    </rollingPolicy>
    <triggeringPolicy class="ch.qos.logback.core.rolling.SizeBasedTriggeringPolicy">
      <maxFileSize>20MB</maxFileSize>
    </triggeringPolicy>
    <encoder><pattern>%-5level [%thread] %date{{ISO8601}} %F:%L - %msg%n</pattern></encoder>
  </appender>
  <appender name="STDOUT" class="ch.qos.logback.core.ConsoleAppender">
    <filter class="ch.qos.logback.classic.filter.ThresholdFilter"><level>WARN</level></filter>
    <encoder><pattern>%-5level [%thread] %date{{ISO8601}} %F:%L - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO">
    <appender-ref ref="FILE" />
    <appender-ref ref="STDOUT" />
  </root>
</configuration>
"""


@dataclass(frozen=True)
class LocalNode:
    """One local node: its folder and its ports. Two nodes need two folders and distinct ports."""

    home: Path = LOCAL_DIR / "cassandra"
    native_port: int = 9042
    storage_port: int = 7000
    jmx_port: int = 7199
    heap: str = "2G"
    # The commit log is not synced to disk, nor the schema tables flushed after each schema change (a test creates
    # and drops a keyspace of about 25 tables: this halves the node's CPU for it): for throwaway test nodes only.
    skip_sync: bool = False
    # The JVM keeps to its quick compiler (C1): a test node lives for one test session, and with C2 the compile time
    # each of `make test`'s two nodes counted was about half of its processor time. Off for a node whose processor
    # time is measured (the bench's) or that serves long (the demo node, the ring).
    quick_jit: bool = False
    # PasswordAuthenticator (Cassandra creates its bootstrap superuser; create your own roles and use them), and
    # client TLS only (a self-signed certificate made with keytool, its CA and a PKCS12 truststore in home/tls).
    auth: bool = False
    tls: bool = False
    # A ring node: its own loopback address (127.0.0.2, ...), the seeds' addresses, and the data center it announces
    # (GossipingPropertyFileSnitch). A single node keeps SimpleSnitch, whose data center is "datacenter1" too.
    address: str = "127.0.0.1"
    seeds: tuple[str, ...] = ()
    datacenter: str | None = None

    @classmethod
    def from_env(cls, **overrides) -> "LocalNode":
        values = {
            "home": Path(setting("JAMES_CASSANDRA_HOME") or LOCAL_DIR / "cassandra"),
            "native_port": setting("CASSANDRA_PORT"),
            "storage_port": setting("JAMES_CASSANDRA_STORAGE_PORT"),
            "jmx_port": setting("JAMES_CASSANDRA_JMX_PORT"),
            "heap": setting("JAMES_CASSANDRA_HEAP"),
            "auth": setting("JAMES_CASSANDRA_AUTH"),
            "tls": setting("JAMES_CASSANDRA_TLS"),
        }
        values.update({key: value for key, value in overrides.items() if value is not None})
        return cls(**values)

    @property
    def pid_file(self) -> Path:
        return self.home / "cassandra.pid"

    @property
    def service(self) -> DetachedService:
        return DetachedService(self.pid_file, CASSANDRA_MARKER)

    @property
    def tls_dir(self) -> Path:
        return self.home / "tls"

    @property
    def ca_file(self) -> Path:
        """The node's certificate (PEM), what a client trusts: CASSANDRA_TLS_CA_FILE."""
        return self.tls_dir / "node-ca.pem"

    @property
    def truststore(self) -> Path:
        """The same trust as a PKCS12 truststore for the Spark connector: CASSANDRA_TLS_TRUSTSTORE; its password is
        in `truststore.password` next to it (CASSANDRA_TLS_TRUSTSTORE_PASSWORD)."""
        return self.tls_dir / "truststore.p12"

    @property
    def log_dir(self) -> Path:
        return self.home / "logs"

    @property
    def conf_dir(self) -> Path:
        return self.home / "conf"

    # ---- state -------------------------------------------------------------------------------

    def pid(self) -> int | None:
        """The pid of this node's JVM if it is alive, else None (a stale pid file is removed)."""
        return self.service.pid()

    def release_version(self, timeout: float = 2.0) -> str | None:
        """The node's `release_version` if it answers CQL on its port, else None."""
        from james_consistency.cassandra.cql import CassandraSettings, close, connect

        if not port_open(self.address, self.native_port, timeout):
            return None
        settings = CassandraSettings.from_env(host=self.address, port=self.native_port)
        if self.tls:
            settings = replace(settings, tls_ca_file=str(self.ca_file))
        try:
            session = connect(settings, timeout=timeout)
        except OperatorError as error:
            # A node that checks credentials answers CQL: it is up even when this client has none.
            return "(authentication required)" if self.auth and "authentication failed" in str(error) else None
        except Exception:  # noqa: BLE001 - any failure means "not ready"
            return None
        try:
            return session.execute("SELECT release_version FROM system.local").one().release_version
        except Exception:  # noqa: BLE001
            return None
        finally:
            close(session)

    def status(self) -> dict:
        pid = self.pid()
        version = self.release_version() if pid else None
        return {
            "running": pid is not None,
            "ready": version is not None,
            "pid": pid,
            "address": f"{self.address}:{self.native_port}",
            "release_version": version,
            "home": str(self.home),
        }

    # ---- start / stop ------------------------------------------------------------------------

    def start(self, timeout: float = 180.0) -> dict:
        """Start the node and return once it answers CQL. Idempotent: a running node is left as is."""
        if self.pid() is not None:
            if self.release_version() is None:
                self._wait_ready(self.pid(), timeout)
            return self.status()
        for port, what in (
            (self.native_port, "CQL"),
            (self.storage_port, "storage"),
            (self.jmx_port, "JMX"),
        ):
            bind_address = "127.0.0.1" if what == "JMX" else self.address
            if port_open(bind_address, port, 0.5) or not port_bindable(bind_address, port):
                raise OperatorError(
                    f"port {port} ({what}) on {bind_address} is already in use by another process; "
                    f"free it or choose other ports (--port, JAMES_CASSANDRA_STORAGE_PORT, JAMES_CASSANDRA_JMX_PORT)"
                )
        classpath = self._classpath()
        self._write_config()
        pid = self.service.start(self._java_command(classpath), self.log_dir / "stdout.log", cwd=self.home)
        self._wait_ready(pid, timeout)
        return self.status()

    def stop(self, timeout: float = 60.0) -> bool:
        """Stop the node; True if one was running. No JVM is left behind."""
        return self.service.stop(grace_seconds=timeout)

    # ---- helpers -----------------------------------------------------------------------------

    def _wait_ready(self, pid: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not alive(pid):
                reap(pid)
                self.pid_file.unlink(missing_ok=True)
                raise OperatorError(f"Cassandra exited during start-up; last log lines:\n{self.log_errors()}")
            if self.release_version() is not None:
                return
            time.sleep(0.5)
        raise OperatorError(
            f"Cassandra did not answer CQL on {self.address}:{self.native_port} within {timeout:.0f}s "
            f"(pid {pid}, logs in {self.log_dir})"
        )

    def log_errors(self, lines: int = 15) -> str:
        """The last error lines its logs (system.log, else the JVM's stdout) have since the node last started."""
        logs = [self.log_dir / name for name in ("system.log", "stdout.log") if (self.log_dir / name).exists()]
        for path in logs:
            logged = path.read_text(errors="replace").splitlines()
            starts = [number for number, line in enumerate(logged) if START_LOGGED in line]
            errors = [
                line[:400]
                for line in logged[starts[-1] if starts else 0 :]
                if line.startswith(("ERROR", "WARN", "Exception", "Caused by", "java."))
            ]
            if errors:
                return "\n".join(errors[-lines:])
        return f"(no error in {self.log_dir})" if logs else "(no log)"

    def _classpath(self) -> str:
        if not (CASSANDRA_JARS_DIR / "cassandra-all-5.0.8.jar").exists():
            raise OperatorError(f"Cassandra jars are missing from {CASSANDRA_JARS_DIR}: run scripts/setup.sh first")
        return f"{self.conf_dir}:{CASSANDRA_JARS_DIR}/*"

    def _java_command(self, classpath: str) -> list[str]:
        command = [
            os.environ.get("JAVA", "java"),
            f"-Xms{self.heap}",
            f"-Xmx{self.heap}",
            f"-javaagent:{CASSANDRA_JARS_DIR / 'jamm-0.4.0.jar'}",
            *JVM17_OPTIONS,
            *FAST_START_OPTIONS,
            f"-Dcassandra.config=file://{self.conf_dir / 'cassandra.yaml'}",
            f"-Dlogback.configurationFile=file://{self.conf_dir / 'logback.xml'}",
            f"-Dcassandra.logdir={self.log_dir}",
            f"-Dcassandra.jmx.local.port={self.jmx_port}",
            "-Dcassandra-foreground=yes",
        ]
        if self.skip_sync:
            command += ["-Dcassandra.skip_sync=true", "-Dcassandra.unsafesystem=true"]
        if self.quick_jit:
            command.append(QUICK_JIT_OPTION)
        return [*command, "-cp", classpath, "org.apache.cassandra.service.CassandraDaemon"]

    def _write_config(self) -> None:
        data = self.home / "data"
        for folder in (self.conf_dir, self.log_dir, data):
            folder.mkdir(parents=True, exist_ok=True)
        seeds = ",".join(f"{seed}:{self.storage_port}" for seed in (self.seeds or (self.address,)))
        snitch = "GossipingPropertyFileSnitch" if self.datacenter else "SimpleSnitch"
        if self.datacenter:
            # Read from the classpath (conf_dir is on it).
            (self.conf_dir / "cassandra-rackdc.properties").write_text(f"dc={self.datacenter}\nrack=rack1\n")
        (self.conf_dir / "cassandra.yaml").write_text(
            f"""# Written by james-consistency for a local development node.
cluster_name: {"james-consistency-ring" if self.seeds else "james-consistency-local"}
num_tokens: 8
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
endpoint_snitch: {snitch}
# A new, empty ring: nothing to stream, every node joins at once.
auto_bootstrap: false
commitlog_sync: periodic
commitlog_sync_period: 10000ms
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "{seeds}"
listen_address: {self.address}
rpc_address: {self.address}
native_transport_port: {self.native_port}
storage_port: {self.storage_port}
start_native_transport: true
auto_snapshot: false
storage_compatibility_mode: NONE
data_file_directories:
  - {data}/data
commitlog_directory: {data}/commitlog
saved_caches_directory: {data}/saved_caches
hints_directory: {data}/hints
cdc_raw_directory: {data}/cdc_raw
authenticator: {"PasswordAuthenticator" if self.auth else "AllowAllAuthenticator"}
authorizer: AllowAllAuthorizer
{self._client_encryption()}read_request_timeout: 20000ms
range_request_timeout: 30000ms
write_request_timeout: 10000ms
cas_contention_timeout: 5000ms
batch_size_fail_threshold: 1000KiB
"""
        )
        (self.conf_dir / "logback.xml").write_text(LOGBACK_XML.format(log_dir=self.log_dir))

    def _client_encryption(self) -> str:
        if not self.tls:
            return "client_encryption_options:\n  enabled: false\n"
        keystore, password = self._make_certificates()
        return (
            "client_encryption_options:\n  enabled: true\n  optional: false\n"
            f"  keystore: {keystore}\n  keystore_password: {password}\n  store_type: PKCS12\n"
            "  require_client_auth: false\n"
        )

    def _make_certificates(self) -> tuple[Path, str]:
        """A self-signed certificate for 127.0.0.1 (kept across restarts), made with the JDK's keytool."""
        keystore = self.tls_dir / "node.p12"
        keystore_password_file = self.tls_dir / "keystore.password"
        if keystore.exists() and keystore_password_file.exists() and self.truststore.exists():
            return keystore, keystore_password_file.read_text().strip()
        self.tls_dir.mkdir(parents=True, exist_ok=True)
        for stale in self.tls_dir.iterdir():
            stale.unlink()
        keystore_password, truststore_password = secrets.token_urlsafe(18), secrets.token_urlsafe(18)
        keytool = ["keytool", "-noprompt"]
        steps = [
            [
                "-genkeypair", "-alias", "node", "-keyalg", "RSA", "-keysize", "2048", "-validity", "3650",
                "-storetype", "PKCS12", "-keystore", str(keystore), "-storepass", keystore_password,
                "-dname", "CN=127.0.0.1, OU=james-consistency local node", "-ext", "SAN=ip:127.0.0.1,dns:localhost",
            ],
            [
                "-exportcert", "-rfc", "-alias", "node", "-keystore", str(keystore), "-storepass", keystore_password,
                "-file", str(self.ca_file),
            ],
            [
                "-importcert", "-alias", "node", "-file", str(self.ca_file), "-storetype", "PKCS12",
                "-keystore", str(self.truststore), "-storepass", truststore_password,
            ],
        ]  # fmt: skip
        for step in steps:
            result = subprocess.run(keytool + step, capture_output=True, text=True, check=False)
            if result.returncode != 0:
                raise OperatorError(f"keytool could not make the node's certificate: {result.stderr.strip()[:300]}")
        for path, value in (
            (keystore_password_file, keystore_password),
            (self.tls_dir / "truststore.password", truststore_password),
        ):
            path.write_text(value + "\n")
            path.chmod(0o600)
        return keystore, keystore_password


# The local ring: its own folders and ports, apart from the single node (9042) and the test nodes (19042, 28042,
# 29042). Below Linux's ephemeral range (32768-60999): a port there may be held by any outgoing connection, and a node
# that cannot bind it does not start.
RING_HOME = LOCAL_DIR / "ring"
RING_NATIVE_PORT = 29242
RING_STORAGE_PORT = 29200
RING_JMX_BASE_PORT = 29300  # + node number: JMX listens on 127.0.0.1 for every node
RING_DATACENTER = "datacenter1"
RING_HEAP = "640M"


@dataclass(frozen=True)
class LocalRing:
    """A ring of `size` local nodes on 127.0.0.1 .. 127.0.0.N (the loopback network is a /8), one data center,
    the same CQL port on every address. Node 1 is the seed."""

    size: int = 3
    home: Path = RING_HOME
    native_port: int = RING_NATIVE_PORT
    heap: str = RING_HEAP

    def node(self, number: int) -> LocalNode:
        if not 1 <= number <= self.size:
            raise OperatorError(f"node {number} is not in the ring of {self.size} nodes (1..{self.size})")
        return LocalNode(
            home=self.home / f"node{number}",
            native_port=self.native_port,
            storage_port=RING_STORAGE_PORT,
            jmx_port=RING_JMX_BASE_PORT + number,
            heap=setting("JAMES_CASSANDRA_HEAP") if configured("JAMES_CASSANDRA_HEAP") else self.heap,
            skip_sync=True,
            address=f"127.0.0.{number}",
            seeds=("127.0.0.1",),
            datacenter=RING_DATACENTER,
        )

    def nodes(self) -> list[LocalNode]:
        return [self.node(number) for number in range(1, self.size + 1)]

    @property
    def contact_points(self) -> str:
        """CASSANDRA_HOST for the ring: every address, so a client starts even when one node is down."""
        return ",".join(node.address for node in self.nodes())

    def start(self, timeout: float = 240.0) -> list[dict]:
        """Start the seed, then the other nodes together once it answers CQL: none of them bootstraps (the ring is
        new: auto_bootstrap is off), so none waits for another to finish joining."""
        seed, *others = self.nodes()
        started = [seed.start(timeout)]
        with ThreadPoolExecutor(max(1, len(others))) as pool:
            return started + list(pool.map(lambda node: node.start(timeout), others))

    def stop(self, number: int | None = None) -> list[int]:
        """Stop one node or all of them, all at once (each flushes its memtables on the way out); the numbers of the
        nodes that were running."""
        numbers = [number] if number is not None else list(range(1, self.size + 1))
        with ThreadPoolExecutor(len(numbers)) as pool:
            stopped = list(pool.map(lambda n: self.node(n).stop(), numbers))
        return [n for n, was_running in zip(numbers, stopped, strict=True) if was_running]

    def status(self) -> list[dict]:
        return [{"node": number, **node.status()} for number, node in enumerate(self.nodes(), start=1)]

    def running(self) -> bool:
        return any(node.pid() is not None for node in self.nodes())
