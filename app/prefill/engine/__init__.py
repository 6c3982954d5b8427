"""The llama.cpp runtime: load a GGUF, stream a chat, measure it. No Qt here."""
