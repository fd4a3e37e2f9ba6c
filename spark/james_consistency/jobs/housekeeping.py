"""The housekeeping job (the `housekeeping` DAG, spark-submit of entry_points/housekeeping.py): the before-images of
runs no longer undoable removed below each work root (james_consistency.undo.retention)."""

import argparse

from james_consistency.jobs.main import configure_logging, spark_session
from james_consistency.settings import setting
from james_consistency.undo.retention import remove_expired_before_images


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="housekeeping", description="Remove the before-images of runs that can no longer be undone."
    )
    parser.add_argument(
        "--root", dest="roots", action="append", required=True, help="a work root (a path or a Hadoop URL); repeat"
    )
    parser.add_argument(
        "--retention-days", type=float, help="default: JAMES_UNDO_RETENTION_DAYS of the job's environment"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    configure_logging()
    args = build_parser().parse_args(argv)
    spark = spark_session("james-consistency-housekeeping")
    try:
        removed, kept = remove_expired_before_images(spark, args.roots, retention_days=args.retention_days)
    finally:
        spark.stop()
    days = setting("JAMES_UNDO_RETENTION_DAYS") if args.retention_days is None else args.retention_days
    print(
        f"housekeeping: before-images of {len(removed)} runs older than {days:g} days removed, {len(kept)} kept "
        f"(below {', '.join(args.roots)})"
    )
    return 0
