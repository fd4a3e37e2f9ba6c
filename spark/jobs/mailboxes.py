"""spark-submit entry point: diagnose (check), repair or verify mailbox <-> path (james_consistency.mailboxes.job)."""

import sys

from james_consistency.mailboxes.job import main

if __name__ == "__main__":
    sys.exit(main())
