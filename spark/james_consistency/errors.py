"""The one error type the command line turns into a clean one-line message and a non-zero exit."""


class OperatorError(Exception):
    """A problem an operator can act on: wrong input, a node down, a port taken.

    The message names the problem and, where there is one, the fix.
    """


class NodeUnreachable(OperatorError):
    """No Cassandra node answered (down, restarting, a network partition): an infrastructure failure that may pass,
    so jobs exit 5 like a node lost mid-run and Airflow retries them, unlike wrong input (exit 2)."""


class NotApplicable(Exception):
    """The repair target does not exist in this keyspace's James schema generation (e.g. aclv2 in James 3.5): there
    is nothing to check or repair, which is not an error."""
