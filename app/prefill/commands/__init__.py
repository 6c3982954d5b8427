"""Command-line sub-commands. Each module has `register(subparsers)` and sets `handler`."""
