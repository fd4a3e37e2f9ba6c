"""Jobs sharing one Great Expectations root gate at the same time (a command-line check while a DAG run repairs):
every gate gives its verdict and the root stays readable."""

import multiprocessing
import os

import yaml

GATES_PER_PROCESS = 4
PROCESSES = 3


def _gate_repeatedly(root: str, number: int, verdicts) -> None:
    os.environ["JAMES_GX_ROOT"] = root
    from james_consistency import gates

    for attempt in range(GATES_PER_PROCESS):
        figures = {"destructive_share": 0.01, "destructive_rows": number + attempt, "projection_rows": 100}
        result = gates.validate_figures(
            figures, "plan_safety", {"max_destructive_share": 0.05}, asset=f"asset_{number}_{attempt}"
        )
        verdicts.put((number, attempt, result.success))


def test_gates_of_several_processes_on_one_root_all_give_their_verdict_and_leave_it_readable(tmp_path):
    context = multiprocessing.get_context("spawn")
    verdicts = context.Queue()
    workers = [
        context.Process(target=_gate_repeatedly, args=(str(tmp_path), number, verdicts)) for number in range(PROCESSES)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=600)

    assert [worker.exitcode for worker in workers] == [0] * PROCESSES
    results = sorted(verdicts.get(timeout=5) for _ in range(PROCESSES * GATES_PER_PROCESS))
    assert results == [(n, a, True) for n in range(PROCESSES) for a in range(GATES_PER_PROCESS)]
    # Readable by the next job: each process writes the data sources it knows (a job finding an asset missing adds
    # it again by name), never half a file.
    config = yaml.safe_load((tmp_path / "gx" / "great_expectations.yml").read_text())
    assert set(config["fluent_datasources"]) == {"pandas"}
    assert config["fluent_datasources"]["pandas"]["assets"]
