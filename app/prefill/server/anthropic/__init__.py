"""Anthropic Messages: the parser, the replies and streams, the errors, the routes."""
