"""A remote GGUF file's header, read with HTTP Range requests (no full download).

The header's length is not known up front: the first request asks for a few MiB,
and while the parser says it needs more (`GGUFTruncated`) the next range is
appended, each twice the size of the last, up to a cap.
"""

from __future__ import annotations

import http.client
import urllib.error

from prefill.engine.gguf.header import GGUFError, GGUFHeader, GGUFTruncated, parse_header
from prefill.hub.client import HubClient, error_for_status
from prefill.hub.errors import HubUnreachable
from prefill.hub.transfer import http_open

FIRST_RANGE = 2 << 20
MAX_HEADER = 256 << 20  # a header past this is not one llama.cpp would load either


def fetch_header(
    client: HubClient,
    repo_id: str,
    filename: str,
    revision: str | None = None,
    first: int = FIRST_RANGE,
    limit: int = MAX_HEADER,
) -> GGUFHeader:
    """Parse the header of a GGUF file on the hub from as few leading bytes as it takes.

    Raises:
        GGUFError: the bytes are not a GGUF header (or it is longer than `limit`).
        HubError: the hub refused or could not be reached.
    """
    meta = client.file_meta(repo_id, filename, revision)
    buf = bytearray()
    want = first
    while True:
        buf += _range(client, meta.url, len(buf), len(buf) + want - 1, repo_id, filename)
        try:
            header = parse_header(buf)
        except GGUFTruncated:
            if meta.size is not None and len(buf) >= meta.size:
                raise
            if len(buf) >= limit:
                raise GGUFError(f"{filename}: the GGUF header is longer than {limit >> 20} MiB") from None
            want = min(want * 2, limit - len(buf))
            continue
        header.file_size = meta.size
        return header


def _range(client: HubClient, url: str, start: int, end: int, repo_id: str, filename: str) -> bytes:
    headers = {**client.auth_headers(url), "Range": f"bytes={start}-{end}"}
    try:
        with http_open(url, headers, client.timeout) as r:
            if r.status == 200 and start:  # range ignored: the file from its start came
                return bytes(r.read(end + 1)[start:])
            return bytes(r.read(end - start + 1))
    except urllib.error.HTTPError as e:
        with e:
            if e.code == 416:
                return b""
            raise error_for_status(e.code, e.headers, repo_id, filename) from None
    except (OSError, http.client.HTTPException) as e:
        raise HubUnreachable(client.endpoint, type(e).__name__) from None
