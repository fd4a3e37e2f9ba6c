"""spark-submit entry point: repair (or check, or verify) one James projection. See james_consistency.engine.job."""

import sys

from james_consistency.engine.job import main

if __name__ == "__main__":
    sys.exit(main())
