"""Run at the start of every Python child of a fast-tier test (this folder is on its PYTHONPATH):
llama.cpp refuses to start in it (llama_guard.py)."""

import os

if os.environ.get("PREFILL_FAST_TIER") == "1":
    import llama_guard

    llama_guard.install()
