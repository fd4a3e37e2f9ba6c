"""One small declarative description per projection, run by the shared engine."""

from james_consistency.errors import OperatorError


def projection_spec(target: str, generation: str):
    """The spec of a repair target for a James schema generation."""
    from james_consistency.projections import messages

    builders = {"messages": messages.message_projection}
    if target not in builders:
        raise OperatorError(f"unknown repair target '{target}': choose one of {', '.join(sorted(builders))}")
    return builders[target](generation)


TARGETS = ("messages",)
