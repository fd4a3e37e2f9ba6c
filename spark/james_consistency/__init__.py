"""Consistency repairs for Apache James's Cassandra tables, at Spark speed."""

__version__ = "0.2.0"
