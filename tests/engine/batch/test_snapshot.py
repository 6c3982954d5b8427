"""The rate figures the slots table shows."""

from prefill.engine.batch.snapshot import RateMeter, recent_rate


def test_recent_rate_reads_the_window_from_token_times() -> None:
    times = [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0]
    # over the last 2 s at t=3: tokens at 1.0 … 3.0, the first opening the window
    assert recent_rate(times, 3.0, window_s=2.0) == 4 / 2.0
    assert recent_rate(times, 10.0, window_s=2.0) == 0.0  # all older than the window
    assert recent_rate([1.0], 1.5) == 0.0  # one token is no rate
    assert recent_rate([], 1.0) == 0.0


def test_recent_rate_agrees_with_a_meter_fed_one_event_at_a_time() -> None:
    meter = RateMeter(window_s=1.0)
    times = [i * 0.013 for i in range(300)]
    for t in times:
        meter.add(t, 1)
    for now in (times[-1], times[-1] + 0.4, times[-1] + 0.99):
        assert abs(recent_rate(times, now, window_s=1.0) - meter.rate(now)) < 1e-9
