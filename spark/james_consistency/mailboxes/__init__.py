"""The offline mailbox repair: `mailbox` <-> `mailboxPathV3` (3.9) or `mailboxPathV2` (3.5).

Neither table is the source of truth (ADR-0020), so this repair is not a projection of the shared engine: it has its
own diagnosis (`diagnosis`, pure DataFrame functions over both full scans), its own policy (`policy`, one action per
finding, each re-reading the current state at SERIAL just before it writes, with lightweight transactions) and its
own report with James's field names (`report`). `job` drives passes of diagnose -> act until a pass fixes nothing.
It must only run while James's SMTP/IMAP/JMAP traffic is stopped: the repair refuses to start without the typed
confirmation `ALL-SERVICES-ARE-OFFLINE`, as James's webadmin header requires.
"""

CONFIRMATION = "ALL-SERVICES-ARE-OFFLINE"
