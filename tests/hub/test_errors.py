"""Each failure gets its own typed error with a readable message; the token never shows."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from prefill.hub.client import HubClient
from prefill.hub.downloader import download_model
from prefill.hub.errors import (
    BadToken,
    GatedRepo,
    HubUnreachable,
    RemoteFileNotFound,
    RepoNotFound,
    UnsafeFileName,
)
from prefill.hub.paths import inside, safe_relpath
from prefill.hub.quants import ModelFiles, RemoteFile
from tests.hub.conftest import FAST, add_repo
from tests.hub.fake_hub import FakeHub

TOKEN = "hf_good_token"


def _one(name: str, size: int = 1) -> ModelFiles:
    return ModelFiles(name, "Q4_0", (RemoteFile(name, size, None),))


def test_missing_repo(hub: FakeHub, client: HubClient, tmp_path: Path) -> None:
    with pytest.raises(RepoNotFound, match="'nobody/nothing' was not found"):
        client.list_models("nobody/nothing")
    with pytest.raises(RepoNotFound):
        download_model(client, tmp_path, "nobody/nothing", _one("m.gguf"), policy=FAST)


def test_missing_file(hub: FakeHub, client: HubClient, tmp_path: Path) -> None:
    add_repo(hub, "o/r", {"a.gguf": b"x"})
    with pytest.raises(RemoteFileNotFound, match="has no file 'b.gguf'"):
        download_model(client, tmp_path, "o/r", _one("b.gguf"), policy=FAST)


def test_gated_repo_needs_token(hub: FakeHub, client: HubClient, tmp_path: Path) -> None:
    add_repo(hub, "meta/gated-GGUF", {"g.gguf": b"gated bytes"}, gated=True)
    listing = client.list_models("meta/gated-GGUF")  # the listing is public, as on the hub
    assert listing.gated
    with pytest.raises(GatedRepo, match="gated: accept its terms"):
        download_model(client, tmp_path, "meta/gated-GGUF", listing.models[0], policy=FAST)
    authed = HubClient(endpoint=hub.url, token=TOKEN)
    (path,) = download_model(authed, tmp_path, "meta/gated-GGUF", listing.models[0], policy=FAST)
    assert path.read_bytes() == b"gated bytes"


def test_wrong_token_is_its_own_error_and_never_shown(
    hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    add_repo(hub, "o/r", {"a.gguf": b"x"})
    secret = "hf_wrong_secret_123"
    monkeypatch.setenv("HF_TOKEN", secret)
    client = HubClient(endpoint=hub.url)  # picks HF_TOKEN up through huggingface_hub
    with pytest.raises(BadToken) as info:
        download_model(client, tmp_path, "o/r", _one("a.gguf"), policy=FAST)
    assert secret not in str(info.value) and secret not in repr(client)
    assert secret not in caplog.text
    assert secret not in repr(HubClient(endpoint=hub.url, token=secret))


def test_unreachable_hub(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = HubClient(endpoint=f"http://127.0.0.1:{port}")
    with pytest.raises(HubUnreachable, match="cannot reach the model hub"):
        client.list_models("o/r")
    with pytest.raises(HubUnreachable):
        download_model(client, tmp_path, "o/r", _one("a.gguf"), policy=FAST)


def test_search_unreachable_says_so_at_once(monkeypatch: pytest.MonkeyPatch, closed_endpoint: str) -> None:
    import huggingface_hub.utils._http as hf_http

    slept: list[float] = []
    monkeypatch.setattr(hf_http.time, "sleep", slept.append)
    client = HubClient(endpoint=closed_endpoint)
    with pytest.raises(HubUnreachable):
        client.search("llama")
    assert slept == []  # no backoff: the search box tells the user straight away


@pytest.mark.parametrize(
    "name",
    ["../evil.gguf", "a/../../evil.gguf", "/etc/passwd", "..\\evil.gguf", "C:\\x.gguf", "a//b.gguf",
     "./a.gguf", "a/.", "", "x\x00.gguf", "~/x.gguf", "a/ b.gguf",
     # Windows device names, any case, with or without extensions, in any part
     "CON", "con.gguf", "NUL.tar.gz", "Q4/nul.gguf", "COM1.gguf", "lpt9.gguf", "LPT1", "aux/x.gguf",
     "PRN.gguf", "COM\u00b9.gguf", "CONIN$.gguf", "nul .gguf",
     # trailing dots or spaces (Windows drops them: two names, one file), C1 controls, bidi overrides
     "model.gguf.", "Q4./m.gguf", "Q4 /m.gguf", "m.gguf ", "a\x85b.gguf", "evil\u202efgg.exe"],
)
def test_unsafe_names_refused(name: str) -> None:
    with pytest.raises(UnsafeFileName):
        safe_relpath(name)


def test_safe_names_accepted() -> None:
    assert str(safe_relpath("Q4_K_M/model-00001-of-00002.gguf")) == "Q4_K_M/model-00001-of-00002.gguf"
    for name in ("console.gguf", "CONX.gguf", "nullmodel.gguf", "COM10.gguf", "my.con.gguf", ".hidden/m.gguf"):
        assert str(safe_relpath(name)) == name


def test_windows_device_repo_refused(client: HubClient) -> None:
    for repo in ("con/model", "org/NUL", "org/com1.gguf", "org/name."):
        with pytest.raises(UnsafeFileName):
            client.list_models(repo)


@pytest.mark.parametrize("name", ["../../escape.gguf", "sub/../../../escape.gguf", "CON.gguf", "Q8_0./m.gguf",
                                  "x\u202e.gguf", "/abs/escape.gguf"])
def test_hostile_hub_names_lose_nothing(hub: FakeHub, client: HubClient, tmp_path: Path, name: str) -> None:
    """A listing holding a hostile name beside a good file: a typed error, nothing fetched, nothing lost."""
    add_repo(hub, "o/r", {name: b"x", "good-Q4_0.gguf": b"good"})
    models = tmp_path / "models"
    (good,) = [m for m in client.list_models("o/r").models if m.name == "good-Q4_0.gguf"]
    download_model(client, models, "o/r", good, policy=FAST)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    (bad,) = [m for m in client.list_models("o/r").models if m.first.filename == name]
    with pytest.raises(UnsafeFileName, match="refusing the file name"):
        download_model(client, models, "o/r", bad, policy=FAST)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    assert (models / "o" / "r" / "good-Q4_0.gguf").read_bytes() == b"good"
    assert not [s for s in hub.served if "escape" in s.path or "CON" in s.path]


def test_hub_listing_with_escaping_name_is_refused(hub: FakeHub, client: HubClient, tmp_path: Path) -> None:
    add_repo(hub, "o/r", {"../../escape.gguf": b"x"})
    models = tmp_path / "models"
    (model,) = client.list_models("o/r").models
    with pytest.raises(UnsafeFileName, match="refusing the file name"):
        download_model(client, models, "o/r", model, policy=FAST)
    assert not list(tmp_path.rglob("escape.gguf"))
    assert hub.served == [s for s in hub.served if "escape" not in s.path]  # nothing was requested


def test_symlink_escape_refused(tmp_path: Path) -> None:
    root = tmp_path / "models"
    root.mkdir()
    (root / "link").symlink_to(tmp_path)
    with pytest.raises(UnsafeFileName, match="outside"):
        inside(root, "link/x.gguf")


def test_bad_repo_ids_refused(client: HubClient) -> None:
    for repo in ("../x", "a/b/c", "a", "a/..", "a/b c"):
        with pytest.raises(UnsafeFileName):
            client.list_models(repo)
