"""Speculative decoding as one typed setting, the same for the window, the terminal and the server.

`Speculation` says how answers are decoded: one token per step ("off"), or guesses checked in one
step, drafted from the text itself ("ngram") or by a small model that shares the vocabulary
("draft", `draft_path`), at most `draft_max` at a time. The window builds it from its settings
(`ModelSettings.speculation`), the terminal and the server from their `--speculative` flag, which
takes a mode or a draft model's file (`from_flag`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

DRAFT_MAX = 16  # the longest draft, unless a setting says otherwise
SpeculativeMode = Literal["off", "ngram", "draft"]
MODES: tuple[SpeculativeMode, ...] = ("off", "ngram", "draft")
MAX_DRAFT = 32  # the longest draft a setting may ask for


@dataclass(frozen=True)
class Speculation:
    """How a model decodes (see the module's docstring)."""

    mode: SpeculativeMode = "off"
    draft_path: str = ""  # read in "draft" mode only
    draft_max: int = DRAFT_MAX

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"speculative decoding is {', '.join(MODES)}, not {self.mode!r}")
        if not 1 <= self.draft_max <= MAX_DRAFT:
            raise ValueError(f"the longest draft is 1 to {MAX_DRAFT} tokens, not {self.draft_max}")

    @classmethod
    def from_flag(cls, value: str, draft_max: int = DRAFT_MAX) -> Speculation:
        """What `--speculative` says: off, ngram, or a draft model's file (a .gguf name, or a file there).

        Raises:
            ValueError: neither a mode nor a draft model's file (a mistyped mode must not become a path).
        """
        if value == "off":
            return cls("off", "", draft_max)
        if value == "ngram":
            return cls("ngram", "", draft_max)
        path = Path(value).expanduser()
        if not value.lower().endswith(".gguf") and not path.exists():
            raise ValueError(f"expected off, ngram or a draft model's .gguf file, not {value!r}")
        return cls("draft", str(path), draft_max)

    @property
    def draft_wanted(self) -> str:
        """The draft model this asks for ("" for none: the other modes free it)."""
        return self.draft_path if self.mode == "draft" else ""

    @property
    def flag(self) -> str:
        """As `--speculative` would say it."""
        return self.draft_path if self.mode == "draft" else self.mode
