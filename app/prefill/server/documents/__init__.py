"""Documents in the server: a request names a collection (`field.py`, the `documents` field every dialect
reads), the passages it finds go in with the question or through the `search_documents` tool the server
runs itself (`turn.py`), found by `search.py` (the collection looked at again for changed files, searched by
the pool's embedding model, reranked by its reranker) in the index `library.py` keeps on a thread of its own."""
