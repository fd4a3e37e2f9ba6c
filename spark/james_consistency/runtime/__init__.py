"""Where and how a job runs: the Spark environment, the package's data files, the product zip shipped to executors,
the local folders."""
