"""The jobs: the spark-submit entry points' code, the target registry that hands the engine its repair, and the
submission of a job from the command line."""
