"""The local services' processes (local kit): the Cassandra nodes, the Spark daemons and the local Airflow.

One way for each of them to start detached (its own session, so its own process group) with a pid file, to tell
whether it still runs, to stop its whole group (SIGTERM, a grace period, SIGKILL for what is left, reaped), and to
wait for its port.
"""

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import psutil
from james_consistency.errors import OperatorError

# Killed processes that outlived their group's leader are reaped by init, which can take a second or two here.
KILLED_GROUP_REAP_SECONDS = 15
POLL_SECONDS = 0.2
EXEC_WAIT_SECONDS = 1.0


def alive(pid: int) -> bool:
    """Whether the process runs (a zombie, ended but not yet reaped, does not)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True


def runs(pid: int, marker: str, exec_wait_seconds: float = 0.0) -> bool:
    """Whether the process runs and its command line holds `marker` (a reused pid is another program). A command
    line still empty is asked again for up to `exec_wait_seconds`: a service started a moment ago may still be in
    its exec (Popen returns before /proc shows the new command line; kernel threads never show one)."""
    deadline = time.monotonic() + exec_wait_seconds
    while alive(pid):
        try:
            command = psutil.Process(pid).cmdline()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return False
        if command or time.monotonic() > deadline:
            return marker in " ".join(command)
        time.sleep(0.01)
    return False


def stop_group(leader: int | subprocess.Popen, grace_seconds: float) -> None:
    """Stop the process group `leader` heads: SIGTERM, and SIGKILL for whatever has not ended `grace_seconds` later
    (the leader, or a child that outlived it). Returns once none of it runs; raises if a process still does."""
    group = leader.pid if isinstance(leader, subprocess.Popen) else leader
    if not _signal_group(group, signal.SIGTERM) or _group_ended(leader, within_seconds=grace_seconds):
        return
    if not _signal_group(group, signal.SIGKILL) or _group_ended(leader, within_seconds=KILLED_GROUP_REAP_SECONDS):
        return
    raise OperatorError(f"process group {group} still runs {KILLED_GROUP_REAP_SECONDS}s after SIGKILL")


def _signal_group(group: int, sig: int) -> bool:
    """Signal every process of the group; False when the group is already gone."""
    try:
        os.killpg(group, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        os.kill(group, sig)
    return True


def _group_ended(leader: int | subprocess.Popen, within_seconds: float) -> bool:
    """Waits until no process of the group runs, nor waits for init to reap it (then the group is gone when this
    returns, as a caller checking it expects); a zombie whose parent is another live process is not waited for."""
    group = leader.pid if isinstance(leader, subprocess.Popen) else leader
    deadline = time.monotonic() + within_seconds
    while True:
        # Reaps the leader once it has ended, so that it no longer counts in its group.
        if isinstance(leader, subprocess.Popen):
            leader.poll()
        else:
            reap(group)
        waited_for = [member for member in _members(group) if _to_wait_for(member)]
        if not waited_for:
            return True
        if time.monotonic() >= deadline:
            return not any(alive(member) for member in waited_for)
        time.sleep(POLL_SECONDS)


def _to_wait_for(pid: int) -> bool:
    try:
        process = psutil.Process(pid)
        return process.status() != psutil.STATUS_ZOMBIE or process.ppid() == 1
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True


def _members(group: int) -> list[int]:
    members = []
    for pid in psutil.pids():
        try:
            if os.getpgid(pid) == group:
                members.append(pid)
        except ProcessLookupError:
            continue
    return members


def reap(pid: int) -> None:
    """Collect the exit status if the process is our own child, so that it does not linger as a zombie."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


@dataclass(frozen=True)
class DetachedService:
    """A service started in its own session, its pid in `pid_file`; `marker` is what its command line holds, so that
    a stale pid file whose pid another program reuses is not taken for it."""

    pid_file: Path
    marker: str

    def pid(self) -> int | None:
        """The service's pid if it runs, else None (a stale pid file is removed)."""
        try:
            pid = int(self.pid_file.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None
        # Waiting out an exec: taking a service started a moment ago for another program would remove its pid file
        # while it runs.
        if runs(pid, self.marker, exec_wait_seconds=EXEC_WAIT_SECONDS):
            return pid
        self.pid_file.unlink(missing_ok=True)
        return None

    def start(self, command: list[str], log_file: Path, cwd: Path, env: dict[str, str] | None = None) -> int:
        """Start `command` detached, its output appended to `log_file`; its pid (also written to the pid file)."""
        log_file.parent.mkdir(parents=True, exist_ok=True)
        with open(log_file, "ab") as out:
            process = subprocess.Popen(
                command,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=cwd,
                env=env,
                start_new_session=True,
            )
        self.pid_file.write_text(str(process.pid))
        return process.pid

    def stop(self, grace_seconds: float) -> bool:
        """Stop the service and its whole group; True if it was running."""
        pid = self.pid()
        if pid is None:
            return False
        stop_group(pid, grace_seconds)
        self.pid_file.unlink(missing_ok=True)
        return True


def port_open(host: str, port: int, timeout: float) -> bool:
    """Whether something accepts connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def port_bindable(address: str, port: int) -> bool:
    """Whether a server could listen on address:port now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((address, port))
        except OSError:
            return False
    return True


def wait_for_port(host: str, port: int, timeout: float, still_starting: Callable[[], bool]) -> bool:
    """Waits until host:port accepts connections; False once `timeout` has passed or `still_starting()` is false
    (the process that was to listen there has ended)."""
    deadline = time.monotonic() + timeout
    while not port_open(host, port, 0.5):
        if time.monotonic() > deadline or not still_starting():
            return False
        time.sleep(0.5)
    return True
