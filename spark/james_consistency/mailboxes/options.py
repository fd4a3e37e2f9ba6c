"""The mailbox repair's own options: what an operator chooses for a run (`RunOptions.target_options` of the target
`mailboxes`). Plain data, imported by the command line, the job and the DAG's trigger form alike.

Orphan paths (a path registration whose mailbox id has no mailbox row):

    recreate                  re-create the mailbox row from the path, whether or not messages reference it, as James
                              3.9.x and master do (SolveMailboxInconsistenciesService, PRs #3100/#3101): the path
                              table is the truth, and an orphan path is a create interrupted between its two writes
    recreate-when-referenced  re-create it only when messages still reference the id, else delete the path: an
                              interrupted create nobody used is removed, as 3.9.0 did, but a folder holding mail never
    delete                    always delete the path (James 3.9.0, ADR-0020): messages of the id become unreachable
"""

from dataclasses import dataclass

from james_consistency.errors import OperatorError

RECREATE = "recreate"
RECREATE_WHEN_REFERENCED = "recreate-when-referenced"
DELETE = "delete"
ORPHAN_PATH_POLICIES = (RECREATE, RECREATE_WHEN_REFERENCED, DELETE)
DEFAULT_MAX_PASSES = 5


@dataclass(frozen=True)
class MailboxOptions:
    """The typed confirmation (a repair needs ALL-SERVICES-ARE-OFFLINE), whether two ids claiming one path are
    merged (James's `autoMerge`), the orphan-path policy, and how many passes at most (James's `maxIterations`)."""

    confirmation: str | None = None
    merge: bool = False
    orphan_paths: str = RECREATE
    max_passes: int = DEFAULT_MAX_PASSES

    def validate(self) -> None:
        if self.orphan_paths not in ORPHAN_PATH_POLICIES:
            raise OperatorError(
                f"unknown orphan-path policy '{self.orphan_paths}': one of {', '.join(ORPHAN_PATH_POLICIES)}"
            )
        if self.max_passes < 1:
            raise OperatorError("max passes must be 1 or more")
