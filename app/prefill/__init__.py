"""Prefill: a desktop chat app for local LLMs that shows the engine at work."""

__version__ = "0.1.0"

from prefill.engine.cuda_libs import install_import_hook as _install_cuda_import_hook

# A CUDA build of llama.cpp links libcudart/libcublas from the venv's NVIDIA wheels, which the loader
# cannot find by itself: they are loaded just before the first `import llama_cpp`, wherever it is.
_install_cuda_import_hook()
