"""`james-consistency`, the command line of the installed package."""
