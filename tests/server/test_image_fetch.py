"""Remote images and image decodes as the server pays for them: the address checked is the address
fetched from, every failed fetch reads the same, a trickling body is cut at one deadline for the
whole fetch, and a client that leaves takes its fetch and its queued decode with it."""

from __future__ import annotations

import asyncio
import base64
import datetime
import functools
import http.server
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from prefill.engine.message import ImagePart, Message
from prefill.server import images
from prefill.server.errors import ApiError
from prefill.server.images import ImageDecoder, ImageRef, attach_images
from tests.engine.vision.conftest import png

MSGS = [Message("user", "look")]
PUBLIC = "1.1.1.1"  # a global address: the check lets it through (nothing listens on the test's port there)


def fetch(url: str, allow_private: bool = False, **kwargs: Any) -> tuple[Message, ...]:
    async def run() -> tuple[Message, ...]:
        return await attach_images(MSGS, [ImageRef(0, 1, url)], True, True, allow_private, **kwargs)
    return anyio.run(run)


class _Answer(http.server.BaseHTTPRequestHandler):
    """A PNG on /ok.png; HTTP 421 (what a port that speaks HTTP but not for this name says) elsewhere."""

    seen: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 (the handler's name)
        self.seen.append(self.path)
        body = png(12, 12) if self.path == "/ok.png" else b"misdirected"
        self.send_response(200 if self.path == "/ok.png" else 421)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def local() -> Iterator[tuple[int, list[str]]]:
    """A real HTTP server on loopback: its port, and the paths it was asked for."""
    seen: list[str] = []
    handler = type("Answer", (_Answer,), {"seen": seen})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd.server_address[1], seen
    httpd.shutdown()
    httpd.server_close()


def rebinding(monkeypatch: pytest.MonkeyPatch, name: str, first: str, then: str) -> list[str]:
    """Only the DNS answer is mocked: `name` resolves to `first` once, then to `then`. Returns the answers given."""
    real = socket.getaddrinfo
    given: list[str] = []

    def answer(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if (host.decode() if isinstance(host, bytes) else host) != name:
            return real(host, port, *args, **kwargs)
        given.append(first if not given else then)
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (given[-1], int(port or 0)))]

    monkeypatch.setattr(socket, "getaddrinfo", answer)
    return given


def test_a_name_that_rebinds_to_loopback_is_never_fetched_from_there(
        monkeypatch: pytest.MonkeyPatch, local: tuple[int, list[str]]) -> None:
    port, seen = local
    monkeypatch.setattr(images, "FETCH_DEADLINE_S", 1.0)  # the public address does not answer here
    given = rebinding(monkeypatch, "rebind.test", PUBLIC, "127.0.0.1")
    with pytest.raises(ApiError, match="could not be fetched"):
        fetch(f"http://rebind.test:{port}/ok.png")
    assert seen == []  # nothing reached the loopback server
    assert given == [PUBLIC]  # resolved once: the address checked is the address connected to


def test_a_fetch_connects_to_the_checked_address_with_the_name_as_host(
        monkeypatch: pytest.MonkeyPatch, local: tuple[int, list[str]]) -> None:
    port, seen = local
    given = rebinding(monkeypatch, "pictures.test", "127.0.0.1", PUBLIC)
    got = fetch(f"http://pictures.test:{port}/ok.png", allow_private=True)
    assert got[0].images[0].width == 12 and seen == ["/ok.png"] and given == ["127.0.0.1"]


def test_open_and_closed_ports_are_refused_in_the_same_words(local: tuple[int, list[str]]) -> None:
    port, seen = local
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]  # nothing listens there once it is closed
    words = []
    for p in (port, closed):
        with pytest.raises(ApiError) as e:
            fetch(f"http://127.0.0.1:{p}/admin", allow_private=True)
        words.append((e.value.status, e.value.message, e.value.code))
    assert seen == ["/admin"] and words[0] == words[1]
    assert "could not be fetched" in words[0][1]
    for p in (port, closed):  # and on the server's own network, both are refused before any connection
        with pytest.raises(ApiError, match="private or local address"):
            fetch(f"http://127.0.0.1:{p}/admin")


class Trickle:
    """An HTTP server that sends its headers, then one byte every `every` seconds, and notes when its
    client hangs up."""

    def __init__(self, total: int = 200, every: float = 0.05, declared: bool = True):
        self.total, self.every = total, every
        self.length = b"Content-Length: %d" % total if declared else b"Connection: close"
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.sent = 0
        self.hung_up = threading.Event()
        self.finished = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: image/png\r\n%s\r\n\r\n" % self.length)
            for _ in range(self.total):
                time.sleep(self.every)  # the attacker's pace
                try:
                    conn.sendall(b"\x89" * 1024 if not self.every else b"\x89")
                except OSError:
                    self.hung_up.set()
                    return
                self.sent += 1
            self.finished.set()

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def trickle() -> Iterator[Trickle]:
    t = Trickle()
    yield t
    t.close()


def test_a_trickling_body_is_cut_at_the_deadline_of_the_whole_fetch(
        monkeypatch: pytest.MonkeyPatch, trickle: Trickle) -> None:
    monkeypatch.setattr(images, "FETCH_DEADLINE_S", 0.5)  # each byte comes well within a read timeout
    with pytest.raises(ApiError, match="could not be fetched"):
        fetch(f"http://127.0.0.1:{trickle.port}/slow.png", allow_private=True)
    assert not trickle.finished.is_set() and trickle.sent < trickle.total
    assert trickle.hung_up.wait(10)  # the connection was closed, not left to run on


@pytest.mark.parametrize("declared", [True, False])
def test_a_body_past_the_size_cap_is_cut_as_it_arrives(monkeypatch: pytest.MonkeyPatch, declared: bool) -> None:
    monkeypatch.setattr(images, "MAX_BYTES", 64 * 1024)
    flood = Trickle(total=100_000, every=0.0, declared=declared)  # 100 MiB as fast as it goes, or its length said
    try:
        with pytest.raises(ApiError, match="could not be fetched"):
            fetch(f"http://127.0.0.1:{flood.port}/big.png", allow_private=True)
        assert flood.hung_up.wait(10) and flood.sent < 1000
    finally:
        flood.close()


def test_a_fetch_whose_client_left_stops_at_once(trickle: Trickle) -> None:
    async def run() -> None:
        left = asyncio.Event()

        async def receive() -> dict[str, Any]:
            await left.wait()
            return {"type": "http.disconnect"}

        task = asyncio.create_task(attach_images(MSGS, [ImageRef(0, 1, f"http://127.0.0.1:{trickle.port}/x.png")],
                                                 True, True, True, receive=receive))
        while trickle.sent < 2:  # the body is arriving
            await asyncio.sleep(0.01)
        left.set()
        with pytest.raises(ApiError) as e:
            await task
        assert e.value.status == 499

    anyio.run(run)
    assert trickle.hung_up.wait(10) and not trickle.finished.is_set()


def data_ref(payload: bytes, message: int = 0) -> ImageRef:
    return ImageRef(message, 1, "data:image/png;base64," + base64.b64encode(payload).decode())


class Blocking:
    """A stand-in for the door: the image b"first" holds the decoder's one worker until released."""

    def __init__(self) -> None:
        self.started: list[bytes] = []
        self.release = threading.Event()

    def __call__(self, data: bytes, **kwargs: Any) -> ImagePart:
        self.started.append(data)
        if data == b"first":
            assert self.release.wait(10)
        return ImagePart(png(4, 4), "image/png", 4, 4)


def test_a_queued_decode_whose_client_left_never_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    door = Blocking()
    monkeypatch.setattr(images, "check_image", door)
    decoder = ImageDecoder(workers=1, queue=4)

    async def run() -> None:
        first = asyncio.create_task(attach_images(MSGS, [data_ref(b"first")], True, False, decoder=decoder))
        while door.started != [b"first"]:
            await asyncio.sleep(0.01)

        async def gone() -> dict[str, Any]:
            return {"type": "http.disconnect"}

        with pytest.raises(ApiError) as e:  # its wait ends while the worker is still busy
            await attach_images(MSGS, [data_ref(b"second")], True, False, decoder=decoder, receive=gone)
        assert e.value.status == 499 and not door.release.is_set()
        door.release.set()
        await first

    anyio.run(run)
    decoder.close()
    assert door.started == [b"first"]


def test_decodes_past_the_queue_are_told_to_come_back(monkeypatch: pytest.MonkeyPatch) -> None:
    door = Blocking()
    monkeypatch.setattr(images, "check_image", door)
    decoder = ImageDecoder(workers=1, queue=1)

    async def run() -> None:
        first = asyncio.create_task(attach_images(MSGS, [data_ref(b"first")], True, False, decoder=decoder))
        while door.started != [b"first"]:
            await asyncio.sleep(0.01)
        second = asyncio.create_task(attach_images(MSGS, [data_ref(b"second")], True, False, decoder=decoder))
        while decoder.waiting < 1:
            await asyncio.sleep(0.01)
        with pytest.raises(ApiError) as e:
            await attach_images(MSGS, [data_ref(b"third")], True, False, decoder=decoder)
        assert e.value.status == 429 and "Retry-After" in (e.value.headers or {})
        door.release.set()
        await first
        await second

    anyio.run(run)
    decoder.close()
    assert door.started == [b"first", b"second"]


def self_signed(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """A certificate for `name` (and its key), signed by itself (`cryptography` comes with mcp's PyJWT)."""
    pytest.importorskip("cryptography")
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


def test_https_is_verified_against_the_name_while_connecting_to_the_pinned_address(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path, "pictures.test")
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    served.load_cert_chain(cert, key)
    names: list[str | None] = []
    served.sni_callback = lambda _sock, name, _ctx: names.append(name)  # type: ignore[assignment,misc,return-value]
    seen: list[str] = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), type("Answer", (_Answer,), {"seen": seen}))
    httpd.socket = served.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    trusted = ssl.create_default_context(cafile=str(cert))  # the test's certificate, and only it, is trusted
    monkeypatch.setattr(images.httpx2, "AsyncClient", functools.partial(images.httpx2.AsyncClient, verify=trusted))
    rebinding(monkeypatch, "pictures.test", "127.0.0.1", PUBLIC)
    try:
        got = fetch(f"https://pictures.test:{httpd.server_address[1]}/ok.png", allow_private=True)
        assert got[0].images[0].width == 12 and seen == ["/ok.png"] and names == ["pictures.test"]
        rebinding(monkeypatch, "elsewhere.test", "127.0.0.1", PUBLIC)  # the same address, another name
        with pytest.raises(ApiError, match="could not be fetched"):
            fetch(f"https://elsewhere.test:{httpd.server_address[1]}/ok.png", allow_private=True)
        assert seen == ["/ok.png"]
    finally:
        httpd.shutdown()
        httpd.server_close()
