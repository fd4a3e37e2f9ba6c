"""The spark-submit entry points: the files spark-submit runs as a job's main program (package data, found through
`runtime.package_data.entry_point`), each a few lines calling the job's code in `james_consistency.jobs`."""
