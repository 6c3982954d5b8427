"""Load: 8 clients streaming at once for 20 s against `prefill serve --parallel 4` (tiny model).

Every request is answered completely or with an error, none is lost, and the
figures (requests, total tok/s, TTFT p50/p95) are printed. The 60 s run is
benchmarks/serve_bench.py's.
"""

from __future__ import annotations

import json
from pathlib import Path

from prefill.bench.serve_load import run_load
from tests.server.conftest import start_server, stop_server

DURATION_S = 20
MAX_TOKENS = 48


def test_eight_clients_on_four_slots(tiny_model: Path) -> None:
    s = start_server(tiny_model, "--parallel", "4", "--ctx", "512")
    try:
        report = run_load(s.base, s.model_id, clients=8, duration_s=DURATION_S, max_tokens=MAX_TOKENS)
        snap = s.slots()
    finally:
        err = stop_server(s)
    figures = report.figures()
    print(json.dumps({"load": figures, "server": {k: snap[k] for k in ("served", "peak_batch_seqs", "peak_queued")}}))
    assert report.lost == 0
    assert all(o.complete or o.error for o in report.outcomes)
    failed = [o.error for o in report.outcomes if o.error]
    assert not failed, failed[:3]
    assert figures["requests"] >= 16 and figures["total_tps"] > 0
    # every answer streamed in chunks whose gaps were timed (a chunk holds at least one token)
    assert all(len(o.gaps_ms) == o.chunks - 1 for o in report.outcomes)
    assert figures["chunk_gap_p95_ms"] >= figures["chunk_gap_p50_ms"] > 0 and figures["tokens_per_chunk"] >= 1
    assert snap["served"] == report.started  # the server saw every request end
    assert snap["peak_batch_seqs"] == 4 and snap["peak_queued"] >= 1  # four decoded together, the rest waited
    assert snap["busy"] == 0 and snap["queued"] == 0
    assert "Traceback" not in err
