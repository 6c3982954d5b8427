"""Text from a model file, an error or the model is plain text in every label, box and tooltip.

The main test loads a real model whose ``general.name`` is an ``<img src=...>`` tag (as in
issue 9) from a file whose name is markup too, fails to load another, chats, opens the
Models page, and then walks every widget of the window.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from PySide6 import QtGui
from PySide6.QtCore import QAbstractItemModel, QAbstractListModel, QModelIndex, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QLabel,
    QMessageBox,
    QTextEdit,
    QWidget,
)

from prefill.bench.tiny_model import write_tiny_llama
from prefill.ui.widgets.plain_text import message_box, plain_label, tooltip
from tests.ui.conftest import load, send, small_settings

# The name is <img src="/dev/zero">: a label that regressed to rich text would then read
# /dev/zero until memory runs out and kill the test run. /dev/null/zero cannot be opened, so a
# regression fails the assertions instead.
NAME = '<img src="/dev/null/zero"> <b>name</b>'
FILE = "<b>bold<img src=zero>.gguf"
BROKEN = "<i>broken<img src=zero2>.gguf"
_TOOLTIP_WRAP = re.compile(r'^<p style="white-space:pre-wrap">(.*)</p>$', re.DOTALL)


def _tooltip_problem(where: str, tip: str) -> str | None:
    """A tooltip is fine when Qt shows it as plain text, or when it is `tooltip()`'s escape."""
    if not tip or not QtGui.Qt.mightBeRichText(tip):
        return None
    wrapped = _TOOLTIP_WRAP.match(tip)
    if wrapped and "<" not in wrapped.group(1):
        return None
    return f"{where}: rich-text tooltip {tip!r}"


def _indexes(model: QAbstractItemModel, parent: QModelIndex = QModelIndex()) -> Iterator[QModelIndex]:  # noqa: B008
    columns = 1 if isinstance(model, QAbstractListModel) else model.columnCount(parent)
    for row in range(model.rowCount(parent)):
        for col in range(columns):
            index = model.index(row, col, parent)
            yield index
            if col == 0:
                yield from _indexes(model, index)


def _document_problems(where: str, edit: QTextEdit) -> Iterator[str]:
    block = edit.document().begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fmt = it.fragment().charFormat()
            if fmt.isImageFormat():
                yield f"{where}: an image in the document"
            if (problem := _tooltip_problem(f"{where} text", fmt.toolTip())) is not None:
                yield problem
            it += 1
        block = block.next()


def text_problems(root: QWidget) -> list[str]:
    """Every place under ``root`` where Qt could read text as rich text it does not own."""
    problems: list[str] = []
    for w in [root, *root.findChildren(QWidget)]:
        where = f"{type(w).__name__}#{w.objectName()}"
        if isinstance(w, QLabel):
            if w.textFormat() == Qt.TextFormat.AutoText:
                problems.append(f"{where}: label guesses its format ({w.text()!r})")
            elif w.textFormat() == Qt.TextFormat.RichText and ("zero" in w.text() or "<img" in w.text()):
                problems.append(f"{where}: rich-text label shows outside text ({w.text()!r})")
        if isinstance(w, QMessageBox) and w.textFormat() != Qt.TextFormat.PlainText:
            problems.append(f"{where}: message box guesses its format")
        if (problem := _tooltip_problem(where, w.toolTip())) is not None:
            problems.append(problem)
        if isinstance(w, QAbstractItemView) and w.model() is not None:
            for index in _indexes(w.model()):
                tip = index.data(Qt.ItemDataRole.ToolTipRole)
                if isinstance(tip, str) and (problem := _tooltip_problem(f"{where} item", tip)):
                    problems.append(problem)
        if isinstance(w, QTextEdit):
            problems += _document_problems(where, w)
    return problems


def _all_text(root: QWidget) -> str:
    """What the window shows, tooltips included, to check the hostile text did reach it."""
    parts = [lab.text() for lab in root.findChildren(QLabel)]
    for w in root.findChildren(QWidget):
        parts.append(html.unescape(w.toolTip()))
        if isinstance(w, QAbstractItemView) and w.model() is not None:
            for index in _indexes(w.model()):
                for role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
                    value = index.data(role)
                    parts.append(html.unescape(value) if isinstance(value, str) else "")
    return "\n".join(parts)


def test_hostile_model_text_is_plain_text_everywhere(app, qtbot, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty Hugging Face cache
    models = tmp_path / "models"
    models.mkdir()
    model = write_tiny_llama(models / FILE, name=NAME)
    broken = models / BROKEN
    broken.write_bytes(b"GGUF" + b"\x03\x00\x00\x00" + b"\xff" * 64)
    base = small_settings(max_tokens=8)
    w = app.open(replace(base, ui=replace(base.ui, models_dir=str(models))))

    w.load_model(str(broken))  # an error that quotes the file name: notice and sidebar
    qtbot.waitUntil(lambda: "could not be loaded" in w.notice.text(), timeout=30_000)
    load(qtbot, w, model)
    send(qtbot, w, f"{NAME} hello")  # the chat's title, the user's message, the model's answer
    qtbot.waitUntil(lambda: w.conversations.list.count() > 0, timeout=10_000)
    w.open_models()
    panel = w.models_page.library_panel
    qtbot.waitUntil(lambda: any(m.path == model for m in panel.models), timeout=30_000)
    w.show_notice(f"{w.notice.text()} / {NAME}")

    shown = _all_text(w)
    assert NAME in w.sidebar.labels["model"].toolTip().replace("&lt;", "<").replace("&gt;", ">")  # the raw name
    assert "bold" in w.sidebar.text("model") and "bold" in w.load_state.text()  # the name read from the file
    assert FILE in shown and "broken<img src=zero2>" in shown  # the hostile text did reach the window
    assert text_problems(w) == []


def test_tooltip_shows_text_as_written(qapp) -> None:
    from PySide6.QtGui import QTextDocument

    for text in (NAME, "a < b\n  & <b>c</b>", "&lt;img&gt;"):
        doc = QTextDocument()
        doc.setHtml(tooltip(text))
        assert doc.toPlainText() == text
    assert tooltip("") == ""


def test_labels_and_boxes_are_plain(qapp) -> None:
    label = plain_label(NAME)
    assert label.textFormat() == Qt.TextFormat.PlainText and label.text() == NAME
    box = message_box(None, "t", NAME)
    assert box.textFormat() == Qt.TextFormat.PlainText and box.text() == NAME


def test_labels_and_message_boxes_are_made_in_one_place() -> None:
    """No module but plain_text.py makes a QLabel or a static QMessageBox, which guess the format."""
    import prefill.ui

    guessing = re.compile(r"\bQLabel\(|QMessageBox\.(?:question|information|warning|critical|about)\(|"
                          r"\.addRow\(\s*[\"f]")
    ui = Path(prefill.ui.__file__).parent
    found = [f"{path.name}:{n}" for path in sorted(ui.glob("*.py")) if path.name != "plain_text.py"
             for n, line in enumerate(path.read_text().splitlines(), 1) if guessing.search(line)]
    assert found == []
