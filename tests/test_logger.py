"""The logger (simkit/logger.py): replaceable, gated by config.log_level, and where print_launches and the
compiler's verbose lines go."""
import io
import sys
import warnings

import numpy as np
import pytest

import simkit as sk
from simkit import logger as L


class Collect:
    def __init__(self):
        self.records = []

    def debug(self, message):
        self.records.append(("debug", message))

    def info(self, message):
        self.records.append(("info", message))

    def warning(self, message, category=None, stacklevel=1):
        self.records.append(("warning", message, category))

    def error(self, message):
        self.records.append(("error", message))


@sk.kernel
def fill(a: sk.array(dtype=float), v: float):
    a[sk.tid()] = v


def test_set_logger_checks_the_methods_and_none_restores_the_default():
    class Half:
        def debug(self, message):
            pass

        def info(self, message):
            pass

    with pytest.raises(TypeError, match="lacks warning, error"):
        sk.set_logger(Half())
    with pytest.raises(TypeError, match="str lacks"):
        sk.set_logger("not a logger")
    c = Collect()
    sk.set_logger(c)
    try:
        assert sk.get_logger() is c and isinstance(c, sk.Logger)
    finally:
        sk.set_logger(None)
    assert isinstance(sk.get_logger(), L.LoggerBasic)
    with pytest.raises(TypeError):
        sk.Logger()  # a protocol


def test_log_level_gates_debug_info_and_warning_but_not_errors():
    c = Collect()
    with sk.ScopedLogger(c), warnings.catch_warnings():
        warnings.simplefilter("always")
        for level in (sk.LOG_DEBUG, sk.LOG_INFO, sk.LOG_WARNING, sk.LOG_ERROR, sk.LOG_ERROR + 10):
            with sk.ScopedLogLevel(level):
                L.log_debug(f"d{level}")
                L.log_info(f"i{level}")
                L.log_warning(f"w{level}")
                L.log_error(f"e{level}")
    got = [r[1] for r in c.records]
    expected = []
    for level in (10, 20, 30, 40, 50):
        expected += [f"{k}{level}" for k, lvl in (("d", 10), ("i", 20), ("w", 30)) if level <= lvl] + [f"e{level}"]
    assert got == expected
    assert sk.get_logger() is L._basic


def test_scopes_restore_on_exceptions():
    level, before = sk.config.log_level, sk.get_logger()
    with pytest.raises(RuntimeError):
        with sk.ScopedLogger(Collect()), sk.ScopedLogLevel(sk.LOG_ERROR):
            assert sk.config.log_level == sk.LOG_ERROR
            raise RuntimeError("boom")
    assert sk.config.log_level == level and sk.get_logger() is before


def test_basic_logger_streams(capsys):
    b = L.LoggerBasic()
    b.debug("a")
    b.info("b")
    b.error("c")
    out, err = capsys.readouterr()
    assert out == "a\nb\n" and err == "Warp Error: c\n"


def test_warnings_point_at_the_caller_and_once_means_once():
    L._warnings_seen.discard((UserWarning, "only once"))
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        L.log_warning("plain", UserWarning)
        L.log_warning("only once", UserWarning, once=True)
        L.log_warning("only once", UserWarning, once=True)
        L.log_warning("old api", DeprecationWarning)  # deprecations: once without asking
        L.log_warning("old api", DeprecationWarning)
    assert [str(r.message) for r in rec] == ["plain", "only once", "old api"]
    assert all(r.filename == __file__ for r in rec)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("ignore", DeprecationWarning)  # the user's filters apply
        L.log_warning("filtered", DeprecationWarning)
    assert rec == []


def test_print_launches_goes_to_the_logger_not_stdout(capsys):
    a = sk.zeros(5)
    c = Collect()
    with sk.ScopedLogger(c):
        sk.config.print_launches = True
        try:
            sk.launch(fill, 5, inputs=[a, 2.5])
        finally:
            sk.config.print_launches = False
        sk.launch(fill, 5, inputs=[a, 3.0])  # (off again: not logged)
    assert capsys.readouterr().out == ""
    assert len(c.records) == 1 and c.records[0][0] == "info"
    assert c.records[0][1].startswith("kernel: fill dim: 5 inputs: [") and c.records[0][1].endswith("device: cpu")
    np.testing.assert_array_equal(a.numpy(), np.full(5, 3.0, np.float32))


def test_compiler_commands_are_logged_at_debug_level(tmp_path, monkeypatch):
    monkeypatch.setattr(sk.config, "cache_dir", str(tmp_path))  # (a cold cache: the compiler runs)

    @sk.kernel
    def twice(a: sk.array(dtype=float)):
        a[sk.tid()] = 2.0 * a[sk.tid()]

    a = sk.full(3, 1.5)
    c = Collect()
    with sk.ScopedLogger(c), sk.ScopedLogLevel(sk.LOG_DEBUG):
        sk.launch(twice, 3, inputs=[a])
    lines = [r[1] for r in c.records if r[0] == "debug"]
    assert any(line.startswith("simkit: ") and " -o " in line for line in lines), lines
    np.testing.assert_array_equal(a.numpy(), [3.0, 3.0, 3.0])
    c.records.clear()
    with sk.ScopedLogger(c):  # the default level (info): nothing
        sk.launch(twice, 3, inputs=[a])
    assert c.records == []


def test_default_logger_follows_redirected_streams():
    old, sys.stdout = sys.stdout, io.StringIO()
    try:
        with sk.ScopedLogLevel(sk.LOG_DEBUG):
            L.log_debug("to the current stdout")
        text = sys.stdout.getvalue()
    finally:
        sys.stdout = old
    assert text == "to the current stdout\n"


def test_basic_logger_prints_warnings_in_warps_format_and_recording_still_records():
    python_format = warnings.formatwarning
    err = io.StringIO()
    old, sys.stderr = sys.stderr, err
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            # (printed as a plain Python run prints: pytest records warnings instead of showing them)
            warnings.showwarning = lambda m, c, f, n, file=None, line=None: sys.stderr.write(
                warnings.formatwarning(m, c, f, n, line))
            L.log_warning("twice")
            L.log_warning("twice")  # (logged each time, as Warp's)
    finally:
        sys.stderr = old
    assert err.getvalue() == "Warp UserWarning: twice\nWarp UserWarning: twice\n"
    assert warnings.formatwarning is python_format  # (Python's format back for everyone else)
    with warnings.catch_warnings(record=True) as rec:  # (pytest.warns and recwarn record this way)
        warnings.simplefilter("always")
        L.log_warning("recorded", RuntimeWarning)
    assert [(str(r.message), r.category) for r in rec] == [("recorded", RuntimeWarning)]
