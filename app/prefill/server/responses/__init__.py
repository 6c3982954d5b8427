"""OpenAI Responses: the parser, the replies and streams, the kept responses, the routes."""
