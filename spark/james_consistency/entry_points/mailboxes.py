"""spark-submit entry point: diagnose (check), repair or verify mailbox <-> path. See james_consistency.jobs."""

from james_consistency.jobs import end_process, mailboxes_main

if __name__ == "__main__":
    end_process(mailboxes_main())
