"""The colours of rendered markdown for each theme: chosen by the theme, used by the renderer."""

from __future__ import annotations

from dataclasses import dataclass

from prefill.ui.widgets.colours import DARK, LIGHT


@dataclass(frozen=True)
class CodePalette:
    """Colours for rendered markdown.

    Attributes:
        pygments_style: Pygments style that colours the code tokens.
        background: Background of a code block.
        foreground: Code text that has no token colour.
        inline_background: Background of ``inline code``.
        muted: The code's language label, a table's column names, a card's fact names.
        link: Links, the Copy link and an answer's citation marks included.
        mark: Behind the words of a cited passage that the answer relied on.
        rule: The hairline under a table's column names and between its rows.
        mono_fonts: Font families for code, first found wins (macOS, Windows, Linux).
    """

    pygments_style: str
    background: str
    foreground: str
    inline_background: str
    muted: str
    link: str
    mark: str
    rule: str = LIGHT.border
    mono_fonts: tuple[str, ...] = ("Menlo", "Consolas", "DejaVu Sans Mono", "monospace")

    @property
    def mono_css(self) -> str:
        """``font-family`` value for the code fonts."""
        return ", ".join(f"'{family}'" if " " in family else family for family in self.mono_fonts)


LIGHT_CODE = CodePalette("default", LIGHT.code_block, "#1f2328", "#eaeef2", "#656d76", "#0969da", "#fff1a8",
                         LIGHT.border)
DARK_CODE = CodePalette("github-dark", DARK.code_block, "#e6edf3", "#343942", "#8d96a0", "#4493f8", "#5c4b12",
                        DARK.border)
