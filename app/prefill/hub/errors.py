"""Typed errors of the hub: search, downloads and the local model library.

Each carries a message a person understands; none ever holds a token. The UI and
the CLI word them further (a next step), they never need to parse them.
"""

from __future__ import annotations

from pathlib import Path

from prefill.engine.units import format_bytes


class HubError(Exception):
    """Base of every error the hub package raises on purpose."""


class HubUnreachable(HubError):
    """The Hugging Face hub (or the configured endpoint) could not be reached."""

    def __init__(self, endpoint: str, reason: str = ""):
        self.endpoint = endpoint
        detail = f" ({reason})" if reason else ""
        super().__init__(
            f"cannot reach the model hub at {endpoint}{detail}; check the network connection"
        )


class RepoNotFound(HubError):
    """The repository does not exist, or is private and the token cannot see it."""

    def __init__(self, repo_id: str):
        self.repo_id = repo_id
        super().__init__(
            f"repository {repo_id!r} was not found on the hub "
            "(check the name; a private repository needs a token with access)"
        )


class GatedRepo(HubError):
    """The repository is gated: its terms must be accepted on the website first."""

    def __init__(self, repo_id: str):
        self.repo_id = repo_id
        super().__init__(
            f"repository {repo_id!r} is gated: accept its terms on huggingface.co/{repo_id} "
            "and give a token (HF_TOKEN) of the account that did"
        )


class RemoteFileNotFound(HubError):
    """The repository exists but does not hold the requested file or revision."""

    def __init__(self, repo_id: str, filename: str):
        self.repo_id = repo_id
        self.filename = filename
        super().__init__(f"repository {repo_id!r} has no file {filename!r}")


class BadToken(HubError):
    """The hub refused the token given (wrong, expired or revoked)."""

    def __init__(self) -> None:
        super().__init__(
            "the hub refused the access token (wrong, expired or revoked); "
            "check HF_TOKEN or log in again"
        )


class UnsafeFileName(HubError):
    """A name from the hub or the user would land outside the models folder."""

    def __init__(self, name: str, why: str):
        self.name = name
        super().__init__(f"refusing the file name {name!r}: {why}")


class ModelsDirUnusable(HubError):
    """The models folder chosen cannot hold the library: it cannot be created, is not a folder, or
    nothing can be written in it.

    Attributes:
        path: The folder.
        why: What is wrong with it, in words.
    """

    def __init__(self, path: Path, why: str):
        self.path, self.why = path, why
        super().__init__(f"the models folder {path} cannot be used: {why}")


class NoSuchModel(HubError):
    """The library holds no model by that name."""


class DownloadError(HubError):
    """A download failed; what is already on disk is kept unless said otherwise."""


class DownloadStopped(DownloadError):
    """The download was paused or cancelled by its owner (not a failure)."""


class ChecksumMismatch(DownloadError):
    """The downloaded bytes do not hash to what the hub says; the file was removed."""

    def __init__(self, filename: str, expected: str, actual: str):
        self.filename = filename
        self.expected = expected
        self.actual = actual
        super().__init__(
            f"{filename} is corrupt: its SHA-256 is {actual[:12]}…, the hub says {expected[:12]}…; "
            "the file was removed, download it again"
        )


class NotEnoughSpace(DownloadError):
    """There is not enough free disk space, before starting or mid-way (ENOSPC)."""

    def __init__(self, folder: str, needed: int, free: int | None = None):
        self.folder = folder
        self.needed = needed
        self.free = free
        if free is None:
            msg = f"the disk holding {folder} is full; free some space and resume the download"
        else:
            msg = (
                f"not enough disk space in {folder}: the download needs {format_bytes(needed)}, "
                f"{format_bytes(free)} is free"
            )
        super().__init__(msg)


class DownloadBusy(DownloadError):
    """Another download (this process or another: the window, `prefill get`) holds the file."""

    def __init__(self, filename: str, pid: int | None):
        self.filename = filename
        self.pid = pid
        who = f" by process {pid}" if pid else ""
        super().__init__(
            f"{filename} is already being downloaded{who}; let that download finish "
            "(or stop it) and try again"
        )


class FileTooLarge(DownloadError):
    """The file system refused to grow the file (EFBIG: FAT32 stops at 4 GiB); bytes so far are kept."""

    def __init__(self, folder: str, size: int | None):
        self.folder = folder
        self.size = size
        what = f"a {format_bytes(size)} file" if size else "a file this large"
        super().__init__(
            f"the file system holding {folder} cannot hold {what} (FAT32 stops at 4 GiB); "
            "choose a models folder on another drive"
        )


class RemoteFileChanged(DownloadError):
    """The file on the hub changed while it was being downloaded."""


class TransferFailed(DownloadError):
    """The connection kept failing after every retry; the partial file is kept."""

