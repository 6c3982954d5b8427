"""OpenAI's Chat Completions and text completions: the parser, the replies, the streams, the routes."""
