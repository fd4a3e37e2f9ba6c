"""The offline mailbox repair: `mailbox` <-> `mailboxPathV3` (3.9) or `mailboxPathV2` (3.5).

As James 3.9.x and master (SolveMailboxInconsistenciesService) do, the path table is taken as the truth, but no
table is a projection of the other, so this repair is not a projection of the shared engine: it has its own
diagnosis (`diagnosis`, pure DataFrame functions over both full scans), its own decisions (`policy`, one action per
finding) over its own Cassandra I/O (`store`, each re-reading the current state at SERIAL just before it writes,
with lightweight transactions), its own options (`options`) and its own report with James's field names (`report`).
`repair` drives passes of diagnose -> act until a pass fixes nothing.
It must only run while James's SMTP/IMAP/JMAP traffic is stopped: the repair refuses to start without the typed
confirmation `ALL-SERVICES-ARE-OFFLINE`, as James's webadmin header requires.
"""

CONFIRMATION = "ALL-SERVICES-ARE-OFFLINE"
