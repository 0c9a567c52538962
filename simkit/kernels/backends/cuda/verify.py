"""NVRTC verification: check that generated modules compile for GPU architectures, without a GPU.

CI has no GPU, so every module the test suite builds for the CPU is also compiled by NVRTC
(``module.verify_cuda``), in a worker process beside the tests, or between them under pytest-xdist
(``in_process``). NVRTC's optimiser and PTX generation are most of a module's compile (warp-lang's
``test_vec_scalar_ops`` module, 1.7 MB of CUDA: front end 0.9 s, to NVVM IR 2.3 s, to PTX 15 s even
unoptimised with ``-G``; 2026-12-07). So:

- the first architecture of ``config.verify_cuda_archs`` goes through the front end and NVVM IR generation
  (``-dlto``: what NVRTC hands on to link-time optimisation), which instantiates everything a kernel needs
  for that architecture; PTX and GPU code are generated when a GPU loads the module, and
  tests/test_kernel_resource_usage.py takes sample modules through ``ptxas``;
- the others go through NVRTC's front end only (``-fdevice-syntax-only``): parsing, templates and
  types under that architecture's ``__CUDA_ARCH__``;
- modules are compiled in batches, each module's code (what follows the shared prelude) in a
  namespace of its own in one translation unit, with NVRTC's automatic precompiled header. A batch
  that fails is compiled again module by module, and only a module that fails alone is reported,
  with its own NVRTC log.

Verified modules leave a marker in the cache, so a second run verifies only what changed.
"""
from __future__ import annotations

import hashlib
import os
import re

from ..cpu import _atomic_write, cache_root
from . import nvrtc

#: modules per NVRTC compile: enough to amortise the header, few enough to keep a failure's re-run short
BATCH = 24
PCH = ["-pch"]  # NVRTC's automatic precompiled header: parsed once per worker process
SYNTAX = ["-fdevice-syntax-only"]
NVVM_IR = ["-dlto"]  # (the full check: front end and NVVM IR, without the optimiser and PTX generation)
_MODULE_MARK = "\n// module: "
_SK_BLOCK = re.compile(r"^namespace sk \{ (SK_INLINE void accum)\((\w+)& a, const (\w+)& b\) \{$")

#: compile batches in this process, as they fill (pytest-xdist workers: the tests' own load balancing then
#: spreads NVRTC's work too); else in one worker process beside this one
in_process = False

_pool = None
_queues: dict = {}  # (prelude, arch, full) -> [(name, body, key)]
_pending: list = []  # futures of batches
_seen: set = set()


def target(arch: str) -> str:
    """``sm_XX`` -> ``compute_XX``: verification stops before PTX (no GPU assembler run)."""
    return "compute_" + arch.split("_", 1)[1] if arch.startswith("sm_") else arch


def split(source: str) -> tuple:
    """(prelude, body): the shared includes and macros, and the module's own code; (source, "") for a
    source not made by ``codegen.gen_module`` (verified alone)."""
    at = source.find(_MODULE_MARK)
    if at < 0:
        return source, ""
    return source[:at + 1], source[at + 1:]


def namespaced(body: str, ns: str) -> str:
    """A module's code inside ``namespace ns``, as one part of a batch.

    Kernels lose ``extern "C"`` (two modules may hold the same kernel); the ``sk::accum`` overloads
    of structs (adjoint.gen_struct_accum) step out to namespace ``sk`` with the struct named in full.
    """
    out = [f"namespace {ns} {{"]
    in_sk = False
    for line in body.split("\n"):
        m = _SK_BLOCK.match(line)
        if m:
            out.append(f"}} namespace sk {{ {m.group(1)}({ns}::{m.group(2)}& a, const {ns}::{m.group(3)}& b) {{")
            in_sk = True
        elif in_sk and line == "} }":
            out.append(f"}} }} namespace {ns} {{")
            in_sk = False
        else:
            out.append(line.replace('extern "C" ', ""))
    out.append(f"}}  // namespace {ns}")
    return "\n".join(out)


def batch_source(prelude: str, bodies: list) -> str:
    return prelude + "\n".join(namespaced(b, f"_skv{i}") for i, b in enumerate(bodies))


def _options(full: bool) -> list:
    return PCH + NVVM_IR if full else PCH + SYNTAX


def _key(source: str, arch: str, full: bool) -> str:
    from ...module import generator_hash

    opts = " ".join(nvrtc.options(arch) + _options(full))
    return hashlib.sha256("\0".join([source, arch, nvrtc.version(), opts, generator_hash()]).encode()).hexdigest()


def _marker(key: str) -> str:
    return os.path.join(cache_root(), "cuda", "verified", key[:2], key)


def _verify_batch(prelude: str, members: list, arch: str, full: bool) -> int:
    """Worker: compile a batch; where it fails, compile its modules alone and raise the first error."""
    extra = _options(full)
    try:
        if len(members) > 1:
            nvrtc.check(batch_source(prelude, [m[1] for m in members]), arch, "verify_batch", extra)
        else:
            nvrtc.check(prelude + members[0][1], arch, members[0][0], extra)
    except Exception:
        if len(members) == 1:
            raise
        for name, body, _ in members:
            nvrtc.check(prelude + body, arch, name, extra)  # raises NativeCompileError naming it
    for _, _, key in members:
        _atomic_write(_marker(key), b"")
    return len(members)


class _Inline:
    """An executor that runs each job at once, in this process."""

    def submit(self, fn, *args):
        import concurrent.futures as cf

        fut = cf.Future()
        try:
            fut.set_result(fn(*args))
        except Exception as e:
            fut.set_exception(e)
        return fut


def _workers():
    global _pool
    import concurrent.futures as cf
    import multiprocessing as mp

    if in_process:
        return _Inline()
    if _pool is None:  # one process: the tests run beside it (CI has two cores)
        _pool = cf.ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn"))
    return _pool


def _submit(queue_key: tuple) -> None:
    members = _queues.pop(queue_key, [])
    if members:
        _pending.append(_workers().submit(_verify_batch, queue_key[0], members, *queue_key[1:]))


def verify_async(source: str, archs, name: str) -> None:
    """Queue ``source`` for NVRTC verification for GPU architectures ``archs`` (the first compiled to
    NVVM IR, the others checked by the front end); ``wait()`` raises what fails."""
    prelude, body = split(source)
    for i, arch in enumerate(archs):
        arch, full = target(arch), i == 0
        key = _key(source, arch, full)
        if key in _seen or os.path.exists(_marker(key)):
            continue
        _seen.add(key)
        queue = _queues.setdefault((prelude, arch, full), [])
        queue.append((name, body, key))
        if len(queue) >= BATCH or not body:  # a full batch, or a source that is not batched
            _submit((prelude, arch, full))


def wait() -> int:
    """Verify what is queued and wait for every batch; raise NativeCompileError for the first failure.
    Returns the number of module builds verified."""
    global _pool
    for queue_key in list(_queues):
        _submit(queue_key)
    done = 0
    try:
        while _pending:
            done += _pending.pop(0).result()
    finally:
        if _pool is not None and not _pending:
            _pool.shutdown()
            _pool = None
    return done
