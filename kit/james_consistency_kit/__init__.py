"""The local kit: what runs only on an operator's machine, around the product package `james_consistency`.

The `james-consistency` command line, a local Cassandra node or ring, a local Airflow, a local Spark standalone
cluster, the seeders, fault injectors and James harnesses, the live-traffic writer, the demo, the benchmarks and the
run history. The kit imports the product, never the reverse; it is never shipped to a Spark cluster: the executors
receive only the product package, zipped by `james_consistency.runtime.product_zip`.
"""
