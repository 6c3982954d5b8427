"""Reading and writing the settings as JSON in the platform's config folder."""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path

import platformdirs

from prefill.store.errors import SettingsError
from prefill.store.settings import Settings

log = logging.getLogger(__name__)

SETTINGS_FILE = "settings.json"


def default_settings_path() -> Path:
    """Return where the settings live: the platform's config folder for "prefill"."""
    return Path(platformdirs.user_config_dir("prefill", appauthor=False)) / SETTINGS_FILE


class SettingsFile:
    """The settings file.

    Args:
        path: The JSON file. Defaults to ``default_settings_path()``.
    """

    def __init__(self, path: Path | str | None = None):
        self.path = Path(path) if path is not None else default_settings_path()

    @property
    def backup_path(self) -> Path:
        """Where an unreadable settings file is moved aside (``settings.json.bak``)."""
        return self.path.with_name(self.path.name + ".bak")

    def load(self) -> Settings:
        """Read the settings, never failing on what the file holds.

        A missing file gives the defaults. A file that is not a JSON object is moved to
        ``backup_path`` and the defaults are returned. Unknown keys are ignored and a
        value of the wrong type or range falls back to its default (and is logged).

        Raises:
            SettingsError: The file exists but cannot be read (permissions, I/O error).
        """
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return Settings()
        except OSError as exc:
            raise SettingsError(self.path, exc.strerror or str(exc)) from exc
        try:
            data = json.loads(raw.decode("utf-8"))
        except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError both are.
            self._set_aside(f"it is not valid JSON ({exc})")
            return Settings()
        if not isinstance(data, dict):
            self._set_aside(f"it holds a JSON {type(data).__name__}, not an object")
            return Settings()
        return Settings.from_dict(data)

    def save(self, settings: Settings) -> None:
        """Write the settings atomically: a temporary file, then os.replace.

        The file is readable by its owner only, since it may hold the hub token.

        Raises:
            SettingsError: The folder or file cannot be written.
        """
        text = json.dumps(settings.to_dict(), indent=2, ensure_ascii=False) + "\n"
        temp_name = ""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # mkstemp creates the file with mode 0600.
            fd, temp_name = tempfile.mkstemp(
                prefix=self.path.name + ".", suffix=".tmp", dir=self.path.parent
            )
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp_name, self.path)
        except OSError as exc:
            if temp_name:
                Path(temp_name).unlink(missing_ok=True)
            raise SettingsError(self.path, exc.strerror or str(exc)) from exc

    def _set_aside(self, why: str) -> None:
        log.warning(
            "settings: %s: %s; keeping it as %s and using the defaults",
            self.path,
            why,
            self.backup_path,
        )
        try:
            os.replace(self.path, self.backup_path)
        except OSError as exc:
            # The defaults still work; the next save will say if the folder is unwritable.
            log.warning("settings: cannot keep %s as %s: %s", self.path, self.backup_path, exc)
