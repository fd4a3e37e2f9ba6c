"""spark-submit entry point: repair (or check, or verify) one James projection. See james_consistency.engine.job."""

from james_consistency.engine.job import end_process, main

if __name__ == "__main__":
    end_process(main())
