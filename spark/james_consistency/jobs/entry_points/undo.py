"""spark-submit entry point: take a repair back from its before-images. See james_consistency.jobs.main."""

from james_consistency.runtime.installed_pyspark import prefer_installed_pyspark
from james_consistency.runtime.lean_gx_import import lean_gx_import

prefer_installed_pyspark()
lean_gx_import()

from james_consistency.jobs.main import end_process, undo_main  # noqa: E402 (after the path change)

if __name__ == "__main__":
    end_process(undo_main())
