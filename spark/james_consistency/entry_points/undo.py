"""spark-submit entry point: take a repair back from its before-images. See james_consistency.jobs."""

from james_consistency.jobs import end_process, undo_main

if __name__ == "__main__":
    end_process(undo_main())
