"""The model library knows projectors: a vision repository on the hub stand-in, listed with its
projector beside each quantisation, fetched together (a cut projector download resumed), paired in
the library, loaded with the model so images work; unsafe projector names refused; the fit grows by
the projector and an image's KV; a text-only load says what it lacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefill.bench.tiny_vision import VisionShape, write_mmproj, write_tiny_vision
from prefill.cli import main
from prefill.engine.events import Finished, PrefillDone
from prefill.engine.gguf.header import read_header
from prefill.engine.gguf.projector_files import best_projector, find_projector, is_projector_name
from prefill.engine.llama.hardware import MachineMemory
from prefill.engine.llama.kv_sizes import kv_bytes_per_cell
from prefill.engine.llama.memory_fit import TYPICAL_IMAGE_TOKENS, estimate_fit, image_tokens, with_projector
from prefill.engine.message import Message
from prefill.engine.request import ChatRequest
from prefill.engine.settings import LoadSettings, SamplingSettings
from prefill.hub.library import ModelLibrary
from prefill.hub.quants import RemoteFile, group_models
from prefill.session.backends import BESIDE, LocalModel, describe, open_backend, vision_note
from tests.engine.vision.conftest import image
from tests.hub.conftest import add_repo, payload
from tests.hub.fake_hub import FakeHub

REPO = "org/TinyVision-GGUF"
MODEL = "tinyvision-Q8_0.gguf"
PROJ_F16 = "mmproj-tinyvision-f16.gguf"
PROJ_F32 = "mmproj-tinyvision-f32.gguf"
SETTINGS = LoadSettings(n_ctx=1024, n_gpu_layers="none")
GREEDY = SamplingSettings(temperature=0.0, max_tokens=4, repeat_penalty=1.0)


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, bytes]:
    model, mmproj = write_tiny_vision(tmp_path_factory.mktemp("tiny-vision"))
    return model.read_bytes(), mmproj.read_bytes()


@pytest.fixture
def env_hub(hub: FakeHub, monkeypatch: pytest.MonkeyPatch, pair: tuple[bytes, bytes]) -> FakeHub:
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    model, mmproj = pair
    add_repo(hub, REPO, {MODEL: model, "tinyvision-F16.gguf": payload(3000), PROJ_F16: mmproj,
                         PROJ_F32: payload(len(mmproj) * 2, seed=2)}, downloads=3)
    return hub


def test_the_rule_picks_the_model_s_projector_f16_first() -> None:
    assert is_projector_name("Q4/mmproj-x-f16.gguf") and is_projector_name("gemma-3-mmproj-F16.gguf")
    assert not is_projector_name("gemma-3-4b-Q4_K_M.gguf") and not is_projector_name("mmproj.bin")
    names = ["mmproj-gemma-3-4b-F32.gguf", "mmproj-gemma-3-4b-F16.gguf", "mmproj-gemma-3-4b-BF16.gguf"]
    assert best_projector("gemma-3-4b-Q4_K_M.gguf", names) == "mmproj-gemma-3-4b-F16.gguf"
    assert best_projector("gemma-3-4b-F32.gguf", names) == "mmproj-gemma-3-4b-F32.gguf"  # its own precision
    assert best_projector("gemma-3-4b-Q4_K_M.gguf", ["gemma-3-4b-Q8_0.gguf"]) is None


def test_a_listing_pairs_each_quantisation_with_the_projector_of_its_folder() -> None:
    files = [RemoteFile(n, 10, None) for n in (
        "m-Q4_K_M.gguf", "m-Q8_0.gguf", "mmproj-m-f32.gguf", "mmproj-m-f16.gguf",
        "sub/m-Q2_K.gguf", "text/t-Q4_0.gguf", "README.md")]
    models = {m.name: m for m in group_models(files)}
    assert models["m-Q4_K_M.gguf"].projector == RemoteFile("mmproj-m-f16.gguf", 10, None)
    assert models["m-Q8_0.gguf"].files[-1].filename == "mmproj-m-f16.gguf"
    assert models["m-Q8_0.gguf"].download_size == 20
    assert models["m-Q2_K.gguf"].projector is None  # another folder: it would not land beside the model
    assert models["mmproj-m-f16.gguf"].is_projector and models["mmproj-m-f16.gguf"].projector is None


def test_search_files_get_library_and_load_with_images(
    env_hub: FakeHub, tmp_path: Path, capsys: pytest.CaptureFixture[str], pair: tuple[bytes, bytes],
) -> None:
    models = ["--models-dir", str(tmp_path)]
    assert main(["search", "tinyvision"]) == 0
    assert REPO in capsys.readouterr().out
    assert main(["files", REPO]) == 0
    out = capsys.readouterr().out
    assert f"+ projector {PROJ_F16}" in out and "Q8_0" in out
    assert out.count("+ projector") == 2  # both quantisations, f16 chosen over f32
    assert "projectors (vision" in out and PROJ_F32 in out.split("projectors (vision")[1]
    assert "Q8_0\n" in out and f"  {PROJ_F16}" in out.split("projectors (vision")[1]

    env_hub.cut_after[PROJ_F16] = len(pair[1]) // 2  # the projector's connection drops once mid-file
    assert main(["get", REPO, "--quant", "Q8_0", *models]) == 0
    out, err = capsys.readouterr()
    folder = tmp_path / "org" / "TinyVision-GGUF"
    assert out.strip() == str(folder / MODEL) and f"projector {PROJ_F16} beside it" in err
    assert (folder / PROJ_F16).read_bytes() == pair[1] and not (folder / PROJ_F32).exists()
    ranges = [s.range for s in env_hub.served if s.path.endswith(env_hub.repos[REPO].files[PROJ_F16].sha256)
              and s.method == "GET"]
    assert any(r and not r.startswith("bytes=0-") for r in ranges), ranges  # resumed, not started again

    library = ModelLibrary(tmp_path, hf_cache_dir=False, include_bundled=False)
    listed = library.models()
    assert [m.name for m in listed] == [f"{REPO}/{MODEL}"]  # the projector is not a model
    assert listed[0].projector == folder / PROJ_F16
    assert main(["ls", *models]) == 0
    assert "mmproj" not in capsys.readouterr().out

    backend = open_backend(LocalModel(str(listed[0].path), SETTINGS, mmproj=BESIDE))
    try:
        target = LocalModel(str(listed[0].path), SETTINGS, mmproj=BESIDE)
        assert describe(backend, target, 1.0).vision == f"Images: {PROJ_F16}"
        events = list(backend.stream(ChatRequest.of([Message("user", "what is this", images=(image(),))],
                                                    GREEDY)))
        prefill = next(e for e in events if isinstance(e, PrefillDone))
        assert prefill.image_tokens == VisionShape().n_patches and isinstance(events[-1], Finished)
    finally:
        backend.close()

    assert main(["rm", MODEL, "--yes", *models]) == 0  # the folder's last model takes its projector along
    assert not folder.exists()


def test_get_names_another_projector_or_none(env_hub: FakeHub, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    models = ["--models-dir", str(tmp_path)]
    folder = tmp_path / "org" / "TinyVision-GGUF"
    assert main(["get", REPO, "--quant", "F16", "--mmproj-file", PROJ_F32, *models]) == 0
    assert (folder / PROJ_F32).is_file() and not (folder / PROJ_F16).exists()
    assert main(["get", REPO, "--quant", "Q8_0", "--mmproj-file", "none", *models]) == 0
    assert sorted(p.name for p in folder.iterdir()) == sorted([PROJ_F32, MODEL, "tinyvision-F16.gguf"])
    capsys.readouterr()
    assert main(["get", REPO, "--quant", "Q8_0", "--mmproj-file", "mmproj-nothing.gguf", *models]) == 1
    assert "no projector called 'mmproj-nothing.gguf'" in capsys.readouterr().err


@pytest.mark.parametrize("bad", ["../mmproj-evil-f16.gguf", "mmproj-evil\u202ef16.gguf", "mmproj-con:f16.gguf"])
def test_an_unsafe_projector_name_is_refused_at_the_door(
    hub: FakeHub, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: str,
) -> None:
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    add_repo(hub, "org/Evil-GGUF", {"m-Q4_0.gguf": payload(100), bad: payload(100, seed=3)})
    args = ["get", "org/Evil-GGUF", "--quant", "Q4_0", "--mmproj-file", bad, "--models-dir", str(tmp_path / "m")]
    assert main(args) == 1
    assert "refusing the file name" in capsys.readouterr().err
    assert not list(tmp_path.rglob("*mmproj*"))  # nothing written, anywhere


def test_the_fit_counts_the_projector_and_an_image_s_kv(tmp_path: Path) -> None:
    model, mmproj = write_tiny_vision(tmp_path)
    mh, ph = read_header(model), read_header(mmproj)
    assert image_tokens(ph) == VisionShape().n_patches  # (56 px / 14 px)^2
    memory = MachineMemory(16 << 30, 8 << 30)
    plain = estimate_fit(mh, 1024, memory)
    seeing = with_projector(mh, ph, 1024, memory)
    p_bytes = sum(t.nbytes for t in ph.tensors)
    assert seeing.projector == p_bytes > 0 and seeing.weights == plain.weights + p_bytes
    assert seeing.kv_cache == plain.kv_cache + VisionShape().n_patches * kv_bytes_per_cell(mh, "f16", "f16")
    assert seeing.total > plain.total + p_bytes and seeing.n_ctx == 1024
    assert f"an image of {VisionShape().n_patches} tokens" in seeing.summary()
    qwen = write_mmproj(tmp_path / "mmproj-merge.gguf", VisionShape(image_size=112))
    assert image_tokens(read_header(qwen)) == 64
    assert TYPICAL_IMAGE_TOKENS == 576


def test_a_text_only_load_names_what_images_need(tmp_path: Path) -> None:
    model, mmproj = write_tiny_vision(tmp_path / "pair")
    alone = tmp_path / "alone" / "tinyvision-Q8_0.gguf"
    alone.parent.mkdir()
    alone.write_bytes(model.read_bytes())
    backend = open_backend(LocalModel(str(alone), SETTINGS, mmproj=BESIDE))
    try:
        local, sees = backend.local, backend.sees_images
        assert local is not None and sees is not None and sees.projector is None
        assert vision_note(local, sees, "") == ""  # text only by choice: nothing to say
        local.header.metadata["general.name"] = "TinyVision-VL"  # as a vision model's text half names itself
        note = vision_note(local, sees)
        assert note.startswith("Text only: images need the model's projector, an mmproj-*.gguf") and alone.name in note
        wide = write_mmproj(alone.parent / "mmproj-tinyvision-f16.gguf", text_embd=96)  # not for this model
        assert find_projector(alone) == wide
    finally:
        backend.close()
    again = open_backend(LocalModel(str(alone), SETTINGS, mmproj=BESIDE))  # refused: loads text-only
    try:
        note = describe(again, LocalModel(str(alone), SETTINGS, mmproj=BESIDE), 1.0).vision
        assert note.startswith(f"Text only: the projector {wide.name} beside the model was refused")
    finally:
        again.close()


def test_files_fit_fetches_a_shared_projector_s_header_once(
    env_hub: FakeHub, capsys: pytest.CaptureFixture[str], pair: tuple[bytes, bytes],
) -> None:
    model, mmproj = pair
    add_repo(env_hub, "org/Twice-GGUF", {"twice-Q8_0.gguf": model, "twice-Q4_0.gguf": model,
                                         "twice-Q2_K.gguf": payload(3000), "mmproj-twice-f16.gguf": mmproj})
    assert main(["files", "org/Twice-GGUF", "--fit"]) == 0
    out = capsys.readouterr().out
    assert out.count("+ projector") == 3 and out.count("with its projector") == 2  # every quantisation carries it
    assert len(env_hub.gets("mmproj-twice-f16.gguf")) == 1  # its header read once for all the fits
    # The Q2_K file of this repo is not a GGUF: its row says so, and the listing goes on.
    assert "fit unknown: not a GGUF file" in out and "Q8_0" in out
