"""KV cache sizes from a model's shape and the cache type.

One KV cell holds, for every layer, a key and a value vector for each KV head:
bytes per cell = n_layer * n_head_kv * (head_dim_k * size(type_k) + head_dim_v * size(type_v)).
"""

from __future__ import annotations

from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

from prefill.engine.gguf.header import GGUFHeader
from prefill.engine.settings import KV_TYPES

_GGML = {"f16": GGMLQuantizationType.F16, "q8_0": GGMLQuantizationType.Q8_0, "q4_0": GGMLQuantizationType.Q4_0}


def ggml_type_id(kv_type: str) -> int:
    """The ggml type number llama.cpp takes for a cache type name."""
    try:
        return int(_GGML[kv_type])
    except KeyError:
        raise ValueError(f"unknown KV cache type {kv_type!r}; choose one of {', '.join(KV_TYPES)}") from None


def bytes_per_element(kv_type: str) -> float:
    block, size = GGML_QUANT_SIZES[_GGML[kv_type]]
    return size / block


def kv_bytes_per_cell(header: GGUFHeader, type_k: str = "f16", type_v: str = "f16") -> int:
    """Bytes one token's cell takes in the KV cache, over all layers."""
    per_layer = header.n_head_kv * (
        header.head_dim_k * bytes_per_element(type_k) + header.head_dim_v * bytes_per_element(type_v)
    )
    return int(header.n_layer * per_layer)
