"""Put on PYTHONPATH of a child that runs llama-cpp-python itself (its server, a measurement):
models then load as Prefill loads them, with llama.cpp's extra buffer types off on AMX CPUs
(see `prefill.engine.llama.runtime.extra_buffer_types_safe`: ggml's AMX kernels die with SIGILL
on some machines, and the weights' size differs with them)."""

import llama_cpp.llama_cpp as bindings  # the module llama_cpp.Llama and its server call through

from prefill.engine.llama.runtime import extra_buffer_types_safe

_default_params = bindings.llama_model_default_params


def _as_prefill_loads() -> "bindings.llama_model_params":
    params = _default_params()
    params.use_extra_bufts = extra_buffer_types_safe()
    return params


bindings.llama_model_default_params = _as_prefill_loads
