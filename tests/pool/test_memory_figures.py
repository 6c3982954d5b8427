"""What a resident model takes, as llama.cpp reported it: the compute and output buffers read from
the lines llama.cpp prints making a context (its C API, as bound, has no call that returns them),
and a figure still estimated says so."""

from __future__ import annotations

from prefill.pool.memory import ModelMemory, logged_buffers, measured

MIB = 1 << 20
LOG = """llama_context: n_ctx         = 512
llama_context:        CPU  output buffer size =     0.12 MiB
llama_kv_cache:        CPU KV buffer size =     6.00 MiB
sched_reserve:      CUDA0 compute buffer size =    13.01 MiB
sched_reserve:  CUDA_Host compute buffer size =     2.50 MiB
"""


def test_the_compute_and_output_buffers_of_every_device_are_summed_the_kv_cache_left_out() -> None:
    assert logged_buffers(LOG) == int((0.12 + 13.01 + 2.50) * MIB)
    assert logged_buffers("llama_context: n_ctx = 512\n") is None  # nothing said: no figure, not 0


def test_a_figure_not_measured_is_labelled_an_estimate() -> None:
    guess = ModelMemory(100 * MIB, 10 * MIB, 30 * MIB, projector=5 * MIB)
    assert guess.how() == "estimated" and not guess.as_dict()["measured"]
    half = measured(90 * MIB, 1000, 1024, guess)  # no compute line in the log
    assert half.compute == 30 * MIB and half.how() == "compute buffers estimated"
    assert half.kv == 1000 * 1024 and half.projector == 5 * MIB
    whole = measured(90 * MIB, 1000, 1024, guess, logged_buffers(LOG))
    assert whole.compute_measured and whole.how() == "measured"
    assert whole.total == 90 * MIB + 1000 * 1024 + whole.compute + 5 * MIB and whole.compute > 15 * MIB
    assert whole.as_dict()["compute_measured"] is True
