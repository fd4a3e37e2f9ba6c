"""A spark-submit driver's import of Great Expectations without the parts of it the gates never run.

Importing `great_expectations` takes about 4.5 CPU-s, a third of a small job's processor time, and every job whose run
is gated pays it. Two of its dependencies do nothing for our gates (validations of pandas and Spark DataFrames):

- SQLAlchemy: GX imports it, when it is installed (Airflow installs it), for its SQL data sources. Marked absent in a
  job's process, GX leaves those out, as on an install without it.
- scipy.stats: GX imports it for its distribution expectations (KL divergence, KS tests), which no suite of ours uses.
  It is loaded on first use instead (importlib's LazyLoader): an expectation that needs it still gets it.

Together about 1.4 CPU-s of each job's driver. For a job's own process only (the entry points call it before anything
imports GX): in Airflow's processes or a test's, SQLAlchemy is in use.
"""

import importlib.util
import sys

UNUSED_BY_GATES = "sqlalchemy"
LOADED_ON_FIRST_USE = "scipy.stats"


def lean_gx_import() -> None:
    """Before this process first imports GX: mark SQLAlchemy absent and let scipy.stats load on first use. Does
    nothing to a module already imported, nor once GX is."""
    if "great_expectations" in sys.modules:
        return
    if UNUSED_BY_GATES not in sys.modules:
        sys.modules[UNUSED_BY_GATES] = None  # `import sqlalchemy` now raises ImportError, as if not installed
    if LOADED_ON_FIRST_USE not in sys.modules:
        load_on_first_use(LOADED_ON_FIRST_USE)


def load_on_first_use(name: str) -> None:
    """Register module `name` so that its code runs when one of its attributes is first read, not when imported."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        return
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)
