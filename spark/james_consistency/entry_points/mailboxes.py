"""spark-submit entry point: diagnose (check), repair or verify mailbox <-> path (james_consistency.mailboxes.job)."""

from james_consistency.engine.job import end_process
from james_consistency.mailboxes.job import main

if __name__ == "__main__":
    end_process(main())
