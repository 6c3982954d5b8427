"""One message in the chat: markdown text, its figures, and its actions.

The actions (Copy, Edit, Regenerate, Branch, Delete) show while the pointer is over the message or the
keyboard is in it; otherwise they are transparent, not hidden, so Tab still stops on them (and shows
them). What a reader must act on stays in view: Retry on an unanswered question, an answer's ‹ 2 / 3 ›.
The text is a stack of segments (``message_segments``): prose wraps to the pane, and each fenced code
block scrolls sideways on its own, so a long code line is neither cut off nor widens the chat. A text
too long to show as rich text is folded; its "Show all" opens the whole of it as plain text
(``full_text.FullTextViewer``). Copy always copies the whole text.

An answer that cites sources shows its marks that point at one ([1], [2]…) as links, and lists the
sources under its text (``ui/chat/sources``); a mark or a listed source opens its passage.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import QEvent, QObject, QTimer, QUrl, Signal
from PySide6.QtGui import QEnterEvent, QGuiApplication
from PySide6.QtWidgets import (
    QApplication,
    QFrame,
    QGraphicsOpacityEffect,
    QHBoxLayout,
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
from prefill.ui.widgets.plain_text import plain_label

ROLE_TITLES = {"user": "You", "assistant": "Assistant", "system": "System", "notice": "Note", "tool": "Tool call",
               "summary": "Summary"}
COPIED_MS = 1500  # how long the Copy button says "Copied"


def figures_line(figures: dict[str, Any], reason: str) -> str:
    if not figures:
        return finish_words(reason)
    thinking = figures.get("reasoning_tokens", 0)
    parts = [
        f"{figures.get('completion_tokens', 0)} tokens" + (f" ({thinking} thinking)" if thinking else ""),
        f"TTFT {figures.get('ttft_ms', 0):.0f} ms",
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
        self.title = plain_label(ROLE_TITLES.get(role, role))
        self.title.setObjectName("message-title")
        self.figures = plain_label()
        self.figures.setObjectName("message-figures")
        self.figures.setVisible(False)
        self.thinking = ThinkingSection()  # stays hidden unless the model thinks
        self.thinking.body.setAccessibleName("The model's thinking")
        self.tool: ToolCallSection | None = None  # a tool row's call and result, in place of the text
        self.editor: InlineEditor | None = None  # while the message is edited in place
        self.images: ImageStrip | None = None  # a question's images (`set_images`)
        self._streaming = False
        self._version, self._versions = 0, 1
        self._copied = QTimer(self)
        self._copied.setSingleShot(True)
        self._copied.setInterval(COPIED_MS)
        self._copied.timeout.connect(lambda: self._show_copied(False))
        bar = QHBoxLayout()
        bar.addWidget(self.title)
        bar.addStretch(1)
        # The actions shown on hover or focus; transparent otherwise (see the module's docstring).
        self.actions_box = QWidget()
        self.actions_box.setObjectName("message-actions")
        box = QHBoxLayout(self.actions_box)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(0)
        self._fade = QGraphicsOpacityEffect(self.actions_box)
        self.actions_box.setGraphicsEffect(self._fade)
        self._hovered = False
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
        for name in actions:
            b = QToolButton()
            b.setText({"older": "‹", "newer": "›"}.get(name, name.capitalize()))
            b.setAutoRaise(True)
            b.setObjectName(f"message-{name}")
            tip = QUESTION_TIPS.get(name, ACTION_TIPS[name]) if role == "user" else ACTION_TIPS[name]
            b.setToolTip(tip)
            b.setAccessibleName(tip)
            b.clicked.connect(lambda _=False, n=name: self.action.emit(n, self))
            if name in ("older", "newer", "retry"):
                bar.addWidget(b)
            else:
                box.addWidget(b)
                b.installEventFilter(self)
            if name == "older":
                bar.addWidget(self.version_label)
            self.buttons[name] = b
        if role in ("notice", "tool"):
            for b in self.buttons.values():
                b.hide()
        for hidden in ("retry", "older", "newer"):
            if hidden in self.buttons:
                self.buttons[hidden].hide()
        self.version_label.hide()
        bar.addWidget(self.actions_box)
        self._update_actions()
        lay = QVBoxLayout(self)
        lay.setContentsMargins(10, 6, 10, 6)
        lay.setSpacing(2)
        lay.addLayout(bar)
        lay.addWidget(self.thinking)
        lay.addWidget(self.body)
        lay.addWidget(self.figures)
        if role == "tool":
            self.title.hide()
            self.body.hide()
            self.tool = ToolCallSection()
            self.tool.body.setAccessibleName("The tool call and its result")
            lay.insertWidget(1, self.tool)
            lay.setContentsMargins(10, 2, 10, 2)

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
            layout = self.layout()
            assert isinstance(layout, QVBoxLayout)
            layout.insertWidget(layout.indexOf(self.body), self.editor)
            self.body.hide()
            for b in self.buttons.values():
                b.setEnabled(False)
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
        lay = self.layout()
        assert isinstance(lay, QVBoxLayout)
        lay.insertWidget(lay.indexOf(self.body), strip)
        self.images = strip

    def set_sources(self, sources: Sequence[CitedSource], render: bool = True) -> None:
        """The sources an answer cites: its marks that point at one become links, and they are listed
        under its text. `render`: show the marks now (False: the text is about to be set anyway)."""
        self.sources = tuple(sources)
        changed = self.body.set_citations(frozenset(s.n for s in self.sources))
        if self.sources and self.source_list is None:
            self.source_list = SourceList(self._palette)
            self.source_list.opened.connect(self.open_source)
            lay = self.layout()
            assert isinstance(lay, QVBoxLayout)
            lay.insertWidget(lay.indexOf(self.figures), self.source_list)
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
        QGuiApplication.clipboard().setText(self.text())
        self._show_copied(True)
        self._copied.start()

    def _show_copied(self, copied: bool) -> None:
        """The Copy button confirms for a moment: a copy gives no other sign that it happened."""
        button = self.buttons.get("copy")
        if button is not None:
            button.setText("Copied ✓" if copied else "Copy")
            button.setAccessibleName("Copied" if copied else ACTION_TIPS["copy"])

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
