"""spark-submit entry point: remove the before-images of runs that can no longer be undone. See
james_consistency.undo_retention."""

from james_consistency.installed_pyspark import prefer_installed_pyspark

prefer_installed_pyspark()

from james_consistency.jobs import end_process  # noqa: E402 (after the path change)
from james_consistency.undo_retention import main  # noqa: E402

if __name__ == "__main__":
    end_process(main())
