"""Search: by vectors, by words (bm25), and both fused; passages with file, page, score and text."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefill.documents.errors import CollectionNotFound
from prefill.documents.index import open_index
from prefill.documents.indexer import index_files
from prefill.documents.search import Searcher
from prefill.documents.vectors import load_sqlite_vec
from tests.documents.embedders import HashEmbedder, count_words
from tests.documents.pdf_writer import write_pdf


@pytest.fixture
def indexed(tmp_path: Path):  # noqa: ANN201
    d = tmp_path / "docs"
    d.mkdir()
    (d / "garden.md").write_text("# Garden\n\nTomatoes need sun and water every morning.\n\n"
                                 "## Pests\n\nSlugs eat lettuce at night.")
    (d / "kitchen.txt").write_text("Bake the bread at 220 degrees for thirty minutes.\n\nStore flour dry.")
    write_pdf(d / "manual.pdf", [["The pump manual."], ["Reset the pump by holding the red button."]])
    (d / "people.csv").write_text("name,role\nAda,engineer\nLin,gardener\n")
    conn = open_index(tmp_path / "i.sqlite3")
    index_files(conn, "home", [d], HashEmbedder(), count_words)
    return conn


def test_words_vectors_and_both_find_the_passage(indexed) -> None:  # noqa: ANN001
    s = Searcher(indexed)
    for mode in ("words", "vectors", "both"):
        [top, *_] = s.search("home", "how do I reset the pump button", HashEmbedder(), k=3, mode=mode)
        assert Path(top.file).name == "manual.pdf" and top.page == 2, mode
        assert top.text == "Reset the pump by holding the red button." and top.score > 0
    [hit] = s.search("home", "slugs", k=1, mode="words")
    assert hit.heading == "Garden > Pests" and Path(hit.file).name == "garden.md" and hit.page is None
    assert s.last_times.search_ms >= 0


def test_fusion_ranks_a_passage_both_find_first(indexed) -> None:  # noqa: ANN001
    s = Searcher(indexed)
    both = s.search("home", "bread degrees", HashEmbedder(), k=5, mode="both")
    assert Path(both[0].file).name == "kitchen.txt"
    # the best by meaning (1 of 1) and all the question's words, once each: each half near 1
    assert 0.8 < both[0].score <= 1.0
    assert [p.score for p in both] == sorted((p.score for p in both), reverse=True)
    rrf = s.search("home", "bread degrees", HashEmbedder(), k=5, mode="both", fusion="rrf")
    assert Path(rrf[0].file).name == "kitchen.txt"
    assert rrf[0].score == pytest.approx(2 / 3)  # first in each list: 1/(2 + 1) twice


def test_queries_that_would_break_fts_syntax(indexed) -> None:  # noqa: ANN001
    s = Searcher(indexed)
    for q in ['"', "AND OR NOT", "pump*", "(reset", "NEAR(a b)", "", "?!", 'x" OR 1=1 --']:
        s.search("home", q, HashEmbedder(), mode="both")
        s.search("home", q, mode="words")


def test_collections_and_models_are_checked(indexed) -> None:  # noqa: ANN001
    s = Searcher(indexed)
    with pytest.raises(CollectionNotFound, match="no document collection named 'nope'"):
        s.search("nope", "x", HashEmbedder())
    with pytest.raises(ValueError, match="indexed with test-hash-128, not other"):
        s.search("home", "x", HashEmbedder(128, "other"))
    with pytest.raises(ValueError, match="needs the embedding model"):
        s.search("home", "x", mode="vectors")


def test_the_numpy_matrix_follows_new_files(indexed, tmp_path: Path) -> None:  # noqa: ANN001
    s = Searcher(indexed, use_sqlite_vec=False)
    assert s.vectors.backend == "numpy" and s.vectors.why_numpy
    assert not s.search("home", "zebra stripes", HashEmbedder(), mode="vectors")[0].text.startswith("Zebra")
    extra = tmp_path / "more"
    extra.mkdir()
    (extra / "zoo.txt").write_text("Zebra stripes confuse flies.")
    index_files(indexed, "home", [extra], HashEmbedder(), count_words, prune=False)
    assert s.search("home", "zebra stripes", HashEmbedder(), mode="vectors")[0].text.startswith("Zebra")


def test_sqlite_vec_and_numpy_agree(indexed) -> None:  # noqa: ANN001
    why = load_sqlite_vec(indexed)
    if why:
        pytest.skip(f"sqlite-vec does not load here: {why}")
    a = Searcher(indexed, use_sqlite_vec=True)
    b = Searcher(indexed, use_sqlite_vec=False)
    assert a.vectors.backend == "sqlite-vec"
    q = "reset the pump"
    got_a = [(p.chunk_id, round(p.score, 4)) for p in a.search("home", q, HashEmbedder(), mode="vectors")]
    got_b = [(p.chunk_id, round(p.score, 4)) for p in b.search("home", q, HashEmbedder(), mode="vectors")]
    assert got_a == got_b


def test_a_query_with_no_words_is_near_nothing(indexed) -> None:  # noqa: ANN001
    # Its vector is all zeros: sqlite-vec's cosine distance is NULL there, numpy's similarity 0 for every passage.
    for use in (True, False):
        assert Searcher(indexed, use_sqlite_vec=use).search("home", "?!", HashEmbedder(), mode="vectors") == []


def test_words_of_one_collection_are_not_crowded_out_by_another(indexed, tmp_path: Path) -> None:  # noqa: ANN001
    other = tmp_path / "other"
    other.mkdir()
    for i in range(30):
        (other / f"pump{i}.txt").write_text("pump pump pump reset pump button pump")
    index_files(indexed, "other", [other], HashEmbedder(), count_words)
    s = Searcher(indexed)
    [hit] = s.search("home", "pump reset button", k=1, mode="words")
    assert Path(hit.file).name == "manual.pdf"
    assert {Path(p.file).parent.name for p in s.search("other", "pump", k=5, mode="words")} == {"other"}


def test_a_question_of_only_common_words_still_searches_them(indexed) -> None:  # noqa: ANN001
    [hit] = Searcher(indexed).search("home", "by the", k=1, mode="words")
    assert "by" in hit.text.split() or "the" in hit.text.lower().split()


def test_words_weight_zero_fuses_to_the_vector_order(indexed) -> None:  # noqa: ANN001
    s = Searcher(indexed)
    q = "how do I reset the pump button"
    vec = [p.chunk_id for p in s.search("home", q, HashEmbedder(), k=4, mode="vectors", pool=4)]
    fused = [p.chunk_id for p in s.search("home", q, HashEmbedder(), k=4, mode="both", pool=4, words_weight=0.0)]
    assert fused == vec



class _TwoWay:
    """Vectors that point one way for a text with "common" in it, the other way otherwise."""

    model_id, n_embd = "two-way", 2

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0] if "common" in t else [0.0, 1.0] for t in texts]


def test_the_first_by_words_is_not_buried_by_passages_both_lists_rank_fairly(tmp_path: Path) -> None:
    # Five passages both lists place 1st to 6th; one only words place first (a rare code), last by vectors.
    # With the paper's k = 60 the five outrank it and it falls out of the first five.
    d = tmp_path / "d"
    d.mkdir()
    for i in range(5):
        (d / f"m{i}.txt").write_text("common " + "filler " * i)
    (d / "x.txt").write_text("the part zq7 is here")
    for i in range(6):
        (d / f"other{i}.txt").write_text(f"nothing {i}")
    conn = open_index(tmp_path / "i.sqlite3")
    index_files(conn, "c", [d], _TwoWay(), count_words)
    found = Searcher(conn).search("c", "zq7 common", _TwoWay(), k=5, mode="both", fusion="rrf")
    assert "x.txt" in [Path(p.file).name for p in found]


class _Graded:
    """Cosines as a model gives them: "common" texts from 0.5 down, the rest near 0.1; the question at 1."""

    model_id, n_embd = "graded", 2

    def embed(self, texts: list[str]) -> list[list[float]]:
        out = []
        for t in texts:
            cos = 1.0 if t.startswith("zq7") else 0.5 - 0.05 * t.count("filler") if "common" in t else 0.1
            out.append([cos, (1 - cos * cos) ** 0.5])
        return out


def test_a_rare_code_by_words_outranks_passages_only_fairly_near_in_meaning(tmp_path: Path) -> None:
    # The same passages with graded cosines (the scores fusion weighs them; two-way vectors would make the
    # five identical to the question): the code's passage, far in meaning, is among the first five.
    d = tmp_path / "d"
    d.mkdir()
    for i in range(5):
        (d / f"m{i}.txt").write_text("common " + "filler " * i)
    (d / "x.txt").write_text("the part zq7 is here")
    for i in range(6):
        (d / f"other{i}.txt").write_text(f"nothing {i}")
    conn = open_index(tmp_path / "i.sqlite3")
    index_files(conn, "c", [d], _Graded(), count_words)
    found = Searcher(conn).search("c", "zq7 common", _Graded(), k=5, mode="both")
    assert "x.txt" in [Path(p.file).name for p in found]


class _Meaning:
    """The question and the answer point nearly the same way (cosine 0.8); every other text elsewhere."""

    model_id, n_embd = "meaning", 2

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0] if "gadget" in t else [0.8, 0.6] if "Hold the recessed" in t else [0.0, 1.0]
                for t in texts]


def test_a_common_word_of_a_question_in_other_words_does_not_outrank_the_best_by_meaning(tmp_path: Path) -> None:
    # Asked in other words than the answer's, the question shares one word ("start") with an unrelated
    # passage: words alone rank that passage first. Reciprocal rank counted it as much as the best by
    # meaning, and put it first; over the most the question's words could score it counts little.
    d = tmp_path / "d"
    d.mkdir()
    (d / "router.txt").write_text("Hold the recessed button on the back for ten seconds with a paperclip.")
    (d / "oven.txt").write_text("Start the oven early so it is hot.")
    for i in range(8):
        (d / f"other{i}.txt").write_text(f"nothing here {i}")
    conn = open_index(tmp_path / "i.sqlite3")
    index_files(conn, "c", [d], _Meaning(), count_words)
    s = Searcher(conn)
    q = "how do I bring the gadget to its factory state from the start"
    assert Path(s.search("c", q, k=1, mode="words")[0].file).name == "oven.txt"
    assert Path(s.search("c", q, _Meaning(), k=1, mode="both", fusion="rrf")[0].file).name == "oven.txt"
    [top, second] = s.search("c", q, _Meaning(), k=2, mode="both")
    assert Path(top.file).name == "router.txt" and Path(second.file).name == "oven.txt"
    assert top.score == pytest.approx(0.5)  # the best by meaning, no word of the question


def test_the_words_score_is_the_share_of_the_question_words_held_weighed_by_rarity(tmp_path: Path) -> None:
    # idf as Lucene's BM25 has it over the whole index (above 0 for a word in half the passages, where
    # FTS5's is 0); an accented word as FTS5 stores it, an underscore parting words as FTS5 does.
    import math

    d = tmp_path / "d"
    d.mkdir()
    (d / "a.txt").write_text("Café pump_valve here.")
    (d / "b.txt").write_text("The pump there.")
    conn = open_index(tmp_path / "i.sqlite3")
    index_files(conn, "c", [d], HashEmbedder(), count_words)
    s = Searcher(conn)
    rows = conn.execute("SELECT c.id, f.path FROM chunks c JOIN files f ON f.id = c.file_id")
    ids = {Path(f).name: i for i, f in rows}

    def idf(n: int) -> float:
        return math.log(1 + (2 - n + 0.5) / (n + 0.5))

    shares = s._word_shares("the CAFE pump zebra", [(ids["a.txt"], 1.0), (ids["b.txt"], 1.0)])
    most = idf(1) + idf(2) + idf(0)  # cafe, pump, zebra ("the" left out)
    assert shares[ids["a.txt"]] == pytest.approx((idf(1) + idf(2)) / most)
    assert shares[ids["b.txt"]] == pytest.approx(idf(2) / most) and idf(2) > 0
    assert s._word_shares("valve", [(ids["a.txt"], 1.0)])[ids["a.txt"]] == pytest.approx(1.0)


def test_a_word_in_half_a_small_collection_still_counts(tmp_path: Path) -> None:
    # Two passages: FTS5's idf for "barn" (in one of two) is 0, so its bm25 said nothing; the share still
    # does, and the passage holding the question's words comes first where meaning is a near tie.
    d = tmp_path / "d"
    d.mkdir()
    (d / "owls.md").write_text("# Owls\n\nThe barn owl hunts mice at night over open fields.\n")
    (d / "tea.txt").write_text("Green tea is steamed or pan-fired soon after picking.\n")
    conn = open_index(tmp_path / "i.sqlite3")
    index_files(conn, "c", [d], HashEmbedder(), count_words)
    s = Searcher(conn)
    q = "what do barn owls hunt"
    assert [Path(p.file).name for p in s.search("c", q, HashEmbedder(), k=2, mode="vectors")][0] == "tea.txt"
    assert Path(s.search("c", q, HashEmbedder(), k=1, mode="both")[0].file).name == "owls.md"
