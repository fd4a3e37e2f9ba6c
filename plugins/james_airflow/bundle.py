"""The DAG bundle of james-consistency: the package's DAG files (james_airflow.dags: the checkout's top-level dags/),
served to Airflow where the
package is installed, as a bundle of their own beside the deployment's other bundles. It is configured the way a
provider's bundle (Git, S3, GCS) is, in `[dag_processor] dag_bundle_config_list`:

    {"name": "james-consistency", "classpath": "james_airflow.bundle.JamesConsistencyDagBundle", "kwargs": {}}

Nothing is copied into a DAGs folder: installing another version of the package is installing its DAGs. Like the
LocalDagBundle it extends, it is not versioned (a run's tasks run the DAG files installed when they start).
"""

from importlib import resources
from pathlib import Path

from airflow.dag_processing.bundles.local import LocalDagBundle

BUNDLE_NAME = "james-consistency"
# pip installs the package as a folder: its DAG files are files on disk, as a LocalDagBundle needs.
DAGS_FOLDER = Path(str(resources.files("james_airflow.dags")))
BUNDLE_CONFIG = {"name": BUNDLE_NAME, "classpath": f"{__name__}.JamesConsistencyDagBundle", "kwargs": {}}


class JamesConsistencyDagBundle(LocalDagBundle):
    """A LocalDagBundle whose path is the installed package's DAGs folder (no `path` to configure)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(path=str(DAGS_FOLDER), **kwargs)
