"""Reading and writing the settings as JSON in the platform's config folder."""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from prefill.engine.errors import InvalidSetting
from prefill.engine.private_paths import write_private
from prefill.store.app_settings import Settings
from prefill.store.errors import SettingsError

log = logging.getLogger(__name__)

SETTINGS_FILE = "settings.json"
MAX_BYTES = 1 << 20  # a real settings file is about 1 KiB; a larger one is not ours


@dataclass(frozen=True)
class SettingsRead:
    """What reading the settings file gave.

    Attributes:
        settings: The settings to use (every value checked).
        repaired: One error per value the file held that was replaced by its default.
        set_aside: Why the whole file was unusable ("" when it was used).
        backup: Where that file was moved (None when it was used, or could not be moved).
    """

    settings: Settings
    repaired: tuple[InvalidSetting, ...] = ()
    set_aside: str = ""
    backup: Path | None = None


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
        """Read the settings, never failing on what the file holds; see ``read``.

        Raises:
            SettingsError: The file exists but cannot be read (permissions, I/O error).
        """
        return self.read().settings

    def read(self) -> SettingsRead:
        """Read the settings and say what had to be repaired.

        A missing file gives the defaults. A file that is not a JSON object is moved to
        ``backup_path`` and the defaults are returned. Unknown keys are ignored; a value
        of the wrong type or range, or one that breaks a rule between settings, is
        replaced by its default (and listed in ``repaired``).

        Raises:
            SettingsError: The file exists but cannot be read (permissions, I/O error).
        """
        try:
            with self.path.open("rb") as handle:
                raw = handle.read(MAX_BYTES + 1)
        except FileNotFoundError:
            return SettingsRead(Settings())
        except OSError as exc:
            raise SettingsError(self.path, exc.strerror or str(exc)) from exc
        if len(raw) > MAX_BYTES:
            return self._set_aside(f"it is larger than {MAX_BYTES // 1024} KiB")
        try:
            data = json.loads(raw.decode("utf-8"))
        except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError both are.
            return self._set_aside(f"it is not valid JSON ({exc})")
        except RecursionError:
            return self._set_aside("it is nested too deeply")
        if not isinstance(data, dict):
            return self._set_aside(f"it holds a JSON {type(data).__name__}, not an object")
        repaired: list[InvalidSetting] = []
        settings = Settings.from_dict(data, repaired=repaired)
        return SettingsRead(settings, tuple(repaired))

    def save(self, settings: Settings) -> None:
        """Write the settings atomically: a temporary file, then os.replace.

        The file is readable by its owner only, since it may hold the hub token.

        Raises:
            SettingsError: The folder or file cannot be written.
        """
        text = json.dumps(settings.to_dict(), indent=2, ensure_ascii=False) + "\n"
        try:
            write_private(self.path, text)
        except OSError as exc:
            raise SettingsError(self.path, exc.strerror or str(exc)) from exc

    def _set_aside(self, why: str) -> SettingsRead:
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
            return SettingsRead(Settings(), set_aside=why)
        return SettingsRead(Settings(), set_aside=why, backup=self.backup_path)
