"""The store's typed errors and repairs, worded for the person at the window."""

from __future__ import annotations

from prefill.store import HistoryUnavailable, SchemaTooNew, SettingsError
from prefill.store.settings_file import SettingsRead


def store_error_text(error: Exception) -> str:
    """One sentence, with a next step, for a store call that failed."""
    if isinstance(error, SchemaTooNew):
        return (f"The chat history at {error.path} was written by a newer Prefill. "
                "Update Prefill to open it; chats are not saved meanwhile.")
    if isinstance(error, HistoryUnavailable):
        return (f"The chat history at {error.path} cannot be used ({error.reason}). "
                "Chats are not saved until that is fixed; the app still works.")
    if isinstance(error, SettingsError):
        return (f"The settings could not be saved to {error.path} ({error.reason}). "
                "Your changes last until Prefill quits.")
    return f"Saving or reading the chat history failed: {error}"


def settings_unreadable_text(error: SettingsError) -> str:
    """The settings file exists but could not be read at start-up."""
    return (f"The settings file {error.path} could not be read ({error.reason}). "
            "Prefill started with the default settings and will not save over that file.")


def settings_read_text(read: SettingsRead) -> str:
    """What was repaired while reading the settings file; "" when nothing was."""
    if read.set_aside:
        kept = f" It was kept as {read.backup}." if read.backup else ""
        return f"The settings file could not be used: {read.set_aside}.{kept} Prefill uses the default settings."
    if read.repaired:
        what = "; ".join(str(e) for e in read.repaired)
        return f"Some settings were invalid and were reset to their defaults ({what})."
    return ""
