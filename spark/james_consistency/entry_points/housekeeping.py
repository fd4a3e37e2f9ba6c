"""spark-submit entry point: remove the before-images of runs that can no longer be undone. See
james_consistency.undo_retention."""

from james_consistency.jobs import end_process
from james_consistency.undo_retention import main

if __name__ == "__main__":
    end_process(main())
