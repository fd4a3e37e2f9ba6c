"""James's ACL rights letters (MailboxACL.Right), in the order James serializes them (`lrs`, never `srl`)."""

RIGHTS_ORDER = "aeiklprstwx"
