"""Models whose cache llama.cpp cannot trim part-way (recurrent state): the engine's record of the
cache matches what llama.cpp holds, and a turn that needs a trim re-reads the prompt and says so."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gguf import GGUFWriter

from prefill.bench.tiny_model import CHATML, _vocab
from prefill.engine.events import Finished, PrefillDone
from prefill.engine.local.chat_engine import ChatEngine
from prefill.engine.message import Message
from prefill.engine.request import ChatRequest
from prefill.engine.settings import LoadSettings, SamplingSettings

GREEDY = SamplingSettings(temperature=0.0, max_tokens=12)


def write_tiny_mamba(path: Path, n_embd: int = 64, n_vocab: int = 4000, d_inner: int = 128, d_state: int = 8,
                     d_conv: int = 4, dt_rank: int = 4, n_layer: int = 2) -> Path:
    """A random-weight Mamba (recurrent state, no KV cells) that llama.cpp loads and runs."""
    rng = np.random.default_rng(1)
    w = GGUFWriter(str(path), "mamba")
    w.add_name("prefill-tiny-mamba")
    w.add_context_length(4096)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(0)
    w.add_head_count(0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_ssm_conv_kernel(d_conv)
    w.add_ssm_inner_size(d_inner)
    w.add_ssm_state_size(d_state)
    w.add_ssm_time_step_rank(dt_rank)
    w.add_file_type(0)
    tokens, scores, types = _vocab(n_vocab)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(4)
    w.add_chat_template(CHATML)

    def t(name: str, *shape: int, scale: float = 0.3) -> None:
        w.add_tensor(name, (rng.standard_normal(shape) * scale).astype(np.float32))

    t("token_embd.weight", n_vocab, n_embd)
    w.add_tensor("output_norm.weight", np.ones(n_embd, dtype=np.float32))
    t("output.weight", n_vocab, n_embd)
    for i in range(n_layer):
        b = f"blk.{i}."
        w.add_tensor(b + "attn_norm.weight", np.ones(n_embd, dtype=np.float32))
        t(b + "ssm_in.weight", 2 * d_inner, n_embd)
        t(b + "ssm_conv1d.weight", d_inner, d_conv)
        t(b + "ssm_conv1d.bias", d_inner)
        t(b + "ssm_x.weight", dt_rank + 2 * d_state, d_inner)
        t(b + "ssm_dt.weight", d_inner, dt_rank)
        t(b + "ssm_dt.bias", d_inner)
        w.add_tensor(b + "ssm_a", -np.tile(np.arange(1, d_state + 1, dtype=np.float32), (d_inner, 1)))
        w.add_tensor(b + "ssm_d", np.ones(d_inner, dtype=np.float32))
        t(b + "ssm_out.weight", n_embd, d_inner)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.fixture(scope="module")
def mamba(tmp_path_factory: pytest.TempPathFactory):
    e = ChatEngine.load(write_tiny_mamba(tmp_path_factory.mktemp("mamba") / "mamba.gguf"),
                        LoadSettings(n_ctx=512, n_gpu_layers="none"))
    yield e
    e.close()


def run(e: ChatEngine, messages: list[Message]) -> tuple[PrefillDone, Finished]:
    events = list(e.stream(ChatRequest.of(messages, GREEDY)))
    prefill = next(ev for ev in events if isinstance(ev, PrefillDone))
    assert isinstance(events[-1], Finished)
    return prefill, events[-1]


def test_a_regenerate_needs_a_trim_so_the_prompt_is_read_again(mamba: ChatEngine) -> None:
    assert mamba.runtime.recurrent
    mamba.reset_cache()
    chat = [Message("user", "alpha beta gamma")]
    first_prefill, first = run(mamba, chat)
    again_prefill, again = run(mamba, chat)  # the same prompt: the cache must drop the answer
    assert again_prefill.cache_note and "read again" in again_prefill.cache_note
    assert again_prefill.cached_tokens == 0
    assert again_prefill.evaluated_tokens == again_prefill.prompt_tokens == first_prefill.prompt_tokens
    assert again.text == first.text  # decoded with its whole context, as the first time
    assert mamba.runtime.kv_cells_used() == len(mamba.cached_tokens)


def test_a_next_turn_that_only_appends_keeps_the_state(mamba: ChatEngine) -> None:
    mamba.reset_cache()
    chat = [Message("user", "alpha beta gamma")]
    _, first = run(mamba, chat)
    chat += [Message("assistant", first.text), Message("user", "delta")]
    prefill, _ = run(mamba, chat)
    # The answer's own tokens are kept (not re-tokenised), so the new prompt only extends the state.
    assert not prefill.cache_note
    assert 0 < prefill.cached_tokens < prefill.prompt_tokens
    assert mamba.runtime.kv_cells_used() == len(mamba.cached_tokens)
