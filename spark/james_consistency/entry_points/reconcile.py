"""spark-submit entry point: repair (or check, or verify) one James projection. See james_consistency.jobs."""

from james_consistency.jobs import end_process, main

if __name__ == "__main__":
    end_process(main())
