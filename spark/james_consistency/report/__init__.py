"""What a run tells: the run report's model (the published contract), exit codes, metrics and the history of kept
reports."""
