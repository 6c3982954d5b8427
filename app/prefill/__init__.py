"""Prefill: a desktop chat app for local LLMs that shows the engine at work."""

__version__ = "0.1.0"
