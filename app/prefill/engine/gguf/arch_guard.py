"""Shapes llama.cpp asserts on for some architectures, checked before it sees a model file.

`guard` checks what every model must get right; this module checks what each
architecture's own code in llama.cpp (src/models/*.cpp, the llama.cpp that
llama-cpp-python 0.3.36 vendors) asserts on: head sizes, grouped-query heads,
sliding-window layers, state-space sizes. Those asserts fire while llama.cpp builds
the model or its first compute graph (at load, or when the context is made), and
kill the process. Each condition refused here is one that no working file breaks:
a file that breaks it would abort in every use, so the check refuses nothing that runs.
"""

from __future__ import annotations

from prefill.engine.gguf.header import GGUFError, GGUFHeader

# The graph of each of these asserts GGML_ASSERT(n_embd_head == hparams.n_embd_head_k()), n_embd_head
# being n_embd_head_v (models/llama.cpp:102, qwen2.cpp:56, phi3.cpp:71, cohere2.cpp:53...).
SAME_KV_HEAD = frozenset((
    "afmoe", "apertus", "arcee", "arctic", "baichuan", "bailingmoe2", "bert", "bitnet", "bloom", "chameleon",
    "chatglm", "codeshell", "cogvlm", "cohere2", "cohere2moe", "command-r", "dbrx", "deci", "deepseek", "dots1",
    "dream", "ernie4_5", "ernie4_5-moe", "eurobert", "exaone", "exaone-moe", "exaone4", "falcon", "glm4",
    "glm4moe", "gpt2", "gptneox", "granite", "granite_swa", "granitehybrid", "granitemoe", "graniteswitch", "grok",
    "grovemoe", "hunyuan-dense", "hunyuan-moe", "hunyuan_vl", "hy_v3", "internlm2", "jais", "jais2",
    "jina-bert-v2", "jina-bert-v3", "laguna", "llada", "llada-moe", "llama", "llama-embed", "llama4", "maincoder",
    "maple", "mellum", "minicpm", "minimax-01", "minimax-m2", "minimax-m3", "mistral3", "modern-bert", "mpt",
    "muse-glimmer", "nanbeige", "nemotron", "nemotron_h", "nemotron_h_moe", "neo-bert", "nomic-bert",
    "nomic-bert-moe", "olmo", "olmoe", "openelm", "orion", "paddleocr", "pangu-embedded", "phi2", "phi3", "phimoe",
    "plamo", "pockettts", "qwen", "qwen2", "qwen2moe", "qwen2vl", "qwen3", "qwen35", "qwen35moe", "qwen3moe",
    "qwen3next", "qwen3tts", "qwen3vl", "qwen3vlmoe", "qwen4exp", "refact", "rnd1", "seed_oss", "smallthinker",
    "smollm3", "spark2_5", "stablelm", "starcoder", "starcoder2", "t5", "t5encoder", "talkie", "xverse",
))
# ...and GGML_ASSERT(n_embd_head == n_rot): RoPE turns the whole head (qwen2.cpp:57, qwen3.cpp:57,
# granite.cpp:131...). Not llama, deci, falcon: llama.cpp refuses a mismatch for those itself.
ROPE_WHOLE_HEAD = frozenset((
    "apertus", "arcee", "arctic", "baichuan", "chameleon", "codeshell", "cogvlm", "cohere2moe", "dbrx", "deepseek",
    "dots1", "dream", "ernie4_5", "ernie4_5-moe", "exaone", "exaone-moe", "exaone4", "granite", "granite_swa",
    "granitemoe", "graniteswitch", "grok", "grovemoe", "hunyuan-dense", "hunyuan-moe", "hunyuan_vl", "hy_v3",
    "internlm2", "jais2", "llada", "llada-moe", "llama4", "maincoder", "mellum", "minicpm", "mistral3", "olmo",
    "olmoe", "orion", "paddleocr", "pangu-embedded", "plamo", "pockettts", "qwen2", "qwen2moe", "qwen2vl", "qwen3",
    "qwen3moe", "qwen3tts", "qwen3vl", "qwen3vlmoe", "rnd1", "seed_oss", "smallthinker", "smollm3", "starcoder2",
    "talkie", "xverse",
))
# Their query projection is n_embd wide, then reshaped to heads: ggml_reshape_3d asserts
# n_embd == head size x heads (ggml.c, GGML_ASSERT(ggml_nelements(a) == ne0*ne1*ne2)).
QUERY_IS_EMBD = frozenset((
    "arctic", "baichuan", "bitnet", "chameleon", "codeshell", "cohere2", "command-r", "deepseek", "dream",
    "internlm2", "llada-moe", "olmo", "olmoe", "orion", "phi2", "phi3", "phimoe", "plamo", "qwen2", "qwen2moe",
    "qwen2vl", "stablelm", "starcoder2", "xverse",
))
# Sliding-window architectures: (pattern when the file gives none, dense layer first, when the window is on).
# llama_model::create_memory: if swa_type != NONE, GGML_ASSERT(hparams.is_swa_any()) (llama-model.cpp:2807).
ALWAYS, IF_WINDOW, UNLESS_ZERO, ARRAY_ONLY = "always", "if sliding_window > 0", "unless sliding_window = 0", "array"
SLIDING_WINDOW = {
    "gemma2": (2, False, ALWAYS), "cohere2": (4, False, ALWAYS), "gpt-oss": (2, False, ALWAYS),
    "exaone-moe": (4, False, ALWAYS), "muse-glimmer": (4, False, ALWAYS), "cohere2moe": (4, True, ALWAYS),
    "gemma-embedding": (6, False, ALWAYS), "gemma3n": (5, False, ALWAYS),
    "gemma3": (6, False, IF_WINDOW), "olmo2": (4, False, IF_WINDOW), "afmoe": (4, False, IF_WINDOW),
    "mellum": (4, False, IF_WINDOW), "plamo3": (8, False, IF_WINDOW), "smallthinker": (4, True, IF_WINDOW),
    "laguna": (4, True, IF_WINDOW), "llama4": (4, False, UNLESS_ZERO),
    "gemma4": (0, False, ARRAY_ONLY), "gemma4-assistant": (0, False, ARRAY_ONLY), "granite_swa": (0, False, ARRAY_ONLY),
    "maple": (0, False, ARRAY_ONLY), "mimo2": (0, False, ARRAY_ONLY), "spark2_5": (0, False, ARRAY_ONLY),
    "step35": (0, False, ARRAY_ONLY), "dots3note": (0, False, ARRAY_ONLY),
}
# Mamba-2 layers (models/mamba-base.cpp:177-178, and d_inner / n_group in load_arch_tensors), and which
# layers are Mamba-2 layers: all, those without KV heads, or those without KV heads or a feed-forward.
MAMBA2_LAYERS = {"mamba2": "all", "falcon-h1": "all", "granitehybrid": "no kv",
                 "nemotron_h": "no kv, no ffn", "nemotron_h_moe": "no kv, no ffn"}
# load_arch_tensors: GGML_ASSERT(2 * n_embd == d_inner), "only an expansion factor of 2 is supported"
SSM_EXPANSION_2 = ("granitehybrid", "jamba")  # granite-hybrid.cpp:54, jamba.cpp:32
# deepseek2.cpp:77, load_arch_tensors: GGML_ASSERT(n_embd_head_qk_nope >= 1) (mistral4 reuses it)
MLA = ("deepseek2", "mistral4")
# Mixture-of-experts only: load_arch_tensors asserts n_expert > 0 (glm4-moe.cpp:42, llada-moe.cpp:25,
# grovemoe.cpp:29, bailingmoe2.cpp:32, smallthinker.cpp:54)
EXPERTS_REQUIRED = ("glm4moe", "llada-moe", "grovemoe", "bailingmoe2", "smallthinker")
# Architectures that route experts by `{arch}.expert_gating_func`; llm_graph_context::build_moe_ffn has no
# case for a value past 4 nor for 0 (none): GGML_ABORT("fatal error") (llama-graph.cpp:2072). The first
# ones turn 0 (or no key) into their own default in load_arch_hparams; the others do not.
GATING_DEFAULTED = ("afmoe", "cohere2moe", "deepseek2", "mistral4", "glm-dsa", "glm4moe", "glm5-next", "hy_v3",
                    "laguna", "step35")
GATING_AS_GIVEN = ("bailingmoe2", "bailingmoe3", "deepseek32", "deepseek4", "dots1", "dots3note", "exaone-moe",
                   "hy_v4", "kimi-k3", "kimi-linear", "lfm2moe", "minimax-m2", "minimax-m3", "smallthinker")
GATING_FUNCS = range(1, 5)  # softmax, sigmoid, softmax on the weights, sqrt(softplus): llama-hparams.h


def check_arch_shapes(h: GGUFHeader) -> None:
    """Raise `GGUFError` for an architecture's shape that llama.cpp would abort the process on.

    `guard` has checked the layer count (1 to 512) before.
    """
    n_layer = _whole(h, "block_count")
    if n_layer is None:
        return  # llama.cpp throws on a missing or mistyped count
    _check_heads(h, n_layer)
    _check_sliding_window(h, n_layer)
    _check_state_space(h, n_layer)
    _check_experts(h)


def _refuse(what: str) -> GGUFError:
    return GGUFError(f"the model's metadata is malformed: {what}; llama.cpp would abort on it")


def _whole(h: GGUFHeader, name: str, default: int | None = None) -> int | None:
    v = h.arch_value(name)
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def _per_layer(h: GGUFHeader, name: str, n_layer: int) -> list[int] | None:
    """`{arch}.name` for each layer (llama.cpp's get_key_or_arr); None when absent or when llama.cpp throws on it."""
    v = h.arch_value(name)
    if isinstance(v, int) and not isinstance(v, bool):
        return [v] * n_layer
    if isinstance(v, list) and len(v) == n_layer and all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        return v
    return None


def _check_heads(h: GGUFHeader, n_layer: int) -> None:
    heads = _per_layer(h, "attention.head_count", n_layer)
    if heads is None or not heads[0]:
        return  # no attention heads (llama.cpp then sets every head size to 0)
    kv_heads = _per_layer(h, "attention.head_count_kv", n_layer) if h.arch_value("attention.head_count_kv") \
        is not None else heads
    arch, n_embd, n_head = h.architecture, h.n_embd, heads[0]
    for il, (nh, nkv) in enumerate(zip(heads, kv_heads or heads)):
        # ggml_mul_mat(k, q) broadcasts the key/value heads over the query heads: GGML_ASSERT(ggml_can_mul_mat)
        if nh and nkv and nh % nkv:
            raise _refuse(f"layer {il} has {nh} attention heads, not a multiple of its {nkv} key/value heads")
    # llama_model_base::load_hparams: head sizes default to n_embd / n_head, RoPE to the key's size;
    # layer 0 may be a sliding-window layer with sizes of its own, so a fault must hold for both.
    k = _whole(h, "attention.key_length", n_embd // n_head) or 0
    v = _whole(h, "attention.value_length", n_embd // n_head) or 0
    rot = _whole(h, "rope.dimension_count", k) or 0
    sizes = {(k, v, rot), (_whole(h, "attention.key_length_swa", k) or 0,
                           _whole(h, "attention.value_length_swa", v) or 0,
                           _whole(h, "rope.dimension_count_swa", rot) or 0)}
    if arch in SAME_KV_HEAD and all(kk != vv for kk, vv, _ in sizes):
        raise _refuse(f"its attention keys are {k} wide and its values {v}, where {arch} needs them alike")
    if arch in ROPE_WHOLE_HEAD and all(vv != rr for _, vv, rr in sizes):
        raise _refuse(f"RoPE turns {rot} of each attention head's {v} dimensions, where {arch} turns them all")
    if arch == "olmo2" and all(kk != n_embd // n_head or rr != kk for kk, _, rr in sizes):
        # olmo2.cpp:66-67: n_embd_head = n_embd / n_head, asserted equal to the key size and to n_rot
        raise _refuse(f"{n_head} heads of {k} (RoPE on {rot}) do not split its width {n_embd} evenly")
    if arch in QUERY_IS_EMBD and all(vv * n_head != n_embd for _, vv, _ in sizes):
        raise _refuse(f"{n_head} attention heads of {v} do not make up its width {n_embd}")
    if arch in MLA:
        both = _whole(h, "attention.key_length_mla", 0) and _whole(h, "attention.value_length_mla", 0)
        k_mla = _whole(h, "attention.key_length_mla", 0) if both else k
        if (k_mla or 0) - rot < 1:
            raise _refuse(f"RoPE turns {rot} of each attention key's {k_mla} dimensions, leaving none unrotated")


def _check_sliding_window(h: GGUFHeader, n_layer: int) -> None:
    rule = SLIDING_WINDOW.get(h.architecture)
    if rule is None:
        return
    default, dense_first, when = rule
    window = _whole(h, "attention.sliding_window")
    if (when == IF_WINDOW and not window) or (when == UNLESS_ZERO and window == 0):
        return  # the window is off: no layer needs to be a sliding-window one
    pattern = h.arch_value("attention.sliding_window_pattern", None if when == ARRAY_ONLY else default)
    n_trunk = n_layer - (_whole(h, "nextn_predict_layers", 0) or 0)
    if isinstance(pattern, list):  # one flag per layer (bool or integer), the rest not sliding-window
        if all(isinstance(x, int) for x in pattern) and not any(pattern[:n_layer]):
            raise _refuse("its sliding-window pattern marks no layer as sliding-window, "
                          f"where {h.architecture} uses a sliding window")
        return
    if not isinstance(pattern, int) or isinstance(pattern, bool):
        return  # absent where required, or mistyped: llama.cpp throws
    # llama_hparams::set_swa_pattern: layer il is sliding-window when il % n < n - 1 (dense first: il % n != 0)
    if pattern == 1 or (dense_first and pattern > 1 and n_trunk <= 1):
        raise _refuse(f"its sliding-window pattern {pattern} leaves no layer sliding-window, "
                      f"where {h.architecture} uses a sliding window")


def _check_state_space(h: GGUFHeader, n_layer: int) -> None:
    arch, inner = h.architecture, _whole(h, "ssm.inner_size")
    if inner is None:
        return  # a required key: llama.cpp throws
    if arch in SSM_EXPANSION_2 and inner != 2 * h.n_embd:
        raise _refuse(f"its state-space layers are {inner} wide, where {arch} needs twice its width {h.n_embd}")
    which = MAMBA2_LAYERS.get(arch)
    if which is None or not _has_mamba2_layer(h, n_layer, which):
        return
    for name, what in (("ssm.time_step_rank", "heads"), ("ssm.group_count", "groups")):
        n = _whole(h, name)
        if n is not None and (n < 1 or inner % n):
            raise _refuse(f"its state-space layers' width {inner} does not split into {n} {what}")


def _has_mamba2_layer(h: GGUFHeader, n_layer: int, which: str) -> bool:
    if which == "all":
        return True
    kv = _per_layer(h, "attention.head_count_kv", n_layer)
    ff = _per_layer(h, "feed_forward_length", n_layer) if which == "no kv, no ffn" else [0] * n_layer
    if kv is None or ff is None:
        return False  # absent (every layer then has heads) or one llama.cpp throws on
    return any(a == 0 and f == 0 for a, f in zip(kv, ff))


def _check_experts(h: GGUFHeader) -> None:
    arch = h.architecture
    if arch in EXPERTS_REQUIRED and not _whole(h, "expert_count"):
        raise _refuse(f"it gives no experts, where {arch} is a mixture-of-experts architecture")
    # ernie4-5-moe.cpp:26, its graph: GGML_ASSERT(hparams.n_moe_layer_step > 0)
    if arch == "ernie4_5-moe" and _whole(h, "interleave_moe_layer_step") == 0:
        raise _refuse("its experts come every 0 layers (interleave_moe_layer_step)")
    if arch not in GATING_DEFAULTED + GATING_AS_GIVEN or not _whole(h, "expert_count"):
        return
    given = h.arch_value("expert_gating_func")
    gating = _whole(h, "expert_gating_func", 0 if given is None else None)
    if gating is None or (gating == 0 and arch in GATING_DEFAULTED):
        return  # mistyped (llama.cpp throws), or none given where llama.cpp picks one
    if gating not in GATING_FUNCS:
        what = f"its expert gating function is {gating}" if given is not None else "it names no expert gating function"
        raise _refuse(f"{what}, where {arch} routes its experts by one of 1 to 4")
