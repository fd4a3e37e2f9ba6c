"""Cassandra as every layer above sees it: connection settings, the driver session and its errors, the James schema
and its generations, consistency levels, the ACL rights alphabet."""
