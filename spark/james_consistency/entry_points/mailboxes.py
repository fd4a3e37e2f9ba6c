"""spark-submit entry point: diagnose (check), repair or verify mailbox <-> path. See james_consistency.jobs."""

from james_consistency.installed_pyspark import prefer_installed_pyspark

prefer_installed_pyspark()

from james_consistency.jobs import end_process, mailboxes_main  # noqa: E402 (after the path change)

if __name__ == "__main__":
    end_process(mailboxes_main())
