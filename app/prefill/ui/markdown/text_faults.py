"""Hostile text and what a user sees of it: the text part of the fault battery (issue 9).

:data:`HOSTILE_MARKDOWN` builds, at a given size in characters, each answer that
used to hang or crash the markdown renderer (nested quotes and lists, long runs of
emphasis characters, backticks and brackets); :data:`HOSTILE_LABELS` holds text
that Qt's rich-text guess would turn into markup. :func:`fault_battery` shows each
one the way the app does (an answer in a message's document, a name in a label, a
link's target before it opens) and returns one JSON-able record per input;
:func:`fault_battery_lines` gives them as JSON lines.
``benchmarks/markdown_hostile_bench.py --growth`` times the markdown at several sizes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import QApplication, QWidget

from prefill.ui.markdown.fold import SHOWN_COST
from prefill.ui.markdown.link_guard import confirm_box, shows_its_target
from prefill.ui.markdown.stream import MarkdownStream
from prefill.ui.widgets.plain_text import plain_label, tooltip


def _fill(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def _staircase(line: Callable[[int], str], size: int) -> str:
    """Lines 1, 2, 3... levels deep until ``size`` characters."""
    lines, total, k = [], 0, 1
    while total < size:
        lines.append(line(k))
        total += len(lines[-1]) + 1
        k += 1
    return "\n".join(lines)[:size]


HOSTILE_MARKDOWN: dict[str, Callable[[int], str]] = {
    "quotes_one_line": lambda n: _fill(">", n - 2) + " x",
    "quotes_staircase": lambda n: _staircase(lambda k: ">" * k + " x", n),
    "lists_staircase": lambda n: _staircase(lambda k: "  " * k + "- x", n),
    "lists_one_line": lambda n: _fill("- ", n),
    "emphasis_run": lambda n: _fill("***a ", n),
    "emphasis_mixed": lambda n: _fill("*a _b **c __d ~~e ", n),
    "stars_rule": lambda n: _fill("*", n),
    "stars_in_text": lambda n: "x" + _fill("*", n - 1),
    "underscores_in_text": lambda n: "x" + _fill("_", n - 1),
    "underscore_words": lambda n: _fill("_a ", n),
    "tildes": lambda n: _fill("~~a ", n),
    "backticks_in_text": lambda n: "x" + _fill("`", n - 1),
    "backtick_runs": lambda n: _fill("`` `a ", n),
    "brackets_open": lambda n: _fill("[", n),
    "brackets_link_openers": lambda n: _fill("[a](", n),
    "brackets_nested": lambda n: _fill("[", n // 2) + _fill("]", n - n // 2),
    "autolink_openers": lambda n: _fill("<http:", n),
    "heading_spaces": lambda n: "# " + _fill(" ", n - 3) + "x",
    "table_wide": lambda n: "a|b\n" + _fill("|-", n // 2) + "\n" + _fill("|\n", n // 2),
    "html_img": lambda n: _fill('<img src="/dev/zero"> ', n),
}

HOSTILE_LABELS: dict[str, str] = {
    "img_dev_zero": '<img src="/dev/zero">',
    "bold_tag": "<b>bold?</b> name",
    "entity": "&lt;img&gt; &amp; co",
    "link_tag": '<a href="file:///etc/passwd">click</a>',
}

HOSTILE_LINKS: dict[str, tuple[str, str]] = {  # name: (answer, the target clicked)
    "label_hides_target": ("[the docs](https://evil.example/login)", "https://evil.example/login"),
    "label_is_other_url": ("[https://good.example](https://evil.example/)", "https://evil.example/"),
    "bare_url": ("https://good.example/page", "https://good.example/page"),
}


def _app() -> QApplication:
    app = QApplication.instance()
    return app if isinstance(app, QApplication) else QApplication(["prefill-fault-battery"])


def show_answer(text: str, budget: int | None = SHOWN_COST) -> tuple[QTextDocument, MarkdownStream, float]:
    """``text`` rendered as a finished answer and laid out; the render took ``ms``.

    ``budget``: as a message folds (``fold.py``); None renders all of it (to time the renderer).
    """
    document = QTextDocument()
    stream = MarkdownStream(document, budget=budget)
    start = time.perf_counter()
    stream.set_text(text)
    document.documentLayout().documentSize()
    return document, stream, (time.perf_counter() - start) * 1000


def _images(document: QTextDocument) -> int:
    count, block = 0, document.begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            count += it.fragment().charFormat().isImageFormat()
            it += 1
        block = block.next()
    return count


def _markdown_records(size: int) -> Iterator[dict[str, Any]]:
    for name, build in HOSTILE_MARKDOWN.items():
        text = build(size)
        document, stream, ms = show_answer(text)
        shown = document.toPlainText()
        yield {"fault": f"markdown:{name}", "chars": len(text), "render_ms": round(ms, 1),
               "plain_fallback": stream.plain, "images": _images(document),
               "shows": shown[:60], "shown_chars": len(shown)}


def _label_records() -> Iterator[dict[str, Any]]:
    for name, text in HOSTILE_LABELS.items():
        label = plain_label(text)
        tip = tooltip(text)
        tip_doc = QTextDocument()
        tip_doc.setHtml(tip)  # what the tooltip shows
        yield {"fault": f"label:{name}", "text": text,
               "format": "PlainText" if label.textFormat() == Qt.TextFormat.PlainText else "guessed",
               "shows": label.text(), "tooltip_shows": tip_doc.toPlainText()}


def _link_records() -> Iterator[dict[str, Any]]:
    parent = QWidget()
    for name, (source, target) in HOSTILE_LINKS.items():
        document, _, _ = show_answer(source)
        url = QUrl(target)
        asks = not shows_its_target(document, url)
        yield {"fault": f"link:{name}", "source": source, "shows": document.toPlainText(),
               "asks_before_opening": asks,
               "question": confirm_box(parent, url).text() if asks else ""}


def fault_battery(size: int = 40_000) -> list[dict[str, Any]]:
    """What the user sees of each hostile text: one JSON-able record per input.

    Args:
        size: Characters of each hostile markdown answer.
    """
    _app()
    return [*_markdown_records(size), *_label_records(), *_link_records()]


def fault_battery_lines(size: int = 40_000) -> Iterator[str]:
    """:func:`fault_battery` as JSON lines, one per hostile input."""
    for record in fault_battery(size):
        yield json.dumps(record, ensure_ascii=False)
