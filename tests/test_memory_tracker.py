"""Allocation tracking (runtime/memory_tracker.py): ScopedMemoryTracker, print_memory_report, config.track_memory."""
import gc
import io

import numpy as np
import pytest

import simkit as sk
from simkit.runtime import memory_tracker


@pytest.fixture(autouse=True)
def _fresh_records():
    memory_tracker.clear()
    yield
    memory_tracker.clear()


def test_allocations_are_counted_with_scope_device_label_and_call_site(device):
    with sk.ScopedMemoryTracker("outer", print=False):
        a = sk.zeros(100, dtype=float, device=device)
        with sk.ScopedMemoryTracker("inner", print=False):
            b = sk.array(np.ones((4, 3), np.float32), device=device)
            view = b[1:]  # (a view allocates nothing)
        s = memory_tracker.stats()
        text = memory_tracker.report_text()
    assert s["total_count"] == 2 and s["total_bytes"] == 100 * 4 + 12 * 4 == s["live_bytes"]
    alias = sk.get_device(device).alias
    assert f"outer: 1 allocation(s), 400 B" in text and "outer/inner: 1 allocation(s), 48 B" in text
    assert f"{alias}: 2 allocation(s), 448 B" in text
    assert "array[float32, 100]" in text and "array[float32, 4x3]" in text
    assert "test_memory_tracker.py:" in text and "(test_allocations_are_counted" in text
    del a, b, view


def test_freed_memory_leaves_the_live_set_and_the_peak_stays(device):
    with sk.ScopedMemoryTracker("free", print=False):
        a = sk.zeros(1000, dtype=float, device=device)
        b = sk.zeros(10, dtype=float, device=device)
        del a
        gc.collect()
        s = memory_tracker.stats()
    assert s["total_count"] == 2 and s["live_count"] == 1 and s["live_bytes"] == 40
    assert s["peak_bytes"] == 4040
    del b


def test_gradients_are_allocations_too(device):
    with sk.ScopedMemoryTracker("grad", print=False):
        a = sk.zeros(8, dtype=float, device=device, requires_grad=True)
        s = memory_tracker.stats()
    assert s["total_count"] == 2 and s["total_bytes"] == 64
    del a


def test_reports_print_sort_and_refuse_when_inactive():
    out = []
    with sk.ScopedMemoryTracker("r", report_func=out.append) as tracker:
        small = sk.zeros(2, device="cpu")
        large = sk.zeros(64, device="cpu")
    assert len(out) == 1 and out[0].startswith("Allocation Tracking Report")
    lines = out[0].splitlines()
    first = lines.index("Live allocations (largest first, at most 10):")
    assert "array[float32, 64]" in lines[first + 1] and "array[float32, 2]" in lines[first + 2]
    buf = io.StringIO()
    tracker.report(file=buf, sort="chronological", max_items=1)
    text = buf.getvalue()
    assert "array[float32, 2]" in text and "array[float32, 64]" not in text.split("oldest first")[1]
    with pytest.raises(ValueError, match="sort order"):
        tracker.report(sort="name")
    with pytest.raises(RuntimeError, match="not active"):
        sk.print_memory_report()
    del small, large


def test_config_track_memory_tracks_without_a_scope(monkeypatch):
    monkeypatch.setattr(sk.config, "track_memory", True)
    a = sk.zeros(5, device="cpu")
    buf = io.StringIO()
    sk.print_memory_report(file=buf)
    assert "(no scope): 1 allocation(s), 20 B" in buf.getvalue()
    monkeypatch.setattr(sk.config, "track_memory", False)
    b = sk.zeros(5, device="cpu")
    assert memory_tracker.stats()["total_count"] == 1  # nothing recorded while off
    del a, b
