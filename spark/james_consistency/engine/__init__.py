"""The one reconcile engine: scan truth and projection, diff, gate, re-check and apply, verify, report."""
