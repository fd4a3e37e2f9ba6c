"""Where the project keeps its local state (connector jars or their Ivy cache, node data, reports, GX results,
alerts): the folder JAMES_CONSISTENCY_LOCAL_DIR names, else the checkout's git-ignored `.local` when the package runs
from its checkout (`make`, the editable install), else the user's data folder. The files the package ships:
`package_data`; the jars Spark gets: `connector_jars`."""

import os
from pathlib import Path

from james_consistency.settings import setting


def _checkout() -> Path | None:
    """The repository this package runs from, or None when it is installed from a wheel."""
    root = Path(__file__).resolve().parents[3]
    return root if (root / "pyproject.toml").is_file() and (root / "spark" / "james_consistency").is_dir() else None


def _user_data_dir() -> Path:
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "james-consistency"


PROJECT_ROOT = _checkout()
DEFAULT_LOCAL_DIR = PROJECT_ROOT / ".local" if PROJECT_ROOT else _user_data_dir()
LOCAL_DIR = Path(setting("JAMES_CONSISTENCY_LOCAL_DIR") or DEFAULT_LOCAL_DIR)
JARS_DIR = LOCAL_DIR / "jars"
CASSANDRA_JARS_DIR = JARS_DIR / "cassandra"
SPARK_JARS_DIR = JARS_DIR / "spark"
REPORTS_DIR = LOCAL_DIR / "reports"
