"""The llama.cpp runtime: load a GGUF, stream a chat, measure it. No Qt here."""

from prefill.engine.cuda_libs import preload as _preload_cuda_libraries

# Before any module of the engine imports llama_cpp (seven do, at their top): a CUDA build links
# libcudart/libcublas from the venv's nvidia wheels, which the loader would not find on its own.
_preload_cuda_libraries()
