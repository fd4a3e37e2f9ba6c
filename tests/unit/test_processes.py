"""The local services' processes: a detached service is found by its pid file, stopped with its group, and a pid
file left by an earlier run is not taken for a running service; a port is waited for."""

import os
import socket
import sys

import psutil
from james_consistency_kit.processes import DetachedService, alive, port_bindable, wait_for_port

MARKER = "james-consistency-test-service"


def _sleeper() -> list[str]:
    return [sys.executable, "-c", "import time; time.sleep(300)", MARKER]


def test_a_started_service_runs_until_stopped_and_leaves_no_pid_file(tmp_path):
    service = DetachedService(tmp_path / "service.pid", MARKER)

    pid = service.start(_sleeper(), tmp_path / "logs" / "service.log", cwd=tmp_path)

    assert service.pid() == pid
    assert os.getpgid(pid) == pid, "in a process group of its own"
    assert service.stop(grace_seconds=5) is True
    assert not alive(pid), "stopped (a zombie its parent, this test, has not reaped yet counts as ended)"
    assert not service.pid_file.exists()
    assert service.stop(grace_seconds=5) is False, "nothing left to stop"


def test_a_service_still_in_its_exec_is_not_taken_for_another_program(tmp_path, monkeypatch):
    service = DetachedService(tmp_path / "service.pid", MARKER)
    pid = service.start(_sleeper(), tmp_path / "logs" / "service.log", cwd=tmp_path)
    real_cmdline, asked = psutil.Process.cmdline, []

    def in_exec_at_first(process):
        asked.append(process.pid)
        return [] if len(asked) < 3 else real_cmdline(process)  # what /proc shows until the exec is done

    monkeypatch.setattr(psutil.Process, "cmdline", in_exec_at_first)
    try:
        assert service.pid() == pid
        assert service.pid_file.exists()
    finally:
        monkeypatch.undo()
        service.stop(grace_seconds=5)


def test_a_pid_file_naming_another_program_is_stale_and_removed(tmp_path):
    service = DetachedService(tmp_path / "service.pid", MARKER)
    service.pid_file.write_text(str(os.getpid()))  # this test's own process: alive, but not the service

    assert service.pid() is None
    assert not service.pid_file.exists()


def test_a_listening_port_is_waited_for_and_a_dead_start_gives_up_at_once(tmp_path):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]

        assert not port_bindable("127.0.0.1", port)
        assert wait_for_port("127.0.0.1", port, timeout=5, still_starting=lambda: True)

    assert not wait_for_port("127.0.0.1", port, timeout=60, still_starting=lambda: False)
