"""The command line's own error: a one-line reason to stop with a non-zero exit."""

from __future__ import annotations


class CliError(Exception):
    """A one-line reason to stop with a non-zero exit."""
