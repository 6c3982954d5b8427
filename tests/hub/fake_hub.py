"""A local stand-in for the Hugging Face hub, speaking what huggingface_hub 2.4 asks.

Served on 127.0.0.1 from a thread (stdlib only):

- `GET /api/models?search=&filter=&sort=&limit=` : search, JSON list with downloads,
  likes, lastModified, gated, and `gguf: {total}` (the parameter count) for a repository that has one.
- `GET /api/models/{repo}[/revision/{rev}]?blobs=true` : siblings with size and
  lfs {size, sha256, pointerSize}.
- `HEAD|GET /{repo}/resolve/{rev}/{file}` : like the real hub, an LFS file answers
  302 to a CDN on another origin (`localhost` instead of `127.0.0.1`) with
  X-Linked-Size, X-Linked-Etag and X-Repo-Commit; a small file is served directly.
- `HEAD|GET /cdn/{sha256}` : the bytes, with Range, ETag and Content-Range.
- errors as the hub sends them: 404 + X-Error-Code RepoNotFound / EntryNotFound,
  401 + GatedRepo, 401 + "Invalid credentials in Authorization header".

Faults for tests: `cut_after` (drop the connection once mid-file), `outage_after`
(drop it there, then answer 503 for that file until `end_outage()`), `ignore_range`
(answer a resume with the whole file, as some mirrors do), `corrupt` (flip a byte),
`stall_after` (stop sending until `release()`), and `served` counts the body bytes
every request got.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

COMMIT = "0123456789abcdef0123456789abcdef01234567"
_RESOLVE = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<file>.+)$")
_INFO = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+?)(?:/revision/(?P<rev>[^/]+))?$")
_CHUNK = 1 << 20


@dataclass
class FakeFile:
    """A file of a fake repository: bytes in memory, or a path on disk for big ones."""

    data: bytes | None = None
    path: Path | None = None
    lfs: bool = True
    sha256: str = ""

    def __post_init__(self) -> None:
        if not self.sha256:
            h = hashlib.sha256()
            if self.data is not None:
                h.update(self.data)
            else:
                assert self.path is not None
                with open(self.path, "rb") as f:
                    while chunk := f.read(_CHUNK):
                        h.update(chunk)
            self.sha256 = h.hexdigest()

    @property
    def size(self) -> int:
        return len(self.data) if self.data is not None else os.path.getsize(self.path or "")

    def read(self, start: int, n: int) -> bytes:
        if self.data is not None:
            return self.data[start : start + n]
        with open(self.path or "", "rb") as f:
            f.seek(start)
            return f.read(n)


@dataclass
class FakeRepo:
    repo_id: str
    files: dict[str, FakeFile]
    downloads: int = 0
    likes: int = 0
    last_modified: str = "2024-01-01T00:00:00.000Z"
    gated: bool = False
    tags: list[str] = field(default_factory=lambda: ["gguf"])
    params: int = 0  # the hub's gguf.total in a search; 0: none said


@dataclass
class Served:
    method: str
    path: str
    range: str | None
    status: int
    body_bytes: int


class FakeHub:
    """The server and its knobs. Use as a context manager, or `start()`/`stop()`."""

    def __init__(self, valid_tokens: tuple[str, ...] = ("hf_good_token",)):
        self.repos: dict[str, FakeRepo] = {}
        self.valid_tokens = set(valid_tokens)
        self.cut_after: dict[str, int] = {}  # filename -> drop the connection after this offset, once
        self.corrupt: dict[str, int] = {}  # filename -> flip the byte at this offset, always
        self.stall_after: dict[str, int] = {}  # filename -> stop at this offset until release()
        self.outage_after: dict[str, int] = {}  # filename -> cut here, then 503 until end_outage()
        self.ignore_range: set[str] = set()  # filenames served whole (200) even when a range is asked
        self.down: set[str] = set()  # filenames in an outage now
        self.served: list[Served] = []
        self._released = threading.Event()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.hub = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def cdn_url(self) -> str:  # another origin, as the hub's CDN is
        return f"http://localhost:{self.port}"

    def add(self, repo: FakeRepo) -> FakeRepo:
        self.repos[repo.repo_id] = repo
        return repo

    def release(self) -> None:
        """Let stalled transfers go on."""
        self._released.set()

    def stall(self, filename: str, at: int) -> None:
        """Stop sending `filename` at offset `at` until the next `release()` (even after an earlier one)."""
        self._released.clear()
        self.stall_after[filename] = at

    def end_outage(self, filename: str) -> None:
        """Serve the file again after `outage_after` took it down."""
        self.outage_after.pop(filename, None)
        self.down.discard(filename)

    def bytes_served(self, filename: str) -> int:
        """Body bytes sent for a file over all GET requests so far."""
        sha = self._find(filename)[1].sha256
        with self._lock:
            return sum(s.body_bytes for s in self.served if s.method == "GET" and s.path.endswith(sha))

    def gets(self, filename: str) -> list[Served]:
        sha = self._find(filename)[1].sha256
        with self._lock:
            return [s for s in self.served if s.method == "GET" and s.path.endswith(sha)]

    def _find(self, filename: str) -> tuple[FakeRepo, FakeFile]:
        for repo in self.repos.values():
            if filename in repo.files:
                return repo, repo.files[filename]
        raise KeyError(filename)

    def by_sha(self, sha: str) -> tuple[str, FakeFile] | None:
        for repo in self.repos.values():
            for name, f in repo.files.items():
                if f.sha256 == sha:
                    return name, f
        return None

    def record(self, s: Served) -> None:
        with self._lock:
            self.served.append(s)

    def start(self) -> FakeHub:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._released.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ThreadingHTTPServer

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    @property
    def hub(self) -> FakeHub:
        return self.server.hub  # type: ignore[attr-defined,no-any-return]

    def do_GET(self) -> None:
        self._route("GET")

    def do_HEAD(self) -> None:
        self._route("HEAD")

    def _route(self, method: str) -> None:
        url = urlsplit(self.path)
        path = unquote(url.path)
        if path == "/api/models":
            return self._search(parse_qs(url.query))
        if m := _INFO.match(path):
            return self._info(m["repo"])
        if m := _RESOLVE.match(path):
            return self._resolve(method, m["repo"], m["file"])
        if path.startswith("/cdn/"):
            return self._cdn(method, path.removeprefix("/cdn/"))
        self._error(404, "", "Not Found")

    # --- API -------------------------------------------------------------------
    def _search(self, q: dict[str, list[str]]) -> None:
        text = (q.get("search") or [""])[0].lower()
        wanted = q.get("filter") or []
        repos = [
            r
            for r in self.hub.repos.values()
            if text in r.repo_id.lower() and all(t in r.tags for t in wanted)
        ]
        key = (q.get("sort") or ["downloads"])[0]
        field_of = {"downloads": "downloads", "likes": "likes", "lastModified": "last_modified"}
        repos.sort(key=lambda r: getattr(r, field_of.get(key, "downloads")), reverse=True)
        limit = int((q.get("limit") or ["1000"])[0])
        body = [
            {
                "_id": r.repo_id,
                "id": r.repo_id,
                "downloads": r.downloads,
                "likes": r.likes,
                "lastModified": r.last_modified,
                "gated": "manual" if r.gated else False,
                "tags": r.tags,
                **({"gguf": {"total": r.params, "architecture": "llama"}} if r.params else {}),
            }
            for r in repos[:limit]
        ]
        self._json(body)

    def _info(self, repo_id: str) -> None:
        repo = self.hub.repos.get(repo_id)
        if repo is None:
            return self._error(404, "RepoNotFound", "Repository not found")
        siblings = []
        for name, f in repo.files.items():
            s: dict[str, object] = {"rfilename": name, "size": f.size, "blobId": f.sha256[:40]}
            if f.lfs:
                s["lfs"] = {"size": f.size, "sha256": f.sha256, "pointerSize": 134}
            siblings.append(s)
        self._json(
            {
                "id": repo.repo_id,
                "sha": COMMIT,
                "gated": "manual" if repo.gated else False,
                "downloads": repo.downloads,
                "likes": repo.likes,
                "lastModified": repo.last_modified,
                "tags": repo.tags,
                "siblings": siblings,
            }
        )

    # --- files -----------------------------------------------------------------
    def _resolve(self, method: str, repo_id: str, filename: str) -> None:
        repo = self.hub.repos.get(repo_id)
        auth = self.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ").strip() if auth else ""
        if token and token not in self.hub.valid_tokens:
            return self._error(401, "", "Invalid credentials in Authorization header")
        if repo is None:
            return self._error(404, "RepoNotFound", "Repository not found")
        if repo.gated and not token:
            return self._error(401, "GatedRepo", "Access to model is restricted.")
        f = repo.files.get(filename)
        if f is None:
            return self._error(404, "EntryNotFound", "Entry not found")
        common = {"X-Repo-Commit": COMMIT, "ETag": f'"{f.sha256 if f.lfs else f.sha256[:40]}"'}
        if f.lfs:
            headers = {
                **common,
                "Location": f"{self.hub.cdn_url}/cdn/{f.sha256}?X-Amz-Signature=secret",
                "X-Linked-Size": str(f.size),
                "X-Linked-Etag": f'"{f.sha256}"',
                "Content-Length": "0",
            }
            self._head(302, headers)
            self.hub.record(Served(method, self.path, None, 302, 0))
            return
        self._send_file(method, filename, f, common)

    def _cdn(self, method: str, sha_and_query: str) -> None:
        sha = sha_and_query.split("?")[0]
        found = self.hub.by_sha(sha)
        if found is None:
            return self._error(404, "", "Not Found")
        name, f = found
        self._send_file(method, name, f, {"ETag": f'"{sha}"'})

    def _send_file(self, method: str, name: str, f: FakeFile, headers: dict[str, str]) -> None:
        if name in self.hub.down:
            return self._error(503, "", "Service Unavailable")
        size = f.size
        start, end, status = 0, size - 1, 200
        rng = self.headers.get("Range")
        if rng and name in self.hub.ignore_range:
            rng = None
        if rng:
            m = re.match(r"bytes=(\d+)-(\d*)$", rng.strip())
            if not m or int(m[1]) >= size:
                self._head(416, {"Content-Range": f"bytes */{size}", "Content-Length": "0"})
                return self.hub.record(Served(method, self.path, rng, 416, 0))
            start = int(m[1])
            end = min(int(m[2]), size - 1) if m[2] else size - 1
            status = 206
            headers = {**headers, "Content-Range": f"bytes {start}-{end}/{size}"}
        n = end - start + 1
        self._head(status, {**headers, "Content-Length": str(n), "Accept-Ranges": "bytes"})
        sent = 0
        if method == "GET":
            sent = self._body(name, f, start, n)
        self.hub.record(Served(method, self.path.split("?")[0], rng, status, sent))

    def _body(self, name: str, f: FakeFile, start: int, n: int) -> int:
        hub, pos, stop = self.hub, start, start + n
        outage = hub.outage_after.get(name)
        cut = hub.cut_after.get(name, outage)
        stall = hub.stall_after.get(name)
        flip = hub.corrupt.get(name)
        fast = cut is None and stall is None and flip is None and f.path is not None
        if fast:  # the benchmark path: let the kernel copy
            with open(f.path or "", "rb") as fh:
                return int(self.connection.sendfile(fh, start, n))
        try:
            while pos < stop:
                limit = stop
                if cut is not None and pos <= cut < stop:
                    limit = cut
                if stall is not None and pos <= stall < stop:
                    limit = min(limit, stall)
                chunk = bytearray(f.read(pos, min(_CHUNK, limit - pos)))
                if flip is not None and pos <= flip < pos + len(chunk):
                    chunk[flip - pos] ^= 0xFF
                self.wfile.write(chunk)
                pos += len(chunk)
                if pos == cut:
                    hub.cut_after.pop(name, None)
                    if outage is not None:
                        hub.down.add(name)
                    self.close_connection = True
                    self.connection.shutdown(2)
                    break
                if pos == stall:
                    hub.stall_after.pop(name, None)
                    hub._released.wait(30)
                    stall = None
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        return pos - start

    # --- helpers ---------------------------------------------------------------
    def _head(self, status: int, headers: dict[str, str]) -> None:
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()

    def _json(self, body: object) -> None:
        data = json.dumps(body).encode()
        self._head(200, {"Content-Type": "application/json", "Content-Length": str(len(data))})
        if self.command == "GET":
            self.wfile.write(data)

    def _error(self, status: int, code: str, message: str) -> None:
        data = json.dumps({"error": message}).encode()
        headers = {"Content-Type": "application/json", "Content-Length": str(len(data))}
        if code:
            headers["X-Error-Code"] = code
        headers["X-Error-Message"] = message
        self._head(status, headers)
        if self.command == "GET":
            self.wfile.write(data)
        self.hub.record(Served(self.command, self.path, None, status, 0))
