"""An OpenAI-compatible HTTP server over the batched scheduler (Starlette on uvicorn). No Qt."""
