"""What the Models page's cards say: counts as "900K", a date as "3 days ago", and each kind of card
(a search result, a suggestion, a model on this machine) put into a `Card`'s lines."""

from __future__ import annotations

from datetime import UTC, datetime

from prefill.engine.llama.hardware import MachineMemory
from prefill.engine.llama.memory_fit import FitEstimate
from prefill.engine.units import format_bytes, format_params
from prefill.engine.units import short_count as short_count  # its home is units: read here by the page too
from prefill.hub.abandoned import AbandonedDownload
from prefill.hub.client import RepoSummary
from prefill.hub.library import LocalModel
from prefill.hub.model_names import display_name
from prefill.hub.suggested import Q4_K_M_BYTES_PER_PARAM, Suggestion, size_fit
from prefill.ui.models.fit_badge import fit_figures
from prefill.ui.models.fit_chip import verdict_of
from prefill.ui.models.list_cards import Card


def updated_words(when: datetime | None, now: datetime | None = None) -> str:
    """ "today", "yesterday", "3 days ago", "2 weeks ago", then the date ("12 Mar 2024")."""
    if when is None:
        return ""
    now = now or datetime.now(UTC)
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    days = (now.date() - when.astimezone(now.tzinfo).date()).days
    if days <= 0:
        return "today"
    if days == 1:
        return "yesterday"
    if days < 14:
        return f"{days} days ago"
    if days < 60:
        return f"{days // 7} weeks ago"
    return f"{when.day} {when.strftime('%b %Y')}"


def result_card(hit: RepoSummary, memory: MachineMemory | None, now: datetime | None = None) -> Card:
    """A search hit: its name, who made it, downloads, likes, when it changed; and, when the hub
    gave its parameter count, the usual file's size and a chip of whether that fits."""
    author, _, name = hit.repo_id.partition("/")
    who = [author] + ([f"updated {updated_words(hit.last_modified, now)}"] if hit.last_modified else [])
    counts = [f"{short_count(hit.downloads)} downloads"] + ([f"{short_count(hit.likes)} likes"] if hit.likes else [])
    lines = [" · ".join(who), " · ".join(counts)]
    verdict, hover = "", hit.repo_id
    if hit.params:
        size = int(hit.params * Q4_K_M_BYTES_PER_PARAM)
        lines[1] += f" · {format_params(hit.params)} parameters"
        lines.append(f"{format_bytes(size)} at Q4_K_M")  # the chip beside it: whether that file fits
        if memory is not None:
            verdict = verdict_of(size_fit(size, memory))
            hover += (f"\nThe size and fit are estimated for its Q4_K_M file (about {format_bytes(size)}, from "
                      f"{format_params(hit.params)} parameters); open it for each file's own size and estimate.")
    else:
        lines.append("Open it to see its files, their sizes and what fits")
    title = _without_suffix(name) + ("  (gated)" if hit.gated else "")
    return Card(hit.repo_id, title, tuple(lines), verdict, hover=hover, payload=hit)


def _without_suffix(name: str) -> str:
    """A repository's name without the "-GGUF" every result carries (the details pane shows it whole)."""
    for suffix in ("-GGUF", "_GGUF", "-gguf", "_gguf", "-GGUFs"):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name.removesuffix(suffix)
    return name


def suggestion_card(s: Suggestion, e: FitEstimate) -> Card:
    """A model suggested for this machine: its name, size, what it is good for, and its fit."""
    hover = f"{s.what}\n{s.repo_id}/{s.filename}\n{fit_figures(e)}"
    return Card(s.repo_id, display_name(s.filename, s.repo_id),
                (f"{s.repo_id.partition('/')[0]} · {format_bytes(s.size)} · {fit_figures(e, compact=True)}", s.what),
                verdict_of(e), hover=hover, payload=s)


def library_card(m: LocalModel) -> Card:
    """A model on this machine: its name, then what its header says and where it is from."""
    if m.error:
        return Card(str(m.path), m.name, (f"Unreadable: {m.error}",), hover=f"{m.path}\nUnreadable: {m.error}",
                    payload=m)
    facts = [m.architecture, format_params(m.n_params) and f"{format_params(m.n_params)} parameters",
             m.quantization, m.context_length and f"{m.context_length:,} context", format_bytes(m.size)]
    where = [m.source, "chat template" if m.has_chat_template else "no chat template"]
    if m.projector is not None:
        where.append(f"sees images ({m.projector.name})")
    hover = str(m.path) + (f"\nprojector: {m.projector}" if m.projector else "")
    return Card(str(m.path), m.name, (" · ".join(str(f) for f in facts if f), " · ".join(where)), hover=hover,
                payload=m)


def abandoned_card(a: AbandonedDownload) -> Card:
    return Card(str(a.path), a.name,
                (f"{format_bytes(a.size)} of {format_bytes(a.total)} · last written "
                 f"{a.last_written.astimezone().strftime('%Y-%m-%d %H:%M')}",), hover=str(a.path), payload=a)
