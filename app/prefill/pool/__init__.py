"""The model pool: several models resident at once, loaded on demand, without Qt.

`pool.py` (`ModelPool`: acquire, load, unload, pin, the least-recently-used eviction under a
memory budget and a count, the idle TTL), `catalogue.py` (`ModelEntry`: what may be loaded, and
the guard's verdict on each file), `memory.py` (what a model takes: estimated before its load,
llama.cpp's figures after), `chat_model.py` (a chat model: its `BatchScheduler`, `ModelChat` and
projector, loaded with its own settings), `errors.py`. The server and, next, the session ask it.
"""
