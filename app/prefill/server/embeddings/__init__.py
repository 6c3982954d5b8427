"""Embeddings and reranking: `core.py` (no dialect: `embed_inputs`, `rerank_documents`), `parse.py` (the
door for the bodies), `routes.py` (POST /v1/embeddings, POST /v1/rerank)."""
