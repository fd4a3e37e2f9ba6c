"""The one error type the command line turns into a clean one-line message and a non-zero exit."""


class OperatorError(Exception):
    """A problem an operator can act on: wrong input, a node down, a port taken.

    The message names the problem and, where there is one, the fix.
    """
