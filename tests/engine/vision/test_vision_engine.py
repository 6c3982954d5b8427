"""Images through the chat engine on the tiny vision model: counted, encoded once, reused from the
KV cache across turns and chat switches, and the same greedy answer with the cache as without."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefill.bench.tiny_vision import VisionShape, write_mmproj
from prefill.engine.events import Finished, PrefillDone
from prefill.engine.local.chat_engine import ChatEngine
from prefill.engine.local.kv_disk import KvDiskCache
from prefill.engine.message import Message
from prefill.engine.request import ChatRequest
from prefill.engine.settings import SamplingSettings
from prefill.engine.vision.errors import ImagesNeedProjector, ProjectorError
from prefill.engine.vision.projector import IMAGE_TOKEN_BASE, find_projector
from tests.engine.vision.conftest import SETTINGS, image

GREEDY = SamplingSettings(temperature=0.0, max_tokens=12, repeat_penalty=1.0)
N_IMAGE = VisionShape().n_patches  # 16 embeddings for every image at 56 px with 14 px patches


def turn(engine: ChatEngine, msgs: list[Message]) -> tuple[PrefillDone, Finished]:
    events = list(engine.stream(ChatRequest.of(msgs, GREEDY)))
    prefill = next(e for e in events if isinstance(e, PrefillDone))
    assert isinstance(events[-1], Finished)
    return prefill, events[-1]


def two_turns(engine: ChatEngine, with_image: bool) -> tuple[PrefillDone, PrefillDone, Finished, list[Message]]:
    images = (image(),) if with_image else ()
    msgs = [Message("system", "You describe pictures."), Message("user", "what is in it", images=images)]
    p1, f1 = turn(engine, msgs)
    msgs += [Message("assistant", f1.text), Message("user", "and the colour")]
    p2, f2 = turn(engine, msgs)
    return p1, p2, f2, msgs


def test_the_image_is_counted_and_encoded(seeing: ChatEngine) -> None:
    p, f = turn(seeing, [Message("user", "what is in it", images=(image(),))])
    assert p.image_tokens == N_IMAGE and f.metrics.image_tokens == N_IMAGE
    assert p.image_encode_ms > 0 and f.metrics.image_encode_ms == p.image_encode_ms
    img = image()
    before, after = seeing.render([Message("user", "what is in it", images=(img,))]).split(img.marker)
    text = len(seeing.runtime.tokenize(before, add_special=True)) + len(seeing.runtime.tokenize(after))
    assert p.prompt_tokens == text + N_IMAGE  # the text around the marker, and the image's run
    assert p.evaluated_tokens == p.prompt_tokens
    run = [t for t in seeing.cached_tokens if t >= IMAGE_TOKEN_BASE]
    assert len(run) == N_IMAGE and run == list(range(run[0], run[0] + N_IMAGE))


def new_turn_tokens(engine: ChatEngine, text: str) -> int:
    return len(engine.runtime.tokenize(f"<|im_end|>\n<|im_start|>user\n{text}<|im_end|>\n<|im_start|>assistant\n"))


def test_turn_two_evaluates_only_the_new_text(seeing: ChatEngine) -> None:
    p1, p2, _, msgs = two_turns(seeing, with_image=True)
    assert p2.cached_tokens >= p1.prompt_tokens  # turn one's prompt, its image included, is all reused
    assert p2.image_tokens == N_IMAGE and p2.image_encode_ms == 0.0
    # the new turn, and at most the answer's text again where its tokens differ from their re-reading
    answer = len(seeing.runtime.tokenize(msgs[2].content))
    assert p2.evaluated_tokens <= new_turn_tokens(seeing, "and the colour") + answer
    given = [*msgs[:2], Message("assistant", "a red square"), Message("user", "and the colour")]
    turn(seeing, given)  # the given answer replaces the generated one
    p3, _ = turn(seeing, [*given, Message("assistant", "no"), Message("user", "why")])
    before = len(seeing.runtime.tokenize("no"))
    assert p3.evaluated_tokens == new_turn_tokens(seeing, "why") + before  # nothing before the new text
    assert p3.image_encode_ms == 0.0


def test_the_same_greedy_answer_with_the_cache_as_without(seeing: ChatEngine) -> None:
    # The assistant's turn is given (a generated one would be kept as its own tokens, which its
    # re-tokenised text need not match): both runs then read the same tokens.
    msgs = [Message("system", "You describe pictures."), Message("user", "what is in it", images=(image(),))]
    turn(seeing, msgs)
    msgs += [Message("assistant", "a red square"), Message("user", "and the colour")]
    p2, cached = turn(seeing, msgs)
    assert p2.cached_tokens > N_IMAGE and p2.image_encode_ms == 0.0
    seeing.reset_cache()
    p, fresh = turn(seeing, msgs)  # the image decoded again from its kept encoding
    assert p.cached_tokens == 0 and p.evaluated_tokens == p.prompt_tokens and p.image_encode_ms == 0.0
    assert fresh.text == cached.text
    assert seeing.projector is not None
    seeing.projector.forget_embeddings()
    seeing.reset_cache()
    p, encoded = turn(seeing, msgs)  # and encoded again: the same answer
    assert p.image_encode_ms > 0 and encoded.text == cached.text


def test_another_image_in_the_same_place_is_evaluated_again(seeing: ChatEngine) -> None:
    red = [Message("user", "what is in it", images=(image((200, 0, 0)),))]
    blue = [Message("user", "what is in it", images=(image((0, 0, 200)),))]
    p_red, _ = turn(seeing, red)
    p_blue, f_blue = turn(seeing, blue)
    run_start = next(i for i, t in enumerate(seeing.cached_tokens) if t >= IMAGE_TOKEN_BASE)
    assert p_blue.cached_tokens == run_start and p_blue.image_encode_ms > 0
    seeing.reset_cache()
    _, f_alone = turn(seeing, blue)
    assert f_alone.text == f_blue.text
    assert p_red.image_tokens == p_blue.image_tokens == N_IMAGE


def test_after_a_chat_switch_the_saved_state_is_reused(seeing: ChatEngine, tmp_path: Path) -> None:
    disk = KvDiskCache(tmp_path / "kv", min_free=0)
    chat = [Message("user", "what is in it", images=(image(),)), Message("assistant", "a red square"),
            Message("user", "and the colour")]
    _, before = turn(seeing, chat)
    assert seeing.save_state(disk).outcome == "written"
    turn(seeing, [Message("user", "another chat", images=(image((0, 90, 0)),))])  # takes the cache
    found = seeing.restore_state(disk, chat)
    assert found.header is not None, found.note
    p, back = turn(seeing, chat)  # the same prompt again: only its last token is read
    assert p.restored_tokens > N_IMAGE and p.evaluated_tokens == 1 and p.image_encode_ms == 0.0
    seeing.reset_cache()
    p_fresh, fresh = turn(seeing, chat)
    assert p_fresh.evaluated_tokens == p.prompt_tokens
    assert back.text == before.text == fresh.text


def test_a_marker_typed_as_text_without_its_image_stays_text(seeing: ChatEngine) -> None:
    fake = image().marker
    p, f = turn(seeing, [Message("user", f"look: {fake}")])
    assert p.image_tokens == 0 and f.reason in ("stop", "length")
    assert all(t < IMAGE_TOKEN_BASE for t in seeing.cached_tokens)


def test_a_model_without_its_projector_says_images_need_it(tiny_vision: tuple[Path, Path]) -> None:
    e = ChatEngine.load(tiny_vision[0], SETTINGS)
    try:
        with pytest.raises(ImagesNeedProjector, match="without a projector, and images need one.*mmproj"):
            turn(e, [Message("user", "what is in it", images=(image(),))])
        _, f = turn(e, [Message("user", "just text")])  # text still works
        assert f.reason in ("stop", "length")
    finally:
        e.close()


def test_a_projector_for_another_width_is_refused(tiny_vision: tuple[Path, Path], tmp_path: Path) -> None:
    wrong = write_mmproj(tmp_path / "mmproj-wide.gguf", text_embd=96)
    with pytest.raises(ProjectorError, match="mismatch|n_embd"):
        ChatEngine.load(tiny_vision[0], SETTINGS, mmproj=wrong)


def test_a_model_file_is_not_a_projector(tiny_vision: tuple[Path, Path]) -> None:
    with pytest.raises(ProjectorError, match="not a projector"):
        ChatEngine.load(tiny_vision[0], SETTINGS, mmproj=tiny_vision[0])


def test_the_projector_beside_the_model_is_found(tmp_path: Path) -> None:
    model = tmp_path / "gemma-3-4b-it-Q4_K_M.gguf"
    model.write_bytes(b"")
    assert find_projector(model) is None
    (tmp_path / "mmproj-other-F16.gguf").write_bytes(b"")
    (tmp_path / "mmproj-gemma-3-4b-it-F16.gguf").write_bytes(b"")
    found = find_projector(model)
    assert found is not None and found.name == "mmproj-gemma-3-4b-it-F16.gguf"


def test_two_images_in_a_turn_and_one_shown_again_later(seeing: ChatEngine) -> None:
    red, blue = image((200, 0, 0)), image((0, 0, 200))
    msgs = [Message("user", "compare them", images=(red, blue))]
    p1, _ = turn(seeing, msgs)
    assert p1.image_tokens == 2 * N_IMAGE
    msgs += [Message("assistant", "two squares"), Message("user", "this one again?", images=(red,))]
    p2, _ = turn(seeing, msgs)
    assert p2.image_tokens == 3 * N_IMAGE and p2.cached_tokens > 2 * N_IMAGE
    assert p2.image_encode_ms == 0.0  # shown again: decoded at its new place from its kept encoding
    for extreme in ((1, 1), (1200, 2)):  # mtmd scales every shape to the projector's size
        p, _ = turn(seeing, [Message("user", "and this", images=(image(width=extreme[0], height=extreme[1]),))])
        assert p.image_tokens == N_IMAGE


def test_a_projector_missing_what_clip_asserts_on_is_refused_before_llama_cpp(
        tiny_vision: tuple[Path, Path], tmp_path: Path) -> None:
    from gguf import GGUFWriter

    path = tmp_path / "mmproj-broken.gguf"
    w = GGUFWriter(str(path), "clip")
    w.add_bool("clip.has_vision_encoder", True)
    w.add_string("clip.projector_type", "mlp")  # no image_mean / image_std: clip.cpp would abort the process
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(ProjectorError, match="lacks clip.vision.image_mean"):
        ChatEngine.load(tiny_vision[0], SETTINGS, mmproj=path)


def test_kept_encodings_stay_within_their_budget(seeing: ChatEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    from prefill.engine.vision import projector

    one = N_IMAGE * seeing.projector.n_embd * 4  # type: ignore[union-attr]
    monkeypatch.setattr(projector, "EMBEDDINGS_BYTES", one)  # room for one image's encoding
    red, blue = image((200, 0, 0)), image((0, 0, 200))
    encoded = []
    for img in (red, red, blue, red):
        seeing.reset_cache()
        p, _ = turn(seeing, [Message("user", "what is in it", images=(img,))])
        encoded.append(p.image_encode_ms > 0)
    assert encoded == [True, False, True, True]  # blue took red's room
