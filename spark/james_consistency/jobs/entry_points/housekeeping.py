"""spark-submit entry point: remove the before-images of runs that can no longer be undone. See
james_consistency.jobs.housekeeping."""

from james_consistency.runtime.installed_pyspark import prefer_installed_pyspark

prefer_installed_pyspark()

from james_consistency.jobs.housekeeping import main  # noqa: E402
from james_consistency.jobs.main import end_process  # noqa: E402 (after the path change)

if __name__ == "__main__":
    end_process(main())
