"""The context meter under the message box: the next prompt's tokens against the context, part by part.

A thin bar (the system prompt, the tools' schemas, the chat's documents, the conversation, the room kept
for the answer, then what is free) and a line of words such as "1,204 of 4,096 tokens · system 40 ·
tools 312 · documents 610 · conversation 242". Near the end of the context, and past it, the words say
what will happen (the overflow policy's doing), and when the tools' schemas are what leaves no room,
they say that instead of advice about the policy, which cannot help then. The figures come from the
model's tokenizer (ui/chat/prompt_count.py); nothing here guesses from the text's length.
"""

from __future__ import annotations

from PySide6.QtWidgets import QFrame, QHBoxLayout, QVBoxLayout, QWidget

from prefill.session.prompt_parts import PromptParts
from prefill.ui.widgets.plain_text import plain_label, tooltip
from prefill.ui.widgets.tokens import SPACE

NEAR = 0.85  # past this share of the context (the answer's room included), the words say what comes next
# (object name, what the part is called in the words) in the bar's order, which is the prompt's
PARTS: tuple[tuple[str, str], ...] = (("meter-system", "system"), ("meter-tools", "tools"),
                                      ("meter-documents", "documents"), ("meter-conversation", "conversation"))
SETTING = "“When the chat is too long” in Settings"
# What each overflow policy does to a prompt that does not fit: (soon, now).
POLICY_WORDS: dict[str, tuple[str, str]] = {
    "rolling_window": ("the oldest turns are left out of the prompt",
                       "the oldest turns will be left out of this prompt"),
    "truncate_middle": ("turns after the first are left out of the prompt",
                        "turns after the first will be left out of this prompt"),
    "summarise": ("the oldest turns are left out of the prompt, and the chat is summarised",
                  "the oldest turns will be left out of this prompt, and the chat summarised after the answer"),
    "stop": ("the model refuses to answer",
             f"the model will refuse it. Start a new chat, delete earlier messages, or change {SETTING}"),
}


def parts_of(p: PromptParts) -> dict[str, int]:
    """Each part's tokens, by its name in the words."""
    return {"system": p.system, "tools": p.tools, "documents": p.documents, "conversation": p.conversation}


def meter_words(p: PromptParts) -> tuple[str, str]:
    """The meter's words for `p`, and its level: "ok", "near" (little room left) or "over"."""
    line = f"{p.total:,} of {p.n_ctx:,} tokens"
    for name, n in parts_of(p).items():
        if name == "documents" and p.documents_mode and not p.documents_searched:
            line += f" · documents up to {p.documents_budget:,}"
        elif n > 0 and (name != "conversation" or len([v for v in parts_of(p).values() if v]) > 1):
            line += f" · {name} {n:,}"
    soon, now = POLICY_WORDS.get(p.policy, POLICY_WORDS["rolling_window"])
    if not p.fits_at_all:
        if p.tools_push_over:
            return (f"{line}. Too long even with every earlier turn left out: the tools' schemas take {p.tools:,} "
                    f"of the {p.n_ctx:,}-token context. Turn tools off for this chat, or load the model with a "
                    "larger context.", "over")
        return (f"{line}. Too long even with every earlier turn left out ({p.reserve:,} kept for the answer): "
                "shorten the message, the system prompt or the documents, or load the model with a larger "
                "context.", "over")
    if not p.fits:
        over = p.total + p.reserve - p.n_ctx
        why = (f" The tools' schemas take {p.tools:,} of it: without them every turn would fit."
               if p.tools and p.total - p.tools + p.reserve <= p.n_ctx else "")
        return f"{line}. Past the context by {over:,} (with {p.reserve:,} kept for the answer): {now}.{why}", "over"
    left = p.n_ctx - p.reserve - p.total
    if p.total + p.reserve > NEAR * p.n_ctx:
        return f"{line}. Nearly full: {left:,} more tokens before {soon}.", "near"
    return line, "ok"


class ContextMeter(QWidget):
    """A thin bar of the next prompt's parts and a line of words, under the message box."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("context-meter")
        self.setAccessibleName("Context")
        self.parts: PromptParts | None = None
        self.bar = QFrame()
        self.bar.setObjectName("context-meter-bar")
        self.bar.setFixedHeight(SPACE.xs)
        self.segments: dict[str, QFrame] = {}
        row = QHBoxLayout(self.bar)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(0)
        for name in (*(n for n, _ in PARTS), "meter-reserve", "meter-free"):
            segment = QFrame()
            segment.setObjectName(name)
            segment.hide()
            self.segments[name] = segment
            row.addWidget(segment)
        self._row = row
        self.words = plain_label()
        self.words.setObjectName("context-meter-words")
        self.words.setWordWrap(True)
        self.words.setProperty("level", "ok")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(SPACE.md, SPACE.sm, SPACE.md, 0)
        lay.setSpacing(SPACE.xs)
        lay.addWidget(self.bar)
        lay.addWidget(self.words)
        self.bar.hide()

    def show_parts(self, p: PromptParts) -> None:
        """Draw `p`: the bar's parts in proportion, the words, and a tooltip with every figure."""
        self.parts = p
        words, level = meter_words(p)
        self._set_words(words, level)
        scale = max(p.n_ctx, p.total + p.reserve)
        sizes = {name: n for (name, _), n in zip(PARTS, parts_of(p).values(), strict=True)}
        sizes["meter-reserve"] = p.reserve
        sizes["meter-free"] = max(0, scale - p.total - p.reserve)
        for name, n in sizes.items():
            segment = self.segments[name]
            segment.setVisible(n > 0)
            self._row.setStretch(self._row.indexOf(segment), n)
        self.segments["meter-reserve"].setProperty("over", not p.fits)
        repolish(self.segments["meter-reserve"])
        self.bar.setVisible(scale > 0)
        self.setToolTip(tooltip(
            f"The next prompt, counted by the model's tokenizer: {p.total:,} of the {p.n_ctx:,}-token context.\n"
            f"System prompt {p.system:,} · tools' schemas {p.tools:,} · documents {p.documents:,} · "
            f"conversation {p.conversation:,}.\n{p.reserve:,} tokens are kept free for the answer."))
        self.setAccessibleDescription(words)

    def show_remote(self) -> None:
        """A remote model writes and counts its own prompt."""
        self.parts = None
        self.bar.hide()
        self._set_words("Prompt tokens: counted by the remote server (its usage shows after the answer).", "ok")

    def show_problem(self, why: str) -> None:
        """Something could not be counted (the documents), in words, after the figures shown."""
        shown = meter_words(self.parts)[0] if self.parts is not None else ""
        self._set_words(f"{shown.rstrip('.')}. {why}" if shown else why, "over")

    def text(self) -> str:
        return self.words.text()

    def _set_words(self, words: str, level: str) -> None:
        self.words.setText(words)
        self.words.setProperty("level", level)
        repolish(self.words)
        self.setAccessibleDescription(words)


def repolish(w: QWidget) -> None:
    """Apply the style sheet again after a property its rules read changed."""
    w.style().unpolish(w)
    w.style().polish(w)
