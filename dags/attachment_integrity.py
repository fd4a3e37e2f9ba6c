"""attachment_integrity: a message must never have missing attachments (the seed plan's "Message <-> attachment").

`attachments` checks that every attachment a message references (the attachment list of messageV3, messageV2 in
James 3.5) has its attachmentV2 row with a blob id, and the reference James keeps between them: attachmentV2's
message_id (James 3.6+), an attachmentMessageId row (3.5). A missing reference is written back from the message and
the attachment row, as James writes it; nothing is ever deleted nor overwritten. A message whose attachment row is
gone (or has no blob id) cannot be fixed from the data: the check reports it (message id, attachment id, mailbox ids
holding it) and ends PARTIAL, which fails its task and alerts; the repair of the references that can be derived
still runs (a lost attachment stays lost, and must not hold back the other fixes forever), and ends PARTIAL too.

Weekly, off-peak: Sunday 05:00 by default (`JAMES_ATTACHMENT_CHECK_CRON`, timezone `JAMES_REPAIR_TIMEZONE`).
"""

from airflow.sdk import TriggerRule
from james_airflow.consistency_dag import consistency_dag

dag = consistency_dag(
    dag_id="attachment_integrity",
    target="attachments",
    target_title="the attachments of messages",
    cron_variable="JAMES_ATTACHMENT_CHECK_CRON",
    doc_md=__doc__,
)
# The check fails (exit 3, alerted) when it found attachments that cannot be fixed: the decision still reads its
# report and goes on to the references it can fix.
dag.get_task("anything_to_repair").trigger_rule = TriggerRule.ALL_DONE
