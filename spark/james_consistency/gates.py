"""Great Expectations gates on Spark DataFrames.

Suites live as reviewable JSON in the package's `expectations/` folder (package data) and are loaded into a file
context under the git-ignored `.local/gx` (or JAMES_GX_ROOT) on each run; validation results (JSON) and Data Docs
(HTML) are kept there, under `gx/uncommitted/`, where an operator finds them: the newest JAMES_GX_RESULTS_KEPT
(default 30) of each suite.
"""

import fcntl
import json
import os
import shutil
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from james_consistency.runtime.package_data import suite_path
from james_consistency.runtime.paths import LOCAL_DIR
from james_consistency.settings import setting


def gx_root() -> Path:
    return Path(setting("JAMES_GX_ROOT") or LOCAL_DIR / "gx")


@dataclass
class GateResult:
    name: str
    success: bool
    evaluated: int
    failed_expectations: list[dict] = field(default_factory=list)
    results_dir: str = ""
    data_docs: str = ""
    # This validation's own Data Docs page ("" when unknown): the site's index lists every kept validation.
    data_docs_page: str = ""
    # Rows behind a failure, when the gate judged figures measured on a table (e.g. the truth's health).
    sample_rows: list[dict] = field(default_factory=list)
    # The run that judged these figures, when this verdict is repeated by a run reusing its scan ("": this run's).
    judged_by_run: str = ""

    def as_dict(self) -> dict:
        return asdict(self)

    def summary(self) -> str:
        if self.success:
            return f"gate {self.name}: passed ({self.evaluated} expectations)"
        failed = "; ".join(
            f"{failure['expectation']}({failure['target']}): {failure['observed']}"
            for failure in self.failed_expectations
        )
        return f"gate {self.name}: FAILED {len(self.failed_expectations)}/{self.evaluated}: {failed}"


_CONTEXTS: dict = {}


def prune_validation_results(root: Path, keep: int) -> int:
    """Delete all but the newest `keep` validation results of each suite, with their Data Docs pages."""
    uncommitted = root / "gx" / "uncommitted"
    removed = 0
    for suite in (uncommitted / "validations").glob("*"):
        runs = sorted(suite.glob("*/*"), key=lambda run: run.name)  # <run name>/<UTC timestamp>
        for run in runs[: max(len(runs) - keep, 0)]:
            relative = run.relative_to(uncommitted / "validations")
            shutil.rmtree(run, ignore_errors=True)
            shutil.rmtree(uncommitted / "data_docs" / "local_site" / "validations" / relative, ignore_errors=True)
            removed += 1
    return removed


@contextmanager
def _exclusive(root: Path):
    """One process at a time changes a GX root: its files (great_expectations.yml, the stores of suites, validation
    definitions and checkpoints) are rewritten whole on each change, and two jobs gating at once (a command-line check
    during a DAG run) left them torn for both."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".gates.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _reuse_compiled_templates() -> None:
    """Every Data Docs page view GX renders builds a Jinja environment of its own, which compiles the site's templates
    again: about two thirds of a gate's time (0.21 s a gate, 0.08 s with this). Their environments share one
    in-memory bytecode cache instead, keyed as Jinja's file caches are (template name and source checksum)."""
    from great_expectations.render.view.view import DefaultJinjaView
    from jinja2 import BytecodeCache

    if getattr(DefaultJinjaView.__init__, "reuses_compiled_templates", False):
        return

    class InMemoryBytecodeCache(BytecodeCache):
        def __init__(self):
            self.codes = {}

        def load_bytecode(self, bucket):
            if bucket.key in self.codes:
                bucket.code = self.codes[bucket.key]

        def dump_bytecode(self, bucket):
            self.codes[bucket.key] = bucket.code

    compiled, built = InMemoryBytecodeCache(), DefaultJinjaView.__init__

    def init(view, *arguments, **options):
        built(view, *arguments, **options)
        if getattr(view, "env", None) is not None:
            view.env.bytecode_cache = compiled

    init.reuses_compiled_templates = True
    DefaultJinjaView.__init__ = init


def _context():
    """The file context of this process (built once: it takes seconds)."""
    root = str(gx_root())
    if root not in _CONTEXTS:
        os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
        import great_expectations as gx

        _reuse_compiled_templates()

        context = gx.get_context(mode="file", project_root_dir=root)
        context.variables.progress_bars = {"globally": False}
        _CONTEXTS[root] = context
    return _CONTEXTS[root]


def load_suite(name: str):
    import great_expectations as gx

    path = suite_path(name)
    document = json.loads(path.read_text())
    document.pop("id", None)
    return gx.ExpectationSuite(**document)


def validate_figures(
    figures: dict, suite_name: str, parameters: dict | None = None, asset: str | None = None
) -> GateResult:
    """Validate one row of figures (measured during a scan) against a suite: in pandas, as a one-row table needs no
    Spark job (each expectation on a Spark DataFrame costs a few Spark jobs: about 2 s a gate)."""
    import pandas

    return validate(pandas.DataFrame([figures]), suite_name, parameters, asset)


# A Spark DataFrame whose row count is known and at most this is validated in pandas (collected first).
PANDAS_ROWS = 10_000


def validate_counted(frame, rows: int, suite_name: str, asset: str | None = None) -> GateResult:
    """Validate a Spark DataFrame whose row count the run already knows: in pandas when it has at most PANDAS_ROWS
    rows (none: not even a Spark job), as a gate on a Spark DataFrame costs a few Spark jobs; in Spark otherwise."""
    if rows > PANDAS_ROWS:
        return validate(frame, suite_name, asset=asset)
    import pandas

    rows_of_frame = frame.toPandas() if rows else pandas.DataFrame(columns=frame.columns)
    return validate(rows_of_frame, suite_name, asset=asset)


def validate(frame, suite_name: str, parameters: dict | None = None, asset: str | None = None) -> GateResult:
    """Validate a Spark (or pandas) DataFrame against a suite of `expectations/`; results and Data Docs are kept."""
    from great_expectations.exceptions.resource_freshness import ResourceFreshnessAggregateError

    arguments = {"batch_parameters": {"dataframe": frame}, "expectation_parameters": parameters or {}}
    engine = _engine(frame)
    with _exclusive(gx_root()):
        # Validation results (and their Data Docs pages) kept per suite: every Data Docs update indexes all of them,
        # so an unbounded history would make each night's gates slower than the last. The reports keep every outcome.
        prune_validation_results(gx_root(), setting("JAMES_GX_RESULTS_KEPT") - 1)
        try:
            result = gate_checkpoint(suite_name, asset or suite_name, engine).run(**arguments)
        except ResourceFreshnessAggregateError:
            # Another process (a job sharing this GX root) saved the suite again since this one built its objects.
            forget_gate_objects()
            result = gate_checkpoint(suite_name, asset or suite_name, engine).run(**arguments)
    root = gx_root() / "gx" / "uncommitted"
    site = root / "data_docs" / "local_site"
    return GateResult(
        name=suite_name,
        success=bool(result.success),
        evaluated=evaluated(result),
        failed_expectations=failures(result),
        results_dir=str(root / "validations" / suite_name),
        data_docs=str(site / "index.html"),
        data_docs_page=str(site / "validations" / validation_page(result)),
    )


def validation_page(result) -> str:
    """Where the site keeps the page of the checkpoint's validation, relative to its `validations/` folder: the
    validation result's identifier (suite, run name, run time, batch), as GX's Data Docs store lays it out."""
    identifier = next(iter(result.run_results))
    return "/".join(identifier.to_tuple()) + ".html"


# ---- the named GX objects, created once per process and GX root -----------------------------------------------------

_SUITES: dict = {}
_CHECKPOINTS: dict = {}


def _engine(frame) -> str:
    """The GX data source a frame is validated in: `pandas` for a pandas DataFrame, `spark` otherwise."""
    return "pandas" if type(frame).__module__.startswith("pandas") else "spark"


def gate_checkpoint(suite_name: str, asset_name: str, engine: str = "spark"):
    """The checkpoint that validates a whole DataFrame of `asset_name` against the suite: one validation definition
    and checkpoint per (suite, asset), as projections of one truth share its suite; built on the first gate of this
    process (from the repository's suite) and reused by the next ones."""
    key = (str(gx_root()), suite_name, asset_name, engine)
    if key not in _CHECKPOINTS:
        import great_expectations as gx

        context = _context()
        name = suite_name if asset_name == suite_name else f"{suite_name}-{asset_name}"
        data = _whole_dataframe(context, asset_name, engine)
        definition = context.validation_definitions.add_or_update(
            gx.ValidationDefinition(name=name, data=data, suite=_suite(suite_name))
        )
        _CHECKPOINTS[key] = context.checkpoints.add_or_update(
            gx.Checkpoint(
                name=name,
                validation_definitions=[definition],
                actions=[gx.checkpoint.UpdateDataDocsAction(name="update_data_docs")],
                result_format={"result_format": "SUMMARY", "partial_unexpected_count": 10},
            )
        )
    return _CHECKPOINTS[key]


def forget_gate_objects() -> None:
    """Build the GX objects again on the next gate (from the repository's suites)."""
    _SUITES.clear()
    _CHECKPOINTS.clear()


def _suite(name: str):
    """The suite as the repository's `expectations/` holds it, saved into the context once."""
    key = (str(gx_root()), name)
    if key not in _SUITES:
        _SUITES[key] = _context().suites.add_or_update(load_suite(name))
    return _SUITES[key]


def _whole_dataframe(context, asset_name: str, engine: str = "spark"):
    """The batch definition `whole` of the DataFrame asset `asset_name` of the data source `engine` (spark or
    pandas), fetched by name or added."""
    try:
        source = context.data_sources.get(engine)
    except (KeyError, LookupError, ValueError):
        add = context.data_sources.add_pandas if engine == "pandas" else context.data_sources.add_spark
        source = add(name=engine)
    try:
        data_asset = source.get_asset(asset_name)
    except LookupError:
        data_asset = source.add_dataframe_asset(name=asset_name)
    try:
        return data_asset.get_batch_definition("whole")
    except (KeyError, LookupError):
        return data_asset.add_batch_definition_whole_dataframe("whole")


# ---- reading a checkpoint's result ----------------------------------------------------------------------------------


def _expectation_results(result):
    return [expectation for validation in result.run_results.values() for expectation in validation.results]


def evaluated(result) -> int:
    """How many expectations a checkpoint result judged."""
    return len(_expectation_results(result))


def failures(result) -> list[dict]:
    """Each failed expectation of a checkpoint result: its type, the column (or columns, or description) it judged,
    what was observed (the number of unexpected rows, or the observed value) and a sample of at most 10 values."""
    found = []
    for expectation in _expectation_results(result):
        if expectation.success:
            continue
        details = expectation.result or {}
        config = expectation.expectation_config
        kwargs = config.kwargs
        found.append(
            {
                "expectation": config.type,
                "target": kwargs.get("column") or kwargs.get("column_list") or config.description or "table",
                "observed": details.get("unexpected_count", details.get("observed_value")),
                "sample": _plain(details.get("partial_unexpected_list") or [])[:10],
                "description": config.description,
            }
        )
    return found


def _plain(values):
    return json.loads(json.dumps(values, default=str))
