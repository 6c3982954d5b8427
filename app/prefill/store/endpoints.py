"""Saved remote endpoints (OpenAI-compatible servers), beside the settings in the config folder.

Each has a name, a base URL, a model and an optional key. The key is kept like the hub token:
the file is written with mode 0600, and no repr or log line shows it. The file is checked here,
once: an entry that is not the right shape is skipped, a file that is not JSON reads as empty.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import platformdirs

from prefill.engine.private_paths import write_private
from prefill.engine.setting_fields import is_text
from prefill.store.errors import SettingsError

log = logging.getLogger(__name__)

ENDPOINTS_FILE = "endpoints.json"
MAX_BYTES = 1 << 20


@dataclass(frozen=True)
class SavedEndpoint:
    """One remote endpoint a person saved.

    Attributes:
        name: What the model picker shows (unique among the saved ones).
        url: The server or its API root, as typed (`http://127.0.0.1:8080`).
        model: The model id picked from its /v1/models ("" = the first it lists).
        api_key: Sent as a bearer token ("" = none); never shown in repr or logs.
    """

    name: str
    url: str
    model: str = ""
    api_key: str = field(default="", repr=False)


def default_endpoints_path() -> Path:
    """Where the saved endpoints live: the platform's config folder for "prefill"."""
    return Path(platformdirs.user_config_dir("prefill", appauthor=False)) / ENDPOINTS_FILE


class EndpointsFile:
    """The saved endpoints file.

    Args:
        path: The JSON file. Defaults to ``default_endpoints_path()``.
    """

    def __init__(self, path: Path | str | None = None):
        self.path = Path(path) if path is not None else default_endpoints_path()

    def load(self) -> list[SavedEndpoint]:
        """The saved endpoints, in the order saved; a missing or unusable file gives none.

        Raises:
            SettingsError: The file exists but cannot be read (permissions, I/O error).
        """
        try:
            with self.path.open("rb") as handle:
                raw = handle.read(MAX_BYTES + 1)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise SettingsError(self.path, exc.strerror or str(exc)) from exc
        try:
            data = json.loads(raw.decode("utf-8")) if len(raw) <= MAX_BYTES else None
        except (ValueError, RecursionError):
            data = None
        items = data.get("endpoints") if isinstance(data, dict) else None
        if not isinstance(items, list):
            log.warning("endpoints: %s is not a saved-endpoints file; no endpoints read", self.path)
            return []
        out: list[SavedEndpoint] = []
        for item in items:
            endpoint = _entry(item)
            if endpoint is None or any(e.name == endpoint.name for e in out):
                log.warning("endpoints: %s: an entry was skipped (not name/url strings, or a repeated name)", self.path)
                continue
            out.append(endpoint)
        return out

    def save(self, endpoints: Iterable[SavedEndpoint]) -> None:
        """Write all endpoints atomically, readable by the owner only.

        Raises:
            SettingsError: The folder or file cannot be written.
        """
        text = json.dumps({"endpoints": [asdict(e) for e in endpoints]}, indent=2, ensure_ascii=False) + "\n"
        try:
            write_private(self.path, text)
        except OSError as exc:
            raise SettingsError(self.path, exc.strerror or str(exc)) from exc

    def put(self, endpoint: SavedEndpoint) -> None:
        """Save an endpoint, in place of one of the same name."""
        kept = [e for e in self.load() if e.name != endpoint.name]
        self.save([*kept, endpoint])

    def remove(self, name: str) -> None:
        self.save([e for e in self.load() if e.name != name])

    def for_url(self, url: str) -> SavedEndpoint | None:
        """The first saved endpoint with this URL (trailing slashes aside), or None."""
        want = url.strip().rstrip("/")
        return next((e for e in self.load() if e.url.strip().rstrip("/") == want), None)


def _entry(item: object) -> SavedEndpoint | None:
    if not isinstance(item, dict):
        return None
    values = {k: item.get(k, "") for k in ("name", "url", "model", "api_key")}
    if not all(is_text(v) for v in values.values()) or not values["name"] or not values["url"]:
        return None
    return SavedEndpoint(**values)


