"""Command-line entry points; each turns a RipError into one line and an exit code."""
