"""Talking to the Hugging Face hub: search, repository listings, file metadata.

A thin layer over `huggingface_hub` whose only jobs are to ask for exactly what
Prefill shows and to turn the library's exceptions into Prefill's typed errors
(`translate_errors`). The token is handed to `huggingface_hub`, which sends it as a
header; it never appears in a message, a repr or a log line written here.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from email.message import Message as MailHeaders
from typing import Any, Literal

import httpx2
from huggingface_hub import HfApi, constants, get_hf_file_metadata, hf_hub_url
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    OfflineModeIsEnabled,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.utils import get_session, hf_raise_for_status  # type: ignore[attr-defined]

from prefill.hub.errors import (
    BadToken,
    GatedRepo,
    HubError,
    HubUnreachable,
    RemoteFileNotFound,
    RepoNotFound,
)
from prefill.hub.paths import check_repo_id, safe_relpath
from prefill.hub.quants import ModelFiles, RemoteFile, group_models

SortKey = Literal["downloads", "likes", "last_modified"]
SORT_KEYS: tuple[SortKey, ...] = ("downloads", "likes", "last_modified")
_BAD_CREDENTIALS = "Invalid credentials in Authorization header"
_EXPAND = ["downloads", "likes", "lastModified", "gated", "tags", "gguf"]


@dataclass(frozen=True)
class RepoSummary:
    """One search hit; `params`: the model's parameter count as the hub read it from its GGUF (None
    when the hub does not say)."""

    repo_id: str
    downloads: int
    likes: int
    last_modified: datetime | None
    gated: bool
    params: int | None = None


@dataclass(frozen=True)
class RepoListing:
    """A repository's GGUF models at one commit."""

    repo_id: str
    commit: str | None
    gated: bool
    models: list[ModelFiles]


@dataclass(frozen=True)
class FileMeta:
    """What a HEAD on a file's resolve URL says."""

    url: str  # where to GET the bytes (the hub, or a CDN it redirects to)
    size: int | None
    etag: str | None
    commit: str | None


class HubClient:
    """Search the hub and read repository listings and file metadata.

    Args:
        endpoint: hub URL; defaults to HF_ENDPOINT or https://huggingface.co.
        token: access token; defaults to HF_TOKEN (or the saved login). Never logged.
        timeout: seconds to wait for the hub's answer to one request.
    """

    def __init__(self, endpoint: str | None = None, token: str | None = None, timeout: float = 15.0):
        self.endpoint = (endpoint or os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")
        self._token = token if token else None
        self.timeout = timeout
        self._api = HfApi(endpoint=self.endpoint, token=self._token)

    def __repr__(self) -> str:  # never show the token
        return f"HubClient(endpoint={self.endpoint!r}, token={'set' if self._token else 'unset'})"

    @property
    def token(self) -> str | bool | None:
        """What to give `huggingface_hub` as `token=` (None: its own default lookup)."""
        return self._token

    def search(self, query: str, sort: SortKey = "downloads", limit: int = 50) -> list[RepoSummary]:
        """GGUF model repositories whose name matches `query`, best first by `sort`."""
        if sort not in SORT_KEYS:
            raise ValueError(f"sort by one of {', '.join(SORT_KEYS)}, not {sort!r}")
        params: dict[str, Any] = {"search": query, "filter": "gguf", "limit": limit, "expand": _EXPAND,
                  "sort": "lastModified" if sort == "last_modified" else sort}
        # One request, no retries: huggingface_hub's list_models backs off for ~23 s before it
        # admits that the hub is unreachable; a search box should say so at once.
        with translate_errors(self.endpoint):
            r = get_session().get(f"{self.endpoint}/api/models", params=params,
                                  headers=self._api._build_hf_headers(token=self._token), timeout=self.timeout)
            hf_raise_for_status(r)
            items = r.json()
        return [
            RepoSummary(
                repo_id=str(m["id"]),
                downloads=int(m.get("downloads") or 0),
                likes=int(m.get("likes") or 0),
                last_modified=_parse_time(m.get("lastModified")),
                gated=bool(m.get("gated")),
                params=_params(m.get("gguf")),
            )
            for m in items[:limit]
            if isinstance(m, dict) and "id" in m
        ]

    def list_models(self, repo_id: str, revision: str | None = None) -> RepoListing:
        """The GGUF models of a repository, multi-part sets joined, with sizes and hashes."""
        check_repo_id(repo_id)
        with translate_errors(self.endpoint, repo_id):
            info = self._api.model_info(repo_id, revision=revision, files_metadata=True, timeout=self.timeout)
        files = []
        for s in info.siblings or []:
            lfs = s.lfs
            size = lfs.size if lfs else s.size
            files.append(RemoteFile(s.rfilename, size, lfs.sha256 if lfs else None))
        return RepoListing(repo_id, info.sha, bool(info.gated), group_models(files))

    def file_url(self, repo_id: str, filename: str, revision: str | None = None) -> str:
        """The resolve URL of a file (its name checked first)."""
        safe_relpath(filename)
        return hf_hub_url(check_repo_id(repo_id), filename, revision=revision, endpoint=self.endpoint)

    def file_meta(self, repo_id: str, filename: str, revision: str | None = None) -> FileMeta:
        """HEAD the file: size, etag, commit, and where its bytes are.

        No retries here, so an unreachable hub is said at once; the transfer of the
        bytes has its own retries with backoff.
        """
        url = self.file_url(repo_id, filename, revision)
        with translate_errors(self.endpoint, repo_id, filename):
            meta = get_hf_file_metadata(
                url, token=self.token, timeout=self.timeout, endpoint=self.endpoint, retry_on_errors=False
            )
        return FileMeta(meta.location, meta.size, meta.etag, meta.commit_hash)

    def auth_headers(self, url: str) -> dict[str, str]:
        """Headers for a GET of `url`: the token only goes to the hub itself, never to a CDN."""
        from huggingface_hub.utils import build_hf_headers  # type: ignore[attr-defined]

        headers = build_hf_headers(token=self.token)
        if not url.startswith(self.endpoint + "/"):
            headers.pop("authorization", None)
            headers.pop("Authorization", None)
        headers["Accept-Encoding"] = "identity"
        return headers


@contextmanager
def translate_errors(endpoint: str, repo_id: str = "", filename: str = "") -> Iterator[None]:
    """Turn `huggingface_hub`/`httpx2` exceptions into Prefill's `HubError`s.

    The original exception is chained (`from`) for a debugger, but the new message
    never copies it: those can carry URLs with signed parameters.
    """
    try:
        yield
    except HubError:
        raise
    except GatedRepoError:
        raise GatedRepo(repo_id) from None
    except (RemoteEntryNotFoundError, RevisionNotFoundError):
        raise RemoteFileNotFound(repo_id, filename or "(this revision)") from None
    except RepositoryNotFoundError as e:
        if _is_bad_token(e):
            raise BadToken() from None
        raise RepoNotFound(repo_id) from None
    except OfflineModeIsEnabled:
        raise HubUnreachable(endpoint, "HF_HUB_OFFLINE is set") from None
    except HfHubHTTPError as e:
        status = e.response.status_code if e.response is not None else 0
        if _is_bad_token(e):
            raise BadToken() from None
        if status >= 500 or status == 429:
            raise HubUnreachable(endpoint, f"the hub answered HTTP {status}") from None
        raise HubError(f"the hub refused the request (HTTP {status})") from None
    except (httpx2.TransportError, OSError) as e:
        raise HubUnreachable(endpoint, type(e).__name__) from None


Headers = Mapping[str, str] | MailHeaders  # a response's headers: httpx's or urllib's


def error_for_status(status: int, headers: Headers, repo_id: str, filename: str) -> HubError:
    """The error for a refused file request, read the way `huggingface_hub` reads the hub's headers."""
    code = headers.get("X-Error-Code")
    if code == "GatedRepo":
        return GatedRepo(repo_id)
    if code in ("EntryNotFound", "RevisionNotFound"):
        return RemoteFileNotFound(repo_id, filename)
    if status == 401 and headers.get("X-Error-Message") == _BAD_CREDENTIALS:
        return BadToken()
    if code == "RepoNotFound" or status == 401:
        return RepoNotFound(repo_id)
    if status == 404:
        return RemoteFileNotFound(repo_id, filename)
    return HubError(f"the hub refused {filename} (HTTP {status})")


def _is_bad_token(e: HfHubHTTPError) -> bool:
    r = e.response
    if r is None or r.status_code != 401:
        return False
    return r.headers.get("X-Error-Message") == _BAD_CREDENTIALS


def _params(gguf: object) -> int | None:
    """The parameter count of the hub's `gguf` summary (`{"total": 1235814432, ...}`), if it is a number."""
    total = gguf.get("total") if isinstance(gguf, dict) else None
    return total if isinstance(total, int) and not isinstance(total, bool) and total > 0 else None


def _parse_time(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
