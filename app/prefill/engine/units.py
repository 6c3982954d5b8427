"""Sizes and parameter counts as people read them, for every layer above the engine."""

from __future__ import annotations

__all__ = ["format_bytes", "format_params"]


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
