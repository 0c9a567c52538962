"""Key-value sorts: ``radix_sort_pairs`` and ``segmented_sort_pairs`` (Warp's ``wp.utils`` names).

A stable LSD radix sort with 8-bit digits. Keys are first mapped in place to unsigned integers that
order as the keys do (signed: sign bit flipped; float: all bits flipped for negatives, the sign bit for
the rest), and mapped back at the end; ``begin_bit``/``end_bit`` select bits of the mapped key, as in CUB.
Each pass splits the keys into contiguous blocks: per-block digit counts, their offsets (digit-major
over blocks, so the pass is stable), then each block scatters its pairs in order. As in Warp, the
second halves ``keys[count:2*count]`` and ``values[count:2*count]`` are scratch storage.
"""
from __future__ import annotations



from ..kernels import kernel
from ..kernels import lang as sk
from ..kernels import types as T
from ..runtime import array, copy, empty
from ._common import blocks, capturing, run, type_repr, type_size_in_bytes

RADIX_BITS = 8
_RADIX = 1 << RADIX_BITS
_KEY_BITS = {T.int32: 32, T.uint32: 32, T.float32: 32, T.int64: 64, T.uint64: 64, T.float64: 64}
_KEY_MODE = {T.int32: 1, T.int64: 1, T.float32: 2, T.float64: 2}  # 0: unsigned, 1: signed, 2: float
_UINT = {4: T.uint32, 8: T.uint64}


@kernel
def _twiddle(keys: array(dtype=T.Any), mode: int, top: int, inverse: int):
    # map keys (as unsigned bits) to keys that order as unsigned integers, or back (inverse != 0):
    # signed keys flip the sign bit; float keys flip every bit of negatives and the sign bit of the rest
    i = sk.tid()
    u = keys[i]
    one = keys.dtype(1)
    sign = one << keys.dtype(top)
    flip = sign
    if mode == 2:
        neg = u >> keys.dtype(top)  # 1: a negative float (forward), or a mapped positive one (inverse)
        if inverse != 0:
            neg = neg ^ one
        flip = (keys.dtype(0) - neg) | sign
    keys[i] = u ^ flip


@kernel(_parallel_min=1)
def _radix_count(keys: array(dtype=T.Any), hist: array(dtype=int), n: int, chunk: int, shift: int, mask: int):
    # hist[b * 256 + d]: how many keys of block b have digit d
    b = sk.tid()
    base = b * 256
    for d in range(256):
        hist[base + d] = 0
    s = keys.dtype(shift)
    m = keys.dtype(mask)
    for i in range(b * chunk, sk.min(n, b * chunk + chunk)):
        d = base + int((keys[i] >> s) & m)
        hist[d] = hist[d] + 1


@kernel
def _radix_digit_offsets(hist: array(dtype=int), totals: array(dtype=int), nb: int):
    # per digit d (one thread each): hist[b * 256 + d] becomes the count of digit d in blocks < b
    d = sk.tid()
    s = int(0)
    for b in range(nb):
        c = hist[b * 256 + d]
        hist[b * 256 + d] = s
        s = s + c
    totals[d] = s


@kernel
def _radix_digit_bases(totals: array(dtype=int)):
    # dim=1: exclusive prefix sum over the 256 digit totals, in place
    s = int(0)
    for d in range(256):
        c = totals[d]
        totals[d] = s
        s = s + c


@kernel(_parallel_min=1)
def _radix_scatter(src_keys: array(dtype=T.Any), src_vals: array(dtype=T.Any), dst_keys: array(dtype=T.Any),
                   dst_vals: array(dtype=T.Any), hist: array(dtype=int), totals: array(dtype=int), n: int,
                   chunk: int, shift: int, mask: int):
    b = sk.tid()
    base = b * 256
    for d in range(256):
        hist[base + d] = hist[base + d] + totals[d]
    s = src_keys.dtype(shift)
    m = src_keys.dtype(mask)
    for i in range(b * chunk, sk.min(n, b * chunk + chunk)):
        k = src_keys[i]
        d = base + int((k >> s) & m)
        p = hist[d]
        hist[d] = p + 1
        dst_keys[p] = k
        dst_vals[p] = src_vals[i]


def _bits_view(a: array, count: int) -> array:
    """``a[:count]`` as unsigned integers of the element's width (4 or 8 bytes), sharing memory."""
    a = a.flatten() if a.ndim != 1 else a
    width = type_size_in_bytes(a.dtype)
    u = _UINT[width]
    if a.dtype is not u:
        if T.is_scalar(a.dtype):
            a = a.view(u)
        else:  # a 4- or 8-byte vector (vec2h, vec2f, ...): the same bytes as one unsigned integer each
            a = array(ptr=a.ptr, dtype=u, shape=(a.shape[0],), device=a.device, _owner=a)
    return a[:count]


def _one_digit(bases, n: int) -> bool:
    """Whether the digit bases (exclusive prefix sums of the digit counts) put all ``n`` keys on one digit."""
    return bool(((bases == 0) | (bases == n)).all())


def sort_bits(keys: array, vals: array, tkeys: array, tvals: array, n: int, begin_bit: int, end_bit: int):
    """Stable radix sort of the unsigned ``keys[:n]`` (with ``vals``) on bits [begin_bit, end_bit), using
    ``tkeys``/``tvals`` as scratch; the result is left in ``keys``/``vals``. On the CPU a pass whose digit is
    the same for every key is skipped."""
    dev = keys.device
    nb, chunk = blocks(n, dev, cpu_chunk=65536, gpu_chunk=512)
    hist = empty(nb * _RADIX, dtype=int, device=dev)
    totals = empty(_RADIX, dtype=int, device=dev)
    src, dst = (keys, vals), (tkeys, tvals)
    for shift in range(begin_bit, end_bit, RADIX_BITS):
        mask = (1 << min(RADIX_BITS, end_bit - shift)) - 1
        run(_radix_count, nb, [src[0], hist, n, chunk, shift, mask], dev)
        run(_radix_digit_offsets, _RADIX, [hist, totals, nb], dev)
        run(_radix_digit_bases, 1, [totals], dev)
        if dev.is_cpu and not capturing(dev) and _one_digit(totals.numpy(), n):
            continue  # every key has the same digit: the pass would not move anything
        run(_radix_scatter, nb, [*src, *dst, hist, totals, n, chunk, shift, mask], dev)
        src, dst = dst, src
    if src[0] is not keys:
        copy(keys, src[0], count=n)
        copy(vals, src[1], count=n)


def radix_sort_pairs(keys: array, values: array, count: int, begin_bit: int = 0, end_bit: int | None = None) -> None:
    """Sort ``keys[:count]`` ascending, in place and stably, moving ``values[:count]`` along (Warp's
    ``wp.utils.radix_sort_pairs``).

    Keys: ``int32 uint32 float32 int64 uint64 float64``; values: any 4- or 8-byte dtype. Both arrays must be
    contiguous, on one device, and hold ``2 * count`` elements (the second half is scratch). Only the key
    bits in [``begin_bit``, ``end_bit``) are compared (default: all). Not recorded on a Tape.

    >>> import simkit as sk
    >>> keys = sk.array([3, 1, 2, 0, 0, 0], dtype=int)
    >>> values = sk.array([30, 10, 20, 0, 0, 0], dtype=int)
    >>> sk.utils.radix_sort_pairs(keys, values, 3)
    >>> values.numpy()[:3].tolist()
    [10, 20, 30]
    """
    if keys.device != values.device:
        raise RuntimeError(f"Keys and values array storage devices do not match ({keys.device} vs {values.device})")
    if count == 0:
        return
    if keys.size < 2 * count or values.size < 2 * count:
        raise RuntimeError("Keys and values array storage must be large enough to contain 2*count elements")
    types = f"{type_repr(keys.dtype)}, {type_repr(values.dtype)}"
    if type_size_in_bytes(values.dtype) not in (4, 8):
        raise RuntimeError(f"Unsupported keys and values data types: {types}")
    if not keys.is_contiguous:
        raise RuntimeError(f"radix_sort_pairs() requires a contiguous keys array, got non-contiguous keys with "
                           f"data types: {types}")
    if not values.is_contiguous:
        raise RuntimeError(f"radix_sort_pairs() requires a contiguous values array, got non-contiguous values with "
                           f"data types: {types}")
    width = _KEY_BITS.get(keys.dtype)
    if width is None:
        raise RuntimeError(f"Unsupported keys and values data types: {types}")
    if end_bit is None:
        end_bit = width
    if not isinstance(begin_bit, int) or not isinstance(end_bit, int):
        raise RuntimeError("begin_bit and end_bit must be integers")
    if not 0 <= begin_bit <= end_bit <= width:
        raise RuntimeError(f"Invalid radix sort bit range [{begin_bit}, {end_bit}) for {width}-bit keys")
    if begin_bit == end_bit:
        return
    k = _bits_view(keys, 2 * count)
    v = _bits_view(values, 2 * count)
    mode = _KEY_MODE.get(keys.dtype, 0)
    dev = keys.device
    if mode:
        run(_twiddle, count, [k, mode, width - 1, 0], dev)
    sort_bits(k[:count], v[:count], k[count:], v[count:], count, begin_bit, end_bit)
    if mode:
        run(_twiddle, count, [k, mode, width - 1, 1], dev)
