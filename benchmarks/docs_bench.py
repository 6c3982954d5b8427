"""Documents: retrieval quality, indexing speed, search latency and memory.

  quality      the project's corpus (tests/documents/corpus.py: 38 documents in seven formats, 132 questions,
               each with the sentence that answers it) indexed, then each question searched by vectors
               alone, words alone (FTS5 bm25) and both fused (search.py: each list's scores on a scale of
               0 to 1, averaged): recall@5 (the answering sentence, in its file and on its page, among the
               first five passages) and MRR over the first 10, for all questions and for each group
               (`groups`: "place", the 96 that name their place's rare name; "paraphrase", 24 asked in
               other words; "exact", 12 asked by a name, code or number); both_words_0.5 weighs the words'
               score half; both_rrf and both_rrf_k60 fuse by reciprocal rank (search's fusion="rrf", the
               constant at RRF_K, 2, and at 60, the paper's); both_rerank takes the
               fused search's first 20 (search.py's candidates, as the server does) and reorders them by
               the reranker's scores (`rerank_ms`: its time a question, p50 and p95). The reranker is a GGUF
               given with --reranker, or by default the bundled MiniLM converted with a made-up, seeded
               classification head (`reranker` in the JSON says which): its column then shows the cost
               of reranking, not a reranker's quality.
  index        the corpus's indexing: files, pages and passages a second (reading, cutting, embedding, storing).
  big_pdf      a generated PDF of --pages pages (about 250 words a page) indexed in a child process: its pages
               and passages a second, and that process's peak resident memory (VmHWM, reset first) against
               its memory before indexing (model loaded, modules imported). Linux only.
  latency      --chunks synthetic passages (80 words drawn by Zipf's law from search.STOPWORDS, the most
               frequent, then 20,000 made-up words; random unit vectors of 384 numbers) in a fresh index; 60
               questions (4 words drawn the same way, 3 of middling frequency) each way: p50 and p95 in ms, the
               query's embedding left out (`plus_embed_ms`, measured on the embedder), and the first vector
               search's cold load of the matrix.

The embedding model is the bundled all-MiniLM-L6-v2 (engine/embed) where it loads, else a deterministic
bag-of-words hash (`embedder` in the JSON says which; quality figures with the hash say little).
Rerun: python benchmarks/docs_bench.py [--json] [--pages 2000] [--chunks 10000,100000] [--embedder auto|hash]
       [--big-embedder same|hash] [--chunk-tokens 200] [--sqlite-vec] [--reranker made-up|none|PATH.gguf]
With --json the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "app"))
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from prefill.documents.chunking import ChunkSizes  # noqa: E402
from prefill.documents.index import ensure_collection, open_index, set_model  # noqa: E402
from prefill.documents.indexer import index_files  # noqa: E402
from prefill.documents.search import STOPWORDS, Searcher  # noqa: E402
from tests.documents.corpus import write_corpus  # noqa: E402
from tests.documents.embedders import HashEmbedder, count_words  # noqa: E402
from tests.documents.pdf_writer import write_pdf  # noqa: E402


class ModelEmbedder:
    """engine/embed's EmbeddingModel as the documents package's Embedder."""

    def __init__(self, model):  # noqa: ANN001
        self.model = model
        self.model_id = f"{model.name}"
        self.n_embd = int(model.n_embd)

    def embed(self, texts: list[str]) -> list[list[float]]:
        return self.model.embed(texts, truncate=True)  # rows of a float32 array, normalised

    def count_tokens(self, text: str) -> int:
        return self.model.count_tokens([text])[0]


def make_embedder(choice: str):  # noqa: ANN201
    """(embedder, count_tokens, what it is)."""
    if choice != "hash":
        try:
            from prefill.engine.embed.bundled import bundled_embed_path
            from prefill.engine.embed.model import EmbeddingModel

            path = bundled_embed_path()
            if path is not None:
                e = ModelEmbedder(EmbeddingModel.load(path))
                return e, e.count_tokens, f"bundled all-MiniLM-L6-v2 ({path.name})"
            why = "the bundled embedding model is not installed"
        except ImportError as exc:
            why = f"engine/embed is not here ({exc})"
        if choice == "bundled":
            raise SystemExit(why)
    e = HashEmbedder(384, "hash-384")
    return e, count_words, "hash (bag of words; no model)"


def _norm(s: str) -> str:
    return " ".join(s.split())


def make_reranker(choice: str, folder: Path):  # noqa: ANN201
    """(an EmbeddingModel that reranks, what it is), or (None, why not)."""
    if choice == "none":
        return None, "none"
    try:
        from prefill.engine.embed.model import EmbeddingModel
    except ImportError as exc:
        return None, f"engine/embed is not here ({exc})"
    if choice != "made-up":
        return EmbeddingModel.load(Path(choice)), Path(choice).name
    from prefill.engine.embed.bert_gguf import RankHead, convert_bert
    from prefill.engine.embed.bundled import bundled_embed_source

    source = bundled_embed_source()
    if source is None:
        return None, "the bundled embedding model is not installed"
    rng = np.random.default_rng(7)
    head = RankHead(rng.normal(0, 384 ** -0.5, (1, 384)).astype(np.float32), np.array([0.25], dtype=np.float32))
    path = convert_bert(source, folder / "made-up-rank.gguf", "made-up-rank", rank_head=head)
    return EmbeddingModel.load(path), "bundled MiniLM with a made-up classification head (cost only)"


def _rank_of(q, found: list) -> int | None:  # noqa: ANN001
    return next((i + 1 for i, p in enumerate(found) if Path(p.file).name == q.file
                 and _norm(q.passage) in _norm(p.text) and (q.page is None or p.page == q.page)), None)


def _scores(ranks: list[int | None]) -> dict:
    """recall@5 and MRR (over the first 10) of these ranks (None: not among the first 10)."""
    n = max(len(ranks), 1)
    return {"n": len(ranks), "recall_at_5": round(sum(r is not None and r <= 5 for r in ranks) / n, 3),
            "mrr": round(sum(1.0 / r for r in ranks if r) / n, 3)}


def quality(embedder, count, folder: Path, chunk_tokens: int = 200, reranker=None) -> dict:  # noqa: ANN001
    questions = write_corpus(folder / "corpus")
    conn = open_index(folder / "q.sqlite3")
    t0 = time.perf_counter()
    sizes = ChunkSizes(chunk_tokens, chunk_tokens // 5)
    report = index_files(conn, "corpus", [folder / "corpus"], embedder, count, sizes=sizes)
    elapsed = time.perf_counter() - t0
    s = Searcher(conn)
    out: dict = {"documents": len(report.outcomes), "questions": len(questions),
                 "failed": [o.problem for o in report.outcomes if o.state == "failed"],
                 "index": {"seconds": round(elapsed, 2), "pages": report.pages, "chunks": report.chunks,
                           "files_per_s": round(len(report.outcomes) / elapsed, 1),
                           "chunks_per_s": round(report.chunks / elapsed, 1)}}
    runs = [("vectors", "vectors", 1.0, 2, "scores"), ("words", "words", 1.0, 2, "scores"),
            ("both", "both", 1.0, 2, "scores"), ("both_words_0.5", "both", 0.5, 2, "scores"),
            ("both_rrf", "both", 1.0, 2, "rrf"), ("both_rrf_k60", "both", 1.0, 60, "rrf")]
    for name, mode, weight, rrf_k, fusion in runs:
        ranks = [_rank_of(q, s.search("corpus", q.question, embedder, k=10, mode=mode, words_weight=weight,
                                      rrf_k=rrf_k, fusion=fusion)) for q in questions]
        out[name] = {**_scores(ranks), "missed": [q.question for q, r in zip(questions, ranks, strict=True)
                                                  if r is None or r > 5][:5],
                     "groups": {g: _scores([r for q, r in zip(questions, ranks, strict=True) if q.group == g])
                                for g in dict.fromkeys(q.group for q in questions)}}
    if reranker is not None:
        hits5, rr, misses, times = 0, 0.0, [], []
        for q in questions:
            found = s.search("corpus", q.question, embedder, k=20, mode="both")
            t = time.perf_counter()
            scores = reranker.rerank(q.question, [p.text for p in found], truncate=True)
            times.append((time.perf_counter() - t) * 1000)
            order = sorted(range(len(found)), key=lambda i: (-scores[i], i))
            rank = _rank_of(q, [found[i] for i in order][:10])
            hits5 += rank is not None and rank <= 5
            rr += 1.0 / rank if rank else 0.0
            if rank is None or rank > 5:
                misses.append(q.question)
        times.sort()
        out["both_rerank"] = {"recall_at_5": round(hits5 / len(questions), 3), "mrr": round(rr / len(questions), 3),
                              "missed": misses[:5], "rerank_ms": {"p50": round(statistics.median(times), 1),
                                                                  "p95": round(times[int(0.95 * len(times)) - 1], 1)}}
    return out


def _vm(field: str) -> int:
    """A figure of /proc/self/status, in KiB (VmRSS now, VmHWM the peak since the last reset)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def big_pdf_child(pdf: Path, choice: str) -> None:
    """Index `pdf` into a fresh index and print one JSON line (run in its own process for its peak memory)."""
    embedder, count, what = make_embedder(choice)
    # ru_maxrss would carry the parent's peak over fork and exec: Linux's high-water mark is reset instead
    Path("/proc/self/clear_refs").write_text("5")
    before = _vm("VmRSS")
    with tempfile.TemporaryDirectory() as d:
        conn = open_index(Path(d) / "big.sqlite3")
        t0 = time.perf_counter()
        report = index_files(conn, "big", [pdf], embedder, count)
        elapsed = time.perf_counter() - t0
    peak = _vm("VmHWM")
    o = report.outcomes[0]
    print(json.dumps({"embedder": what, "state": o.state, "problem": o.problem, "pages": o.pages, "chunks": o.chunks,
                      "seconds": round(elapsed, 1), "pages_per_s": round(o.pages / elapsed, 1),
                      "chunks_per_s": round(o.chunks / elapsed, 1), "rss_before_mb": round(before / 1024),
                      "rss_peak_mb": round(peak / 1024), "rss_added_mb": round((peak - before) / 1024),
                      "pdf_mb": round(pdf.stat().st_size / 2**20, 1)}))


def big_pdf(pages: int, choice: str, folder: Path) -> dict:
    rnd = random.Random(7)
    words = [w for w in re.findall(r"[a-z]+", (ROOT / "ARCHITECTURE.md").read_text("utf-8").lower()) if len(w) > 2]
    pdf = folder / "big.pdf"
    write_pdf(pdf, [[" ".join(rnd.choice(words) for _ in range(60)) + "." for _ in range(4)] for _ in range(pages)])
    run = subprocess.run([sys.executable, __file__, "--big-pdf-child", str(pdf), "--embedder", choice],
                         capture_output=True, text=True, check=True)
    return json.loads(run.stdout.strip().splitlines()[-1])


def latency(n: int, n_embd: int, folder: Path, embed_ms: float, use_sqlite_vec: bool = False) -> dict:
    rnd = np.random.default_rng(3)
    # The most frequent ranks are the words every passage has (search's STOPWORDS), as in real text.
    vocab = sorted(STOPWORDS) + [f"w{i}" for i in range(20000)]
    ranks = np.arange(1, len(vocab) + 1)
    p = (1 / ranks) / (1 / ranks).sum()
    conn = open_index(folder / f"lat{n}.sqlite3")
    c = set_model(conn, ensure_collection(conn, "lat"), "synthetic", n_embd)
    t0 = time.perf_counter()
    conn.execute("BEGIN")
    per_file = 1000
    for f in range(0, n, per_file):
        cur = conn.execute("INSERT INTO files(collection_id, path, sha256, size, mtime, state, indexed_at) "
                           "VALUES (?, ?, '', 0, 0, 'indexed', 0)", (c.id, f"/synthetic/{f}.txt"))
        fid = cur.lastrowid
        m = min(per_file, n - f)
        idx = rnd.choice(len(vocab), size=(m, 80), p=p)
        vecs = rnd.standard_normal((m, n_embd)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        for j in range(m):
            text = " ".join(vocab[k] for k in idx[j])
            cid = conn.execute("INSERT INTO chunks(file_id, seq, page, start, end, heading, tokens, text) "
                               "VALUES (?, ?, NULL, 0, ?, '', 80, ?)", (fid, j, len(text), text)).lastrowid
            conn.execute("INSERT INTO vectors(chunk_id, embedding) VALUES (?, ?)", (cid, vecs[j].tobytes()))
    conn.execute("UPDATE collections SET generation = generation + 1 WHERE id = ?", (c.id,))
    conn.execute("COMMIT")
    build = time.perf_counter() - t0

    class Fixed:
        model_id, n_embd_ = "synthetic", n_embd

        def __init__(self) -> None:
            self.n_embd = n_embd

        def embed(self, texts: list[str]) -> list[list[float]]:
            v = rnd.standard_normal(n_embd)
            return [list(v / np.linalg.norm(v))]

    fixed = Fixed()
    s = Searcher(conn, use_sqlite_vec)
    t = time.perf_counter()
    s.search("lat", "w1", fixed, k=5, mode="vectors")
    cold = (time.perf_counter() - t) * 1000
    out: dict = {"chunks": n, "build_s": round(build, 1), "vector_backend": s.vectors.backend,
                 "first_vector_search_ms": round(cold, 1)}
    for mode in ("vectors", "words", "both"):
        times = []
        for _ in range(60):
            # a question: a few common words and three content words of middling frequency
            q = " ".join([*(vocab[int(k)] for k in rnd.choice(len(vocab), size=4, p=p)),
                          *(f"w{int(k)}" for k in rnd.integers(50, 5000, size=3))])
            s.search("lat", q, fixed, k=5, mode=mode)
            times.append(s.last_times.search_ms)
        times.sort()
        out[mode] = {"p50_ms": round(statistics.median(times), 1),
                     "p95_ms": round(times[int(0.95 * len(times)) - 1], 1),
                     "plus_embed_ms": round(embed_ms, 1) if mode != "words" else 0.0}
    conn.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--pages", type=int, default=2000)
    ap.add_argument("--chunks", default="10000,100000")
    ap.add_argument("--embedder", choices=["auto", "bundled", "hash"], default="auto")
    ap.add_argument("--sqlite-vec", action="store_true", help="search vectors with sqlite-vec (where it loads)")
    ap.add_argument("--chunk-tokens", type=int, default=200, help="passage size for the quality run (overlap: a fifth)")
    ap.add_argument("--big-embedder", choices=["same", "hash"], default="same",
                    help="the big PDF's embedder: the same, or the hash (reading, cutting, storing)")
    ap.add_argument("--reranker", default="made-up", metavar="made-up|none|PATH",
                    help="the both_rerank column's reranking GGUF (default: MiniLM with a made-up head: cost only)")
    ap.add_argument("--big-pdf-child", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.big_pdf_child:
        big_pdf_child(a.big_pdf_child, a.embedder)
        return
    embedder, count, what = make_embedder(a.embedder)
    result: dict = {"embedder": what, "cores": os.cpu_count(), "vector_backend": ""}
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        reranker, result["reranker"] = make_reranker(a.reranker, folder)
        result["quality"] = quality(embedder, count, folder, a.chunk_tokens, reranker)
        t = time.perf_counter()
        for _ in range(10):
            embedder.embed(["how many solar panels power the pumps"])
        embed_ms = (time.perf_counter() - t) * 100
        result["query_embed_ms"] = round(embed_ms, 1)
        v = Searcher(open_index(folder / "q.sqlite3"), a.sqlite_vec).vectors
        result["vector_backend"] = v.backend + (f" ({v.why_numpy})" if v.why_numpy else "")
        if a.pages:
            same = "hash" if what.startswith("hash") else a.embedder
            result["big_pdf"] = big_pdf(a.pages, same if a.big_embedder == "same" else "hash", folder)
        result["latency"] = [latency(int(n), int(embedder.n_embd), folder, embed_ms, a.sqlite_vec)
                             for n in a.chunks.split(",") if n]
    if a.json:
        print(json.dumps(result))
    else:
        print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
