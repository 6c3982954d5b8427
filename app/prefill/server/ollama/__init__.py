"""Ollama's API: the parser, the NDJSON replies, the catalogue's views (tags, ps, show), the routes."""
