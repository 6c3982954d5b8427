"""One message in the chat: markdown text, its figures, and its actions.

A question stands in a soft bubble at the right of the chat's column, as wide as its words need (up to
most of the column); an answer is plain text on the page, with no box around it; a note is quiet, muted
words under a thin rule (the chat's style sheet, ``styles/chat.py``, draws each by its object name). No
title announces who speaks: the bubble says it (a screen reader hears "You: message" from the text's
name); a small muted label names a note and a row folded into a summary.

Under the text, a footer row: the pager (‹ 1 / 2 ›) of an answer's versions or an edited question's,
Retry on a question left unanswered, and the actions as line icons with tooltips (Copy, Edit,
Regenerate, Branch, Delete); an answer's figures stand at its right ("42 tokens · first word 213 ms
· 70.4 tok/s · finished"). The actions show while the pointer is over the message or the keyboard is
in it; otherwise they are transparent, not hidden, so Tab still stops on them (and shows them). What
a reader must act on stays in view: Retry, and the pager. Copy says "Copied" with a check for a
moment (``ui/widgets/copy_button``).

The text is a stack of segments (``message_segments``): prose wraps to the column, and each fenced code
block is a rounded block with its language and its own Copy, scrolling sideways on its own, so a long
code line is neither cut off nor widens the chat. A text too long to show as rich text is folded; its
"Show all" opens the whole of it as plain text (``full_text.FullTextViewer``). Copy always copies the
whole text.

An answer that cites sources shows its marks that point at one ([1], [2]…) as links, and lists the
sources under its text (``ui/chat/sources``); a mark or a listed source opens its passage.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import QEvent, QObject, QSize, Qt, QUrl, Signal
from PySide6.QtGui import QEnterEvent, QFont, QFontMetricsF, QGuiApplication, QResizeEvent
from PySide6.QtWidgets import (
    QApplication,
    QFrame,
    QGraphicsOpacityEffect,
    QHBoxLayout,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from prefill.engine.message import ImagePart
from prefill.ui.chat.images.image_strip import ImageStrip, ImageThumbs
from prefill.ui.chat.sources.cited import CitedSource
from prefill.ui.chat.sources.passage_view import OpenPassage, PassageView
from prefill.ui.chat.sources.source_list import SourceList
from prefill.ui.chat.tools.tool_call_section import ToolCallSection
from prefill.ui.chat.transcript.finish_words import finish_words
from prefill.ui.chat.transcript.full_text import FullTextViewer, OpenViewer
from prefill.ui.chat.transcript.inline_editor import InlineEditor
from prefill.ui.chat.transcript.message_segments import MessageBody, SafeBrowser, Segment
from prefill.ui.chat.transcript.thinking_section import ThinkingSection
from prefill.ui.markdown.inline import CITE_SCHEME, SAFE_SCHEMES
from prefill.ui.markdown.link_guard import open_link
from prefill.ui.widgets.copy_button import CopyConfirm, icon_button
from prefill.ui.widgets.plain_text import plain_label
from prefill.ui.widgets.tokens import SPACE, TYPE

ROLE_TITLES = {"user": "You", "assistant": "Assistant", "system": "System", "notice": "Note", "tool": "Tool call",
               "summary": "Summary"}
BUBBLE_SHARE = 0.8  # a question's bubble is at most this share of the column
MEASURE_CHARS = 4_000  # a longer question fills its bubble's width without its lines being measured


def figures_line(figures: dict[str, Any], reason: str) -> str:
    """An answer's footer: "42 tokens · first word 213 ms · 70.4 tok/s · finished" (the sidebar's words)."""
    if not figures:
        return finish_words(reason)
    thinking = figures.get("reasoning_tokens", 0)
    parts = [
        f"{figures.get('completion_tokens', 0)} tokens" + (f" ({thinking} thinking)" if thinking else ""),
        f"first word {figures.get('ttft_ms', 0):.0f} ms",
        f"{figures.get('decode_tps', 0):.1f} tok/s",
    ]
    if figures.get("cached_tokens"):
        parts.append(f"{figures['cached_tokens']} prompt tokens reused")
    if reason:
        parts.append(finish_words(reason))
    return " · ".join(parts)


ACTION_TIPS = {
    "copy": "Copy the message", "edit": "Edit the message here and answer again", "retry": "Ask again",
    "regenerate": "Answer again; this answer is kept as a version", "delete": "Delete the message (Undo follows)",
    "branch": "Start a new chat from here, with the messages up to this one",
    "older": "Show the answer before this one", "newer": "Show the next answer",
}
QUESTION_TIPS = {"older": "Show the words before this edit, with the turns that followed them",
                 "newer": "Show the next version of this message, with the turns that followed it"}
ICONS = {"copy": "copy", "edit": "edit", "retry": "regenerate", "regenerate": "regenerate", "delete": "delete",
         "branch": "branch", "older": "chevron-left", "newer": "chevron-right"}
WORDS = {"older": "‹", "newer": "›"}  # a button's text (not shown beside its icon): its name otherwise


class MessageWidget(QFrame):
    """Signals:
        action(str, object): "copy" | "edit" | "delete" | "regenerate" | "retry" | "branch" | "older" |
            "newer" (an answer's versions), and this widget.
        edit_saved(str, object): the inline editor saved this text.
    """

    action = Signal(str, object)
    edit_saved = Signal(str, object)

    def __init__(self, role: str, code_palette: Any = None):
        super().__init__()
        self.role = role
        self.setObjectName(f"message-{role}")
        self.setProperty("role", role)
        # The text: prose and code blocks, each block scrolling sideways on its own.
        self.body = MessageBody(code_palette, f"{ROLE_TITLES.get(role, role)}: message", self)
        self.body.link_clicked.connect(self._on_body_link_clicked)
        self.body.show_all.connect(self.show_all)
        self._viewer = OpenViewer()  # the whole text, while its viewer is open
        self._palette = code_palette
        self.sources: tuple[CitedSource, ...] = ()  # an answer's sources (`set_sources`)
        self.source_list: SourceList | None = None  # made for the first answer that has sources
        self._passage = OpenPassage()  # a cited passage, while its view is open
        # A small muted label: shown for a note, and for a row folded into a summary (``mark_folded``).
        self.title = plain_label(ROLE_TITLES.get(role, role))
        self.title.setObjectName("message-title")
        self.title.setVisible(role == "notice")
        self.figures = plain_label()
        self.figures.setObjectName("message-figures")
        self.figures.setWordWrap(True)
        self.figures.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.figures.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.figures.setVisible(False)
        self.thinking = ThinkingSection()  # stays hidden unless the model thinks
        self.thinking.body.setAccessibleName("The model's thinking")
        self.tool: ToolCallSection | None = None  # a tool row's call and result, in place of the text
        self.editor: InlineEditor | None = None  # while the message is edited in place
        self.images: ImageStrip | None = None  # a question's images (`set_images`)
        self._streaming = False
        self._version, self._versions = 0, 1
        self._hovered = False
        # What holds the text: a question's bubble, or (an answer, a note) the bare column.
        self.bubble = QFrame()
        self.bubble.setObjectName("message-bubble" if role == "user" else "message-content")
        self.content = QVBoxLayout(self.bubble)
        if role == "user":
            # No margin below: the last line's own leading (TYPE.body_line_height) is the room there.
            self.content.setContentsMargins(SPACE.lg, SPACE.md, SPACE.lg, 0)
        elif role == "notice":
            self.content.setContentsMargins(SPACE.md, 0, 0, 0)  # clear of the note's rule
        else:
            self.content.setContentsMargins(0, 0, 0, 0)
        self.content.setSpacing(SPACE.xs)
        self.content.addWidget(self.thinking)
        self.content.addWidget(self.body)
        # The head: the label, and what a summary puts there (its toggle and note).
        self.head = QHBoxLayout()
        self.head.setContentsMargins(0, 0, 0, 0)
        self.head.addWidget(self.title)
        self.head.addStretch(1)
        # The footer: the pager, Retry, the actions (shown on hover or focus) and an answer's figures.
        self.footer = QWidget()
        self.footer.setObjectName("message-footer")
        foot = QHBoxLayout(self.footer)
        foot.setContentsMargins(0, 0, 0, 0)
        foot.setSpacing(SPACE.xxs)
        self.actions_box = QWidget()
        self.actions_box.setObjectName("message-actions")
        box = QHBoxLayout(self.actions_box)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(SPACE.xxs)
        self._fade = QGraphicsOpacityEffect(self.actions_box)
        self.actions_box.setGraphicsEffect(self._fade)
        self.buttons: dict[str, QToolButton] = {}
        actions = ["copy", "branch", "delete"]
        if role == "user":
            actions[1:1] = ["edit", "retry"]  # retry: shown only on a question left without an answer
            actions[0:0] = ["older", "newer"]  # ‹ 1 / 2 ›: shown once an edit has kept the words before
        elif role == "assistant":
            actions[0:0] = ["older", "newer"]  # ‹ 2 / 3 ›: shown once an answer has versions
            actions.insert(3, "regenerate")
        elif role == "summary":  # a compaction's summary (summary_widget): edited in place, removed with Undo
            actions = ["copy", "edit", "delete"]
        self.version_label = plain_label()
        self.version_label.setObjectName("message-version")
        if role == "user":  # under the bubble, at the right
            foot.addWidget(self.figures)
            foot.addStretch(1)
        pager: list[QWidget] = []
        for name in actions:
            tip = QUESTION_TIPS.get(name, ACTION_TIPS[name]) if role == "user" else ACTION_TIPS[name]
            b = icon_button(ICONS[name], tip, WORDS.get(name, name.capitalize()), f"message-{name}")
            b.setProperty("chatAction", True)
            b.clicked.connect(lambda _=False, n=name: self.action.emit(n, self))
            if name in ("older", "newer", "retry"):
                pager.append(b)
            else:
                box.addWidget(b)
                b.installEventFilter(self)
            if name == "older":
                pager.append(self.version_label)
            self.buttons[name] = b
        if "retry" in self.buttons:
            self.buttons["retry"].setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self._copy = CopyConfirm(self.buttons["copy"], self.buttons["copy"].toolTip())
        for widget in pager:
            foot.addWidget(widget)
        foot.addWidget(self.actions_box)
        if role != "user":
            foot.addSpacing(SPACE.md)
            foot.addWidget(self.figures, 1)
        for hidden in ("retry", "older", "newer"):
            if hidden in self.buttons:
                self.buttons[hidden].hide()
        self.version_label.hide()
        if role in ("notice", "tool"):
            self.footer.hide()
            for b in self.buttons.values():
                b.hide()
        self._update_actions()
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(SPACE.xs)
        lay.addLayout(self.head)
        if role == "user":
            row = QHBoxLayout()
            row.setContentsMargins(0, 0, 0, 0)
            row.addStretch(1)
            row.addWidget(self.bubble)
            lay.addLayout(row)
        else:
            lay.addWidget(self.bubble)
        lay.addWidget(self.footer)
        if role == "tool":
            self.body.hide()
            self.tool = ToolCallSection()
            self.tool.body.setAccessibleName("The tool call and its result")
            self.content.insertWidget(self.content.indexOf(self.body), self.tool)

    @property
    def browser(self) -> SafeBrowser:
        """The first segment of the text: all of it when the message has no code block."""
        return self.body.segments[0]

    # --- actions on hover or focus --------------------------------------------------
    def actions_shown(self) -> bool:
        """Whether the actions can be seen now (the pointer is over the message, or the keyboard in it)."""
        return self._fade.opacity() > 0

    def _update_actions(self) -> None:
        focus = QApplication.focusWidget()
        inside = focus is not None and (focus is self or self.isAncestorOf(focus))
        self._fade.setOpacity(1.0 if self._hovered or inside or self.editor is not None else 0.0)

    def enterEvent(self, event: QEnterEvent) -> None:
        super().enterEvent(event)
        self._hovered = True
        self._update_actions()

    def leaveEvent(self, event: QEvent) -> None:
        super().leaveEvent(event)
        self._hovered = False
        self._update_actions()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() in (QEvent.Type.FocusIn, QEvent.Type.FocusOut):
            self._update_actions()  # Qt has already moved the focus when it sends these
        return super().eventFilter(watched, event)

    # --- content ---------------------------------------------------------------------
    def set_content(self, text: str) -> None:
        if self.tool is not None:
            self.tool.set_result(text)
            return
        self.body.set_text(text)
        self._fit_bubble()

    def append(self, text: str) -> None:
        if self.tool is not None:
            return
        if text and self.thinking.isVisible():
            self.thinking.answer_started()
        self.body.append(text)

    def set_reasoning(self, text: str, from_history: bool = False) -> None:
        self.thinking.set_text(text)
        self.thinking.finished(from_history)

    def append_reasoning(self, text: str) -> None:
        self.thinking.append(text)

    def set_retry_visible(self, visible: bool) -> None:
        if "retry" in self.buttons:
            self.buttons["retry"].setVisible(visible)

    def finish(self) -> None:
        self.body.finish()

    def text(self) -> str:
        return self.tool.text() if self.tool is not None else self.body.text

    def set_streaming(self, streaming: bool) -> None:
        self._streaming = streaming
        for name in ("copy", "edit", "retry", "delete", "regenerate", "branch"):
            if name in self.buttons:
                self.buttons[name].setEnabled(name == "copy" or not streaming)
        self.set_versions(self._version, self._versions)

    def set_versions(self, version: int, versions: int) -> None:
        """An answer's or an edited question's pager: ‹ version+1 / versions ›, shown once it has more than one."""
        if "older" not in self.buttons:
            return
        self._version, self._versions = version, versions
        shown = versions > 1
        self.version_label.setText(f"{version + 1} / {versions}")
        what = "Version" if self.role == "user" else "Answer"
        self.version_label.setAccessibleName(f"{what} {version + 1} of {versions}")
        for name in ("older", "newer"):
            self.buttons[name].setVisible(shown)
        self.version_label.setVisible(shown)
        self.buttons["older"].setEnabled(version > 0 and not self._streaming)
        self.buttons["newer"].setEnabled(version < versions - 1 and not self._streaming)

    # --- editing in place -------------------------------------------------------------
    def begin_edit(self) -> InlineEditor:
        """Swap the text for an editor holding it (Save: `edit_saved`; Cancel: back as it was)."""
        if self.editor is None:
            self.editor = InlineEditor(self.text())
            self.editor.saved.connect(lambda text: self.edit_saved.emit(text, self))
            self.editor.cancelled.connect(self.end_edit)
            self.content.insertWidget(self.content.indexOf(self.body), self.editor)
            self.body.hide()
            for b in self.buttons.values():
                b.setEnabled(False)
            self._fit_bubble()
        self.editor.begin()
        return self.editor

    def end_edit(self) -> None:
        """Close the editor; the message shows its text again."""
        if self.editor is None:
            return
        editor, self.editor = self.editor, None
        focus = QApplication.focusWidget()
        had_focus = focus is not None and editor.isAncestorOf(focus)
        editor.hide()
        editor.deleteLater()
        self.body.show()
        self._fit_bubble()
        self.set_streaming(self._streaming)
        if had_focus and "edit" in self.buttons:
            self.buttons["edit"].setFocus()  # the keyboard stays on this message

    def set_images(self, parts: tuple[ImagePart, ...], thumbs: ImageThumbs) -> None:
        """The images a question showed the model: thumbnails above its text (a click opens one larger)."""
        if not parts:
            return
        strip = ImageStrip(thumbs)
        strip.setObjectName("message-images")
        strip.set_images(parts)
        self.content.insertWidget(self.content.indexOf(self.body), strip)
        self.images = strip
        self._fit_bubble()

    def set_sources(self, sources: Sequence[CitedSource], render: bool = True) -> None:
        """The sources an answer cites: its marks that point at one become links, and they are listed
        under its text. `render`: show the marks now (False: the text is about to be set anyway)."""
        self.sources = tuple(sources)
        changed = self.body.set_citations(frozenset(s.n for s in self.sources))
        if self.sources and self.source_list is None:
            self.source_list = SourceList(self._palette)
            self.source_list.opened.connect(self.open_source)
            self.content.addWidget(self.source_list)
        if self.source_list is not None:
            self.source_list.set_sources(self.sources)
        if changed and render and not self._streaming and self.body.text:
            self.body.set_text(self.body.text)

    def open_source(self, n: int) -> PassageView | None:
        """Open the passage of source `n` (a mark or a listed source was clicked); None: no such source."""
        source = next((s for s in self.sources if s.n == n), None)
        if source is None:
            return None
        return self._passage.show(source, self.text(), self._palette, self.window())

    @property
    def passage(self) -> PassageView | None:
        """The cited passage's view, while it is open."""
        return self._passage.view

    def set_figures(self, figures: dict[str, Any], reason: str) -> None:
        if self.tool is not None:
            self.tool.set_call(figures, self._streaming)
            return
        self.thinking.set_figures(figures)
        line = figures_line(figures, reason)
        self.figures.setText(line)
        self.figures.setVisible(bool(line))

    def show_all(self) -> FullTextViewer:
        """Open the whole text (as it is now) in a plain-text viewer: a folded message's Show all."""
        title = f"{ROLE_TITLES.get(self.role, self.role)}: the whole message"
        return self._viewer.show(self.text(), title, self.window())

    @property
    def viewer(self) -> FullTextViewer | None:
        """The whole text's viewer, while it is open."""
        return self._viewer.viewer

    def copy_text(self) -> None:
        """Copy the whole text; the Copy button says "Copied" for a moment."""
        QGuiApplication.clipboard().setText(self.text())
        self._copy.confirm()

    # --- a question's bubble: as wide as its words --------------------------------------
    def sizeHint(self) -> QSize:
        """As tall as the message is at the width it has (a wrapped line of figures included): the
        view measures rows by this."""
        hint = super().sizeHint()
        if self.width() > 0 and self.hasHeightForWidth():
            hint.setHeight(self.heightForWidth(self.width()))
        return hint

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            self._fit_bubble()

    def _fit_bubble(self) -> None:
        """A question's bubble: as wide as its longest line, at most BUBBLE_SHARE of the column (all
        of it while edited); its text wraps inside."""
        if self.role != "user" or self.width() <= 0:
            return
        full = self.width()
        margins = self.content.contentsMargins()
        bottom = SPACE.md if self.editor is not None else 0  # the editor's buttons need room; text has its leading
        if margins.bottom() != bottom:
            self.content.setContentsMargins(margins.left(), margins.top(), margins.right(), bottom)
        if self.editor is not None:
            want = full
        else:
            margins = self.content.contentsMargins()
            pad = margins.left() + margins.right()
            most = max(1, int(full * BUBBLE_SHARE))
            want = min(most, self._words_width(most - pad) + pad)
            if self.images is not None:
                want = max(want, min(full, self.images.sizeHint().width() + pad))
        if self.bubble.minimumWidth() != want or self.bubble.maximumWidth() != want:
            self.bubble.setFixedWidth(want)

    def _words_width(self, limit: int) -> int:
        """The width the question's longest line takes in the body's type (``limit`` when wider or
        too long to measure): its markdown as written, a little wider than rendered, never narrower."""
        text = self.text()
        if len(text) > MEASURE_CHARS:
            return limit
        font = QFont(self.font())
        font.setPixelSize(TYPE.body)
        metrics = QFontMetricsF(font)
        slack = 2 * self.browser.document().documentMargin() + SPACE.sm
        widest = 0.0
        for line in text.split("\n"):
            widest = max(widest, metrics.horizontalAdvance(line) + slack)
            if widest >= limit:
                return limit
        return max(1, math.ceil(widest))

    def _on_body_link_clicked(self, url: QUrl, segment: Segment) -> None:
        if url.scheme() == "copy":
            # copy:N counts the code blocks of the segment it is in (a code segment holds one).
            blocks = segment.stream.code_blocks
            try:
                QGuiApplication.clipboard().setText(blocks[int(url.path())])
            except (ValueError, IndexError):
                pass
        elif url.scheme() == CITE_SCHEME:
            try:
                self.open_source(int(url.path()))
            except ValueError:
                pass
        elif url.scheme() in SAFE_SCHEMES:
            open_link(self, segment.document(), url)
