"""Sizes and parameter counts as people read them, for every layer above the engine."""

from __future__ import annotations

__all__ = ["format_bytes", "format_params", "short_count"]


def format_bytes(n: float | None) -> str:
    """`1.5 GiB`, `300.0 MiB`, `12 B`; `?` when unknown."""
    if n is None:
        return "?"
    value = float(n)
    for unit in ("B", "KiB", "MiB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def format_params(n: int) -> str:
    """`1.24B`, `135M`, `50K`, or an empty string when unknown."""
    if n <= 0:
        return ""
    if n >= 1e8:
        return f"{n / 1e9:.2f}B"
    return f"{n / 1e6:.0f}M" if n >= 1e6 else f"{n / 1e3:.0f}K"


def short_count(n: int) -> str:
    """A count as people read it on a card: 950, 48.2K, 900K, 1.2M, 3.4B."""
    for size, unit in ((1_000_000_000, "B"), (1_000_000, "M"), (1_000, "K")):
        if n >= size:
            value = n / size
            text = f"{value:.1f}" if value < 100 else f"{value:.0f}"
            return text.removesuffix(".0") + unit
    return str(n)
