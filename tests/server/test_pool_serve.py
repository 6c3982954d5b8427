"""`prefill serve --models-dir`: every model of a folder served by the request's `model`, loaded when
asked for; the pool's routes (GET /models, POST /models/load and /models/unload) behind the same doors;
`prefill ps`. The pool's own rules are tested in tests/pool."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import openai
import pytest

from tests.server.conftest import Served, start_server, stop_server

pytestmark = pytest.mark.model
KEY = "sk-pool"
ASK = [{"role": "user", "content": "Say hello."}]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory, smollm2: Path) -> Path:
    from prefill.bench.tiny_model import write_tiny_llama

    d = tmp_path_factory.mktemp("served")
    shutil.copyfile(smollm2, d / "smollm2.gguf")
    (d / "tiny").mkdir()
    write_tiny_llama(d / "tiny" / "tiny-a.gguf", n_vocab=8000, n_embd=64, seed=1)
    (d / "garbage.gguf").write_bytes(b"GGUF" + b"\xff" * 64)
    return d


@pytest.fixture(scope="module")
def pooled(folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    hf = tmp_path_factory.mktemp("hf")  # an empty Hugging Face cache: only the folder (and the bundled model)
    s = start_server(None, "--models-dir", str(folder), "--ttl", "never", "--parallel", "2", "--ctx", "1024",
                     "--alias", "gpt-4o-mini=tiny/tiny-a.gguf", "--api-key", KEY,
                     env={"HF_HUB_CACHE": str(hf), "HF_HOME": str(hf)})
    yield s
    stop_server(s)


def _states(s: Served) -> dict[str, str]:
    data = s.client().models.list().model_dump()["data"]
    return {m["id"]: m["state"] for m in data}


def _get(s: Served, path: str) -> httpx.Response:
    return httpx.get(s.url + path, headers={"Authorization": f"Bearer {KEY}"}, timeout=120)


def _post(s: Served, path: str, body: dict[str, object]) -> httpx.Response:
    return httpx.post(s.url + path, json=body, headers={"Authorization": f"Bearer {KEY}"}, timeout=120)


def test_the_openai_client_alternating_two_models_is_answered_by_each(pooled: Served) -> None:
    client = pooled.client()
    start = _states(pooled)
    assert start["smollm2.gguf"] == "not loaded" and start["tiny/tiny-a.gguf"] == "not loaded"
    assert start["garbage.gguf"] == "unusable"
    seen = []
    for step, model in enumerate(["smollm2.gguf", "tiny/tiny-a.gguf", "smollm2.gguf", "tiny/tiny-a.gguf"]):
        reply = client.chat.completions.create(model=model, messages=ASK, max_tokens=6)  # type: ignore[arg-type]
        timings = reply.model_extra["timings"]  # type: ignore[index]
        assert reply.model == model and reply.choices[0].message.content is not None
        assert ("load_ms" in timings) == (step < 2)  # the first request of each waited for its load
        if step < 2:
            assert timings["ttft_ms"] >= timings["load_ms"] > 0
        seen.append(_states(pooled))
    assert seen[0]["smollm2.gguf"] == "loaded" and seen[0]["tiny/tiny-a.gguf"] == "not loaded"
    assert all(s["smollm2.gguf"] == s["tiny/tiny-a.gguf"] == "loaded" for s in seen[1:])
    listed = {m["id"]: m for m in _get(pooled, "/models").json()["data"]}
    assert listed["smollm2.gguf"]["loads"] == 1 and listed["tiny/tiny-a.gguf"]["loads"] == 1  # never reloaded


def test_an_alias_names_a_model_and_an_unknown_name_lists_the_ids(pooled: Served) -> None:
    reply = pooled.client().completions.create(model="gpt-4o-mini", prompt="Once", max_tokens=4)
    assert reply.model == "tiny/tiny-a.gguf"
    with pytest.raises(openai.NotFoundError) as e:
        pooled.client().chat.completions.create(model="llama3", messages=ASK)  # type: ignore[arg-type]
    message = e.value.body["message"]  # type: ignore[index]
    assert "'llama3' does not exist here" in message and "'smollm2.gguf'" in message and "'garbage.gguf'" in message


def test_a_corrupt_file_is_refused_in_words_while_the_others_serve(pooled: Served) -> None:
    with pytest.raises(openai.BadRequestError) as e:
        pooled.client().chat.completions.create(model="garbage.gguf", messages=ASK)  # type: ignore[arg-type]
    assert e.value.code == "model_unusable" and "'garbage.gguf' cannot be loaded:" in e.value.message
    ok = pooled.client().chat.completions.create(model="smollm2.gguf", messages=ASK, max_tokens=3)  # type: ignore[arg-type]
    assert ok.choices[0].finish_reason in ("length", "stop")


def test_load_and_unload_by_hand_with_memory_use_and_slots_by_model(pooled: Served) -> None:
    r = _post(pooled, "/models/unload", {"model": "tiny/tiny-a.gguf"})
    assert r.status_code == 200 and r.json()["model"]["state"] == "not loaded"
    r = _post(pooled, "/models/load", {"model": "tiny/tiny-a.gguf", "pinned": True})
    body = r.json()
    assert r.status_code == 200 and body["model"]["state"] == "loaded" and body["model"]["pinned"]
    memory = body["model"]["memory"]
    # the prompt cache's bound counts whole: by default as much as the slots' KV cache
    assert memory["measured"] and memory["prompt_cache"] == memory["kv"]
    assert memory["total"] == memory["weights"] + memory["kv"] + memory["compute"] + memory["prompt_cache"] + 0
    listing = _get(pooled, "/models").json()
    assert listing["memory"]["used"] >= memory["total"]
    one = _get(pooled, "/v1/models/tiny/tiny-a.gguf").json()
    assert one["state"] == "loaded" and one["size"] > 0 and one["meta"]["parallel"] == 2
    slots = _get(pooled, "/slots").json()
    assert {"tiny/tiny-a.gguf"} <= set(slots["models"]) and all("model" in s for s in slots["slots"])
    assert _post(pooled, "/models/unload", {"model": "nothing"}).status_code == 404


def test_the_pool_routes_keep_every_door(pooled: Served) -> None:
    load = {"model": "smollm2.gguf"}
    assert httpx.post(pooled.url + "/models/load", json=load, timeout=30).status_code == 401  # no key
    wrong_type = httpx.post(pooled.url + "/models/load", content=b'{"model": "smollm2.gguf"}', timeout=30,
                            headers={"Authorization": f"Bearer {KEY}", "Content-Type": "text/plain"})
    assert wrong_type.status_code == 415
    evil = httpx.post(pooled.url + "/models/unload", json=load, timeout=30,
                      headers={"Authorization": f"Bearer {KEY}", "Origin": "https://evil.example"})
    assert evil.status_code == 403
    rebound = httpx.get(pooled.url + "/models", timeout=30,
                        headers={"Authorization": f"Bearer {KEY}", "Host": "attacker.example"})
    assert rebound.status_code in (400, 403, 421)
    big = _post(pooled, "/models/load", {"model": "smollm2.gguf", "pad": "x" * 20000})
    assert big.status_code == 413
    assert _post(pooled, "/models/load", {"model": "smollm2.gguf", "keep_alive": "soon"}).status_code == 400


def test_prefill_ps_lists_what_the_server_holds(pooled: Served) -> None:
    _post(pooled, "/models/load", {"model": "smollm2.gguf"})
    out = subprocess.run([sys.executable, "-m", "prefill", "ps", "--url", pooled.url, "--api-key", KEY],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["NAME", "STATE", "MEMORY", "REQUESTS", "UNTIL"]
    row = next(ln for ln in lines if ln.startswith("smollm2.gguf"))
    assert "loaded" in row and "MiB" in row and "forever" in row
    assert "garbage.gguf" not in out.stdout and "in use" in lines[-1]
    every = subprocess.run([sys.executable, "-m", "prefill", "ps", "--url", pooled.url, "--api-key", KEY, "--all"],
                           capture_output=True, text=True, timeout=60)
    assert "unusable:" in every.stdout


def test_keep_alive_sets_how_long_a_model_stays_after_its_request(pooled: Served) -> None:
    import time

    client = pooled.client()
    client.chat.completions.create(model="smollm2.gguf", messages=ASK, max_tokens=2,  # type: ignore[arg-type]
                                   extra_body={"keep_alive": "10m"})
    held = {m["id"]: m for m in _get(pooled, "/models").json()["data"]}["smollm2.gguf"]
    assert held["state"] == "loaded" and 500 < held["expires_at"] - time.time() <= 600
    client.chat.completions.create(model="smollm2.gguf", messages=ASK, max_tokens=2,  # type: ignore[arg-type]
                                   extra_body={"keep_alive": 0})
    end = time.monotonic() + 60
    while _states(pooled)["smollm2.gguf"] != "not loaded":  # unloaded once idle, though --ttl is never
        assert time.monotonic() < end, "keep_alive 0 never unloaded the model"
        time.sleep(0.05)


def test_a_default_model_answers_names_it_does_not_know(folder: Path, tmp_path: Path) -> None:
    s = start_server(None, "--models-dir", str(folder / "tiny"), "--default-model", "tiny-a.gguf", "--ctx", "512",
                     env={"HF_HUB_CACHE": str(tmp_path), "HF_HOME": str(tmp_path)})
    try:
        reply = s.client().chat.completions.create(model="gpt-4", messages=ASK, max_tokens=3)  # type: ignore[arg-type]
        assert reply.model == "tiny-a.gguf"
    finally:
        stop_server(s)


def test_a_stream_goes_on_token_for_token_while_other_models_load_under_a_budget_for_two(
        tmp_path: Path) -> None:
    from prefill.bench.tiny_model import write_tiny_llama
    from prefill.engine.settings import LoadSettings
    from prefill.pool.catalogue import entry_for_file
    from prefill.pool.chat_model import ChatLoad, load_chat

    d = tmp_path / "three"
    d.mkdir()
    for i, name in enumerate(("a", "b", "c")):
        write_tiny_llama(d / f"{name}.gguf", n_vocab=4000, n_embd=256, n_ff=512, n_layer=4, seed=i)
    load = ChatLoad(LoadSettings(n_ctx=4096, n_gpu_layers="none"), 1)
    size = load.estimate(entry_for_file(d / "a.gguf")).total
    measured = load_chat(entry_for_file(d / "a.gguf"), load)  # what one takes once loaded, llama.cpp's figures
    loaded = measured.memory.total
    measured.close()
    s = start_server(None, "--models-dir", str(d), "--parallel", "1", "--ctx", "4096", "--ttl", "never",
                     "--memory-budget", str(int(loaded * 1.5 + size)),  # two loaded fit, not three
                     env={"HF_HUB_CACHE": str(tmp_path), "HF_HOME": str(tmp_path)})
    try:
        long = {"messages": ASK, "max_tokens": 4000, "temperature": 0, "extra_body": {"ignore_eos": True}}
        slow = s.client(timeout=900)  # 4,000 tokens: seconds alone, minutes beside busy cores
        alone = slow.chat.completions.create(model="a.gguf", **long)  # type: ignore[call-overload]
        pieces: list[str] = []
        stream = slow.chat.completions.create(model="a.gguf", stream=True, **long)  # type: ignore[call-overload]
        it = iter(stream)
        pieces.append(next(it).choices[0].delta.content or "")  # a is generating now
        for other in ("b.gguf", "c.gguf"):
            slow.chat.completions.create(model=other, messages=ASK, max_tokens=2)  # type: ignore[arg-type]
        held = {m["id"]: m for m in _get(s, "/models").json()["data"]}
        assert held["a.gguf"]["in_flight"] == 1, "the long answer ended before the others were asked"
        states = {k: v for k, v in _states(s).items() if not k.startswith("bundled:")}
        assert states == {"a.gguf": "loaded", "b.gguf": "not loaded", "c.gguf": "loaded"}  # b went, never a
        for chunk in it:
            if chunk.choices:
                pieces.append(chunk.choices[0].delta.content or "")
        assert "".join(pieces) == alone.choices[0].message.content
    finally:
        stop_server(s)
