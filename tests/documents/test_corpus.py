"""The corpus the benchmark measures: its size, its formats, and every question's passage readable where it says."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from prefill.documents.index import open_index
from prefill.documents.indexer import index_files
from prefill.documents.search import Searcher
from tests.documents.corpus import write_corpus
from tests.documents.embedders import HashEmbedder, count_words


def test_corpus_is_mixed_and_every_passage_is_found_in_its_file(tmp_path: Path) -> None:
    questions = write_corpus(tmp_path / "c")
    files = sorted((tmp_path / "c").iterdir())
    assert len(files) >= 30 and len(questions) >= 60
    assert set(Counter(f.suffix for f in files)) == {".pdf", ".docx", ".html", ".md", ".txt", ".csv", ".py"}
    conn = open_index(tmp_path / "i.sqlite3")
    report = index_files(conn, "c", [tmp_path / "c"], HashEmbedder(), count_words)
    assert report.count("indexed") == len(files) and report.count("failed") == 0
    s = Searcher(conn)
    for q in questions:
        found = s.search("c", q.passage, k=3, mode="words")
        assert any(Path(p.file).name == q.file and " ".join(q.passage.split()) in " ".join(p.text.split())
                   and p.page == q.page for p in found), q


def test_paraphrase_questions_share_no_word_with_their_sentence_and_exact_ones_do(tmp_path: Path) -> None:
    # The questions a retrieval by meaning is for: only the commonest words (search.STOPWORDS) in common with
    # the answering sentence, even by a word's first five letters ("rinse" and "rinsed"); and the questions
    # only words find: a name, a code or a number of the sentence, found nowhere else in the corpus.
    import re

    from prefill.documents.search import STOPWORDS

    def stems(text: str) -> set[str]:
        return {w.lower()[:5] for w in re.findall(r"\w+", text) if w.lower() not in STOPWORDS}

    questions = write_corpus(tmp_path / "c")
    groups = Counter(q.group for q in questions)
    assert groups["paraphrase"] >= 24 and groups["exact"] >= 12 and groups["place"] == 96
    for q in questions:
        if q.group == "paraphrase":
            assert not stems(q.question) & stems(q.passage), q
    texts = [q.passage for q in questions]
    for q in questions:
        if q.group == "exact":
            shared = stems(q.question) & stems(q.passage)
            assert any(sum(s in stems(t) for t in texts) == 1 for s in shared), q
