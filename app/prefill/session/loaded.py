"""What a person sees of the backend that answers: the model's name, context, format and device."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the window imports this at start-up, before llama.cpp is loaded
    from prefill.engine.llama.offload import DeviceReport
    from prefill.session.capabilities import Endpoint, RunsLocally


@dataclass(frozen=True)
class LoadedModel:
    path: Path
    name: str
    n_ctx: int
    n_layer: int
    backend_summary: str
    backend_warning: str
    gpu_build: bool
    load_ms: float
    bytes_per_cell: int
    model_bytes: int
    chat_format: str = "template"  # "template", a llama.cpp built-in format's name, or "base"
    chat_format_label: str = ""  # where the format came from, in words
    takes_thinking_switch: bool = False  # the template reads enable_thinking
    takes_reasoning_effort: bool = False  # the template reads reasoning_effort (gpt-oss)
    reasons: bool = False  # the model has reasoning markers (its thinking is shown apart)
    remote: str = ""  # served by this endpoint (its API root); path is then empty
    endpoint: str = ""  # the saved endpoint's name
    device: DeviceReport | None = None  # where a local model runs: layers offloaded, device, GPU memory
    projector: str = ""  # the projector (mmproj) file a local model sees images with ("": none)
    vision: str = ""  # its projector, or that images need one and the file to get ("": nothing to say)
    flash_attn: bool | None = None  # whether flash attention is on, as llama.cpp resolved it (None: remote)
    resident: bool = False  # it was already in memory: switched to without a load
    n_ctx_asked: int = 0  # the context asked for; llama.cpp rounds it up, so `n_ctx` (what runs) may be more

    @property
    def format_from_model(self) -> bool:
        return self.chat_format == "template"

    @property
    def source(self) -> str:
        """Where the answers come from: the model file, or the endpoint and its model."""
        return f"{self.remote} · {self.name}" if self.remote else str(self.path)


def local_model(engine: RunsLocally, path: Path, load_ms: float, projector: Path | None = None) -> LoadedModel:
    """A model file loaded here, by its own engine or as the server's (`projector`: the one it sees with)."""
    from prefill.engine.llama.offload import with_vram

    return LoadedModel(
        path=path,
        name=engine.header.name or path.stem,
        n_ctx=engine.n_ctx,
        n_ctx_asked=engine.runtime.settings.n_ctx,
        n_layer=engine.header.n_layer,
        backend_summary=engine.device.summary,
        backend_warning=engine.device.warning,
        gpu_build=engine.device.gpu_build,
        load_ms=load_ms,
        bytes_per_cell=engine.bytes_per_cell,
        model_bytes=engine.runtime.model_bytes(),
        chat_format=engine.format.name,
        chat_format_label=engine.format.label,
        takes_thinking_switch=engine.format.takes_thinking_switch,
        takes_reasoning_effort=engine.format.takes_reasoning_effort,
        reasons=bool(engine.reasoning),
        device=with_vram(engine.device, engine.runtime.load_log),
        flash_attn=engine.runtime.flash_attn_on,
        projector=str(projector) if projector is not None else "",
    )


def remote_model(engine: Endpoint, model: str, endpoint: str, load_ms: float) -> LoadedModel:
    """What the window shows of a remote endpoint: its model and address; what it cannot see is 0."""
    return LoadedModel(
        path=Path(), name=model, n_ctx=0, n_layer=0, backend_summary=f"remote: {engine.base}",
        backend_warning="", gpu_build=False, load_ms=load_ms, bytes_per_cell=0, model_bytes=0,
        chat_format="remote", chat_format_label="written by the remote server", remote=engine.base,
        endpoint=endpoint,
    )
