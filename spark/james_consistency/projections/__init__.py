"""One small declarative description per projection, run by the shared engine."""

from james_consistency.errors import OperatorError
from james_consistency.settings import setting

TARGETS = ("messages", "acl", "aclv2", "deleted", "unseen", "recent", "flags", "counters", "quotas")
# Checks of data James's own schema holds but the project's seeded schema does not (the attachment lists of messages):
# run on James-written keyspaces only, so kept out of the every-target loops.
CHECKS = ("attachments",)


def projection_spec(target: str, generation: str, **options):
    """The spec of a repair target for a James schema generation; `options` reach the builders that take them
    (target_options for `flags`: its FlagOptions; keyspace_tables for `quotas`). Whether James handles IMAP Recent
    (JAMES_HANDLE_RECENT) shapes `messages` and `recent`."""
    from james_consistency.projections import acl, attachments, counters, flags, indexes, messages

    handle_recent = setting("JAMES_HANDLE_RECENT")
    builders = {
        "messages": lambda generation: messages.message_projection(generation, handle_recent=handle_recent),
        "acl": acl.user_mailbox_acl_projection,
        "aclv2": acl.aclv2_projection,
        "deleted": indexes.deleted_projection,
        "unseen": indexes.unseen_projection,
        "recent": lambda generation: indexes.recent_projection(generation, handle_recent=handle_recent),
        "flags": lambda generation: flags.applicable_flag_projection(
            generation, remove_unused=(options.get("target_options") or flags.FlagOptions()).remove_unused
        ),
        "counters": counters.mailbox_counters_projection,
        "quotas": lambda generation: counters.quota_projection(generation, options.get("keyspace_tables")),
        "attachments": lambda generation: attachments.attachment_projection(generation, options.get("keyspace_tables")),
    }
    if target not in builders:
        raise OperatorError(f"unknown repair target '{target}': choose one of {', '.join(builders)}")
    return builders[target](generation)
