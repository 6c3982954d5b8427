"""Remote engines: chats served by an OpenAI-compatible endpoint instead of a local model. No Qt."""
