"""GGML's storage formats (every GgmlDType of Candle: f32, f16, bf16, q4_0, q4_1, q5_0, q5_1,
q8_0, q8_1, q2_K .. q6_K, q8_K) on the host, bit-exact.

Byte for byte the output of GGML's reference quantizers (`quantize_row_*_ref` and
`dequantize_row_*` in ggml/src/ggml-quants.c, block structs in ggml-common.h, the f16 / bf16
conversions of ggml-impl.h),
vectorised with numpy over blocks. Exactness rests on doing the C code's float32 operations
one by one, in its order:

* no fused multiply-add: GGML's quantizers live in ggml-base, built without -march flags,
  so on x86-64 they have none (builds that contract a*b + c write other K-quant bytes);
* every C loop `s += t[i]` is a left-to-right float32 sum (`_seq_sum`), never numpy's
  pairwise `sum`; arrays are laid out element-major, (elements, blocks), so that each step of
  such a sum is one vector add over all blocks;
* `nearest_int` is GGML's own bit trick (round half to even), `roundf` rounds half away
  from zero, float -> int8 casts truncate and wrap like x86's cvttss2si;
* f16 conversion rounds to nearest even (numpy's float32 -> float16 cast, as GGML's);
* where C keeps the first of equal candidates (max |x|, min/max of a block) the sign of a
  zero can reach the bytes, so the first one is taken here too.

Inputs with NaN or infinities are outside that contract (GGML itself gives meaningless bytes).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from runtime.errors import DTypeMismatch, ShapeMismatch

BACKEND = "cpu"
F32 = np.float32
U8 = np.uint8
QK_K = 256
#: Values per vectorised pass: keeps the K-quant searches' temporaries in cache.
_CHUNK_ELEMS = 1 << 16


@dataclass(frozen=True)
class Format:
    name: str
    block: int  # elements per block
    nbytes: int  # bytes per block
    ggml_type: int  # enum ggml_type


#: The block structs of ggml-common.h, field for field (little-endian, unpadded).
_STRUCTS: dict[str, np.dtype] = {
    "f32": np.dtype("<f4"),
    "f16": np.dtype("<f2"),
    "bf16": np.dtype("<u2"),
    "q4_0": np.dtype([("d", "<f2"), ("qs", U8, 16)]),
    "q4_1": np.dtype([("d", "<f2"), ("m", "<f2"), ("qs", U8, 16)]),
    "q5_0": np.dtype([("d", "<f2"), ("qh", "<u4"), ("qs", U8, 16)]),
    "q5_1": np.dtype([("d", "<f2"), ("m", "<f2"), ("qh", "<u4"), ("qs", U8, 16)]),
    "q8_0": np.dtype([("d", "<f2"), ("qs", np.int8, 32)]),
    "q8_1": np.dtype([("d", "<f2"), ("s", "<f2"), ("qs", np.int8, 32)]),
    "q2_k": np.dtype([("scales", U8, 16), ("qs", U8, 64), ("d", "<f2"), ("dmin", "<f2")]),
    "q3_k": np.dtype([("hmask", U8, 32), ("qs", U8, 64), ("scales", U8, 12), ("d", "<f2")]),
    "q4_k": np.dtype([("d", "<f2"), ("dmin", "<f2"), ("scales", U8, 12), ("qs", U8, 128)]),
    "q5_k": np.dtype([("d", "<f2"), ("dmin", "<f2"), ("scales", U8, 12), ("qh", U8, 32), ("qs", U8, 128)]),
    "q6_k": np.dtype([("ql", U8, 128), ("qh", U8, 64), ("scales", np.int8, 16), ("d", "<f2")]),
    "q8_k": np.dtype([("d", "<f4"), ("qs", np.int8, 256), ("bsums", "<i2", 16)]),
}

FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format("f32", 1, 4, 0),
        Format("f16", 1, 2, 1),
        Format("bf16", 1, 2, 30),
        Format("q4_0", 32, 18, 2),
        Format("q4_1", 32, 20, 3),
        Format("q5_0", 32, 22, 6),
        Format("q5_1", 32, 24, 7),
        Format("q8_0", 32, 34, 8),
        Format("q8_1", 32, 36, 9),
        Format("q2_k", QK_K, 84, 10),
        Format("q3_k", QK_K, 110, 11),
        Format("q4_k", QK_K, 144, 12),
        Format("q5_k", QK_K, 176, 13),
        Format("q6_k", QK_K, 210, 14),
        Format("q8_k", QK_K, 292, 15),
    )
}
#: The formats that hold plain floats, one value an element (GGML's "blocks" of 1).
PLAIN = ("f32", "f16", "bf16")


def format_of(op: str, fmt, backend: str = BACKEND) -> Format:
    """The Format named by `fmt`: a name ("q4_K" or "q4_k") or an Enum member whose value is one.
    `backend` names the backend the error speaks for (the GPU runtimes share these checks)."""
    name = str(fmt.value if hasattr(fmt, "value") else fmt).lower()
    try:
        return FORMATS[name]
    except KeyError:
        raise DTypeMismatch(op, backend, expected=sorted(FORMATS), got=str(fmt)) from None


def block_count(op: str, f: Format, elem_count: int, backend: str = BACKEND) -> int:
    if elem_count < 0 or elem_count % f.block:
        raise ShapeMismatch(op, backend, f"a multiple of {f.block} elements ({f.name})", elem_count)
    return elem_count // f.block


def block_view(data: np.ndarray, fmt, op: str = "block_view") -> np.ndarray:
    """The blocks of `data` (GGML bytes) as a structured array with the C struct's fields."""
    f = format_of(op, fmt)
    raw = _bytes(op, data)
    if raw.size % f.nbytes:
        raise ShapeMismatch(op, BACKEND, f"a multiple of {f.nbytes} bytes ({f.name})", raw.size)
    return raw.view(_STRUCTS[f.name])


def quantize(values: np.ndarray, fmt) -> np.ndarray:
    """f32 values (any shape) -> GGML blocks as 1-D uint8, as `quantize_row_<fmt>_ref` writes them."""
    f = format_of("quantize", fmt)
    x = np.ascontiguousarray(values, dtype=F32).reshape(-1)
    rows = x.reshape(block_count("quantize", f, x.size), f.block)
    out = np.empty(len(rows), dtype=_STRUCTS[f.name])
    step = max(1, _CHUNK_ELEMS // f.block)
    with np.errstate(all="ignore"):  # C divides by zero and overflows silently; so do we
        for start in range(0, len(rows), step):
            _QUANTIZERS[f.name](rows[start : start + step], out[start : start + step])
    return out.view(U8)


def dequantize(data: np.ndarray, fmt, elem_count: int) -> np.ndarray:
    """GGML blocks -> 1-D float32, as `dequantize_row_<fmt>` computes them."""
    f = format_of("dequantize", fmt)
    raw = _bytes("dequantize", data)
    nb = block_count("dequantize", f, int(elem_count))
    if raw.size != nb * f.nbytes:
        expected = f"{nb * f.nbytes} bytes for {elem_count} {f.name} elements"
        raise ShapeMismatch("dequantize", BACKEND, expected, raw.size)
    blocks = raw.view(_STRUCTS[f.name])
    with np.errstate(all="ignore"):
        return _DEQUANTIZERS[f.name](blocks).reshape(-1)


def _bytes(op: str, data) -> np.ndarray:
    raw = np.frombuffer(data, dtype=U8) if isinstance(data, (bytes, bytearray, memoryview)) else np.asarray(data)
    if raw.dtype != U8:
        raise DTypeMismatch(op, BACKEND, expected="uint8", got=str(raw.dtype))
    return np.ascontiguousarray(raw).reshape(-1)


# --------------------------------------------------------------------------- C arithmetic


def _f16(x: np.ndarray) -> np.ndarray:
    """GGML_FP32_TO_FP16: round to nearest even."""
    return np.asarray(x, dtype=F32).astype("<f2")


def _nearest_int(v: np.ndarray) -> np.ndarray:
    """GGML's nearest_int: add 1.5 * 2**23 in float32 and read the mantissa bits."""
    bits = (np.asarray(v, dtype=F32) + F32(12582912.0)).view(np.int32)
    return (bits & 0x007FFFFF) - 0x00400000


def _roundf(v: np.ndarray) -> np.ndarray:
    """C roundf: half away from zero (x - trunc(x) is exact in float32)."""
    t = np.trunc(v)
    return t + np.where(np.abs(v - t) >= F32(0.5), np.sign(v), F32(0))


def _to_int8(v: np.ndarray) -> np.ndarray:
    """A C float -> int8_t cast as gcc emits it on x86: truncate to int32, keep the low byte."""
    return np.trunc(v).astype(np.int32).astype(np.int8)


def _seq_sum(terms: np.ndarray) -> np.ndarray:
    """`for (i...) s += terms[i]` in float32: left to right over axis 0 (numpy's `sum` is
    pairwise, and its `add.accumulate` over a leading axis is slow)."""
    acc = terms[0].copy()
    for t in terms[1:]:
        acc += t
    return acc


def _first_where(x: np.ndarray, hit: np.ndarray, axis: int) -> np.ndarray:
    """Per block, the element of x at the first position where `hit` holds."""
    idx = np.expand_dims(np.argmax(hit, axis=axis), axis)
    return np.take_along_axis(x, idx, axis=axis).squeeze(axis)


def _first_max_abs(x: np.ndarray, axis: int) -> np.ndarray:
    """`if (amax < fabsf(v)) { amax = fabsf(v); max = v; }` from amax = max = 0: the first
    element of largest magnitude, +0.0 for an all-zero block."""
    a = np.abs(x)
    first = _first_where(x, a == a.max(axis=axis, keepdims=True), axis)
    return np.where(np.abs(first) > 0, first, F32(0))


def _pack_nibbles(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return (lo.astype(U8) & 0xF) | (hi.astype(U8) << 4)


def _f32(h: np.ndarray) -> np.ndarray:
    return h.astype(F32)


# --------------------------------------------------------------------------- q4_0, q4_1, q8_0


def _quantize_q4_0(x: np.ndarray, out: np.ndarray) -> None:
    d = _first_max_abs(x, axis=1) / F32(-8)
    inv = np.where(d != 0, F32(1) / d, F32(0))
    q = np.minimum(15, _to_int8(x * inv[:, None] + F32(8.5))).astype(U8)
    out["d"] = _f16(d)
    out["qs"] = _pack_nibbles(q[:, :16], q[:, 16:])


def _quantize_q4_1(x: np.ndarray, out: np.ndarray) -> None:
    lo = _first_where(x, x == x.min(axis=1, keepdims=True), axis=1)
    hi = _first_where(x, x == x.max(axis=1, keepdims=True), axis=1)
    d = (hi - lo) / F32(15)
    inv = np.where(d != 0, F32(1) / d, F32(0))
    q = np.minimum(15, _to_int8((x - lo[:, None]) * inv[:, None] + F32(0.5))).astype(U8)
    out["d"], out["m"] = _f16(d), _f16(lo)
    out["qs"] = _pack_nibbles(q[:, :16], q[:, 16:])


def _quantize_q8_0(x: np.ndarray, out: np.ndarray) -> None:
    d = np.abs(x).max(axis=1) / F32(127)
    inv = np.where(d != 0, F32(1) / d, F32(0))
    out["d"] = _f16(d)
    out["qs"] = _to_int8(_roundf(x * inv[:, None]))


def _nibbles(qs: np.ndarray) -> np.ndarray:
    """(blocks, n) bytes -> (blocks, 2n): all low nibbles, then all high nibbles."""
    return np.concatenate([qs & 0xF, qs >> 4], axis=1)


def _dequantize_q4_0(b: np.ndarray) -> np.ndarray:
    return (_nibbles(b["qs"]).astype(np.int32) - 8).astype(F32) * _f32(b["d"])[:, None]


def _dequantize_q4_1(b: np.ndarray) -> np.ndarray:
    return _nibbles(b["qs"]).astype(F32) * _f32(b["d"])[:, None] + _f32(b["m"])[:, None]


def _dequantize_q8_0(b: np.ndarray) -> np.ndarray:
    return b["qs"].astype(F32) * _f32(b["d"])[:, None]


# --------------------------------------------------------------------------- q4_K


def _make_qkx2_quants(x: np.ndarray, w: np.ndarray, nmax: int, rmin: float, rdelta: float, nstep: int, mad=False):
    """make_qkx2_quants for every sub-block at once; `mad`: its use_mad (|error|, not squared).

    x, w: (n, blocks) values and weights. Returns (scale, the_min, L) with L (n, blocks).
    """
    lo, hi = np.minimum(x.min(axis=0), F32(0)), x.max(axis=0)  # `if (min > 0) min = 0`
    flat, flat_min = hi == lo, lo
    sum_w, sum_x = _seq_sum(np.stack([w, w * x], axis=1))

    def levels(iscale, the_min):
        return np.clip(_nearest_int(iscale * (x - the_min)), 0, nmax).astype(F32)

    def error(scale, the_min, L):
        diff = scale * L + the_min - x
        return _seq_sum(w * (np.abs(diff) if mad else np.square(diff)))

    iscale = F32(nmax) / (hi - lo)
    scale = F32(1) / iscale
    L = levels(iscale, lo)
    best = error(scale, lo, L)
    for step in range(nstep + 1):
        # `min` moves with the best fit, so the next grid point is taken from it.
        iscale = (F32(rmin) + F32(rdelta) * F32(step) + F32(nmax)) / (hi - lo)
        laux = levels(iscale, lo)
        wl = w * laux
        sum_l, sum_l2, sum_xl = _seq_sum(np.stack([wl, wl * laux, wl * x], axis=1))
        D = sum_w * sum_l2 - sum_l * sum_l
        this_scale = (sum_w * sum_xl - sum_x * sum_l) / D
        this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D
        clamp = this_min > 0
        this_min = np.where(clamp, F32(0), this_min)
        this_scale = np.where(clamp, sum_xl / sum_l2, this_scale)
        cur = error(this_scale, this_min, laux)
        better = (D > 0) & (cur < best)
        L = np.where(better, laux, L)
        best = np.where(better, cur, best)
        scale = np.where(better, this_scale, scale)
        lo = np.where(better, this_min, lo)
    return np.where(flat, F32(0), scale), -np.where(flat, flat_min, lo), np.where(flat, F32(0), L)


def _positive_max(v: np.ndarray) -> np.ndarray:
    """`float m = 0; if (v > m) m = v;` over a block's sub-blocks: +0.0 when none is positive."""
    top = v.max(axis=1)
    return np.where(top > 0, top, F32(0))


def _pack_scale_min_k4(ls: np.ndarray, lm: np.ndarray) -> np.ndarray:
    """6-bit scales and mins (blocks, 8) -> block_q4_K.scales (blocks, 12)."""
    return np.concatenate(
        [
            ls[:, :4] | ((ls[:, 4:] >> 4) << 6),
            lm[:, :4] | ((lm[:, 4:] >> 4) << 6),
            (ls[:, 4:] & 0xF) | ((lm[:, 4:] & 0xF) << 4),
        ],
        axis=1,
    )


def _unpack_scale_min_k4(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """get_scale_min_k4 for j = 0..7: block_q4_K.scales (blocks, 12) -> (scales, mins)."""
    sc = np.concatenate([q[:, :4] & 63, (q[:, 8:] & 0xF) | ((q[:, :4] >> 6) << 4)], axis=1)
    mn = np.concatenate([q[:, 4:8] & 63, (q[:, 8:] >> 4) | ((q[:, 4:8] >> 6) << 4)], axis=1)
    return sc, mn


def _to_6bit(v: np.ndarray) -> np.ndarray:
    """`uint8_t l = nearest_int(v); l = MIN(63, l);`"""
    return np.minimum(63, _nearest_int(v) & 0xFF).astype(U8)


def _k_scales_mins(x: np.ndarray, nmax: int, rmin: float, rdelta: float, nstep: int):
    """q4_K's and q5_K's sub-block fit (8 sub-blocks of 32 a block): (d, dmin, the 12 packed
    scale bytes, levels (blocks, 8, 32) in 0..nmax)."""
    nb = len(x)
    xs = np.ascontiguousarray(x.reshape(nb * 8, 32).T)  # (32, sub-blocks)
    av_x = np.sqrt(_seq_sum(xs * xs) / F32(32))
    weights = av_x + np.abs(xs)
    scales, mins, L = _make_qkx2_quants(xs, weights, nmax, rmin, rdelta, nstep)
    scales, mins = scales.reshape(nb, 8), mins.reshape(nb, 8)

    max_scale, max_min = (_positive_max(v) for v in (scales, mins))
    inv_scale = np.where(max_scale > 0, F32(63) / max_scale, F32(0))
    inv_min = np.where(max_min > 0, F32(63) / max_min, F32(0))
    ls = _to_6bit(inv_scale[:, None] * scales)
    lm = _to_6bit(inv_min[:, None] * mins)
    d, dmin = _f16(max_scale / F32(63)), _f16(max_min / F32(63))

    # Requantize with the stored (f16, 6-bit) scales; sub-blocks whose scale is 0 keep L.
    sub_d = (_f32(d)[:, None] * ls.astype(F32)).reshape(-1)
    sub_m = (_f32(dmin)[:, None] * lm.astype(F32)).reshape(-1)
    requant = np.clip(_nearest_int((xs + sub_m) / sub_d), 0, nmax)
    L = np.where(sub_d != 0, requant, L).astype(U8).T.reshape(nb, 8, 32)
    return d, dmin, _pack_scale_min_k4(ls, lm), L


def _quantize_q4_k(x: np.ndarray, out: np.ndarray) -> None:
    d, dmin, scales, L = _k_scales_mins(x, 15, -1.0, 0.1, 20)
    out["d"], out["dmin"], out["scales"] = d, dmin, scales
    out["qs"] = _pack_nibbles(L[:, 0::2], L[:, 1::2]).reshape(len(x), 128)


def _dequantize_q4_k(b: np.ndarray) -> np.ndarray:
    nb = len(b)
    sc, mn = _unpack_scale_min_k4(b["scales"])
    d = _f32(b["d"])[:, None] * sc.astype(F32)  # (blocks, 8 sub-blocks)
    m = _f32(b["dmin"])[:, None] * mn.astype(F32)
    qs = b["qs"].reshape(nb, 4, 1, 32)
    q = np.concatenate([qs & 0xF, qs >> 4], axis=2).reshape(nb, 8, 32).astype(F32)
    return d[:, :, None] * q - m[:, :, None]


# --------------------------------------------------------------------------- q6_K


def _make_qx_quants(x: np.ndarray, nmax: int):
    """make_qx_quants with rmse_type = 1 and no quant weights, for every sub-block at once.

    x: (n, blocks). Returns (scale, L) with L (n, blocks) in [0, 2 * nmax).
    """
    top = _first_max_abs(x, axis=0)
    w = x * x
    wx = w * x

    def fit(iscale):
        l = np.clip(_nearest_int(iscale * x), -nmax, nmax - 1).astype(F32)
        return l, _seq_sum(wx * l), _seq_sum(w * l * l)

    L, sumlx, suml2 = fit(F32(-nmax) / top)
    scale = np.where(suml2 != 0, sumlx / suml2, F32(0))
    best = scale * sumlx
    for step in (*range(-9, 0), *range(1, 10)):
        l, sumlx, suml2 = fit(-(F32(nmax) + F32(0.1) * F32(step)) / top)
        better = (suml2 > 0) & (sumlx * sumlx > best * suml2)
        new_scale = sumlx / suml2
        L = np.where(better, l, L)
        scale = np.where(better, new_scale, scale)
        best = np.where(better, new_scale * sumlx, best)
    zero = np.abs(top) < F32(1e-15)  # GROUP_MAX_EPS: L = 0 (not nmax) and scale 0
    return np.where(zero, F32(0), scale), np.where(zero, 0, L.astype(np.int32) + nmax)


def _quantize_q6_k(x: np.ndarray, out: np.ndarray) -> None:
    nb = len(x)
    xs = np.ascontiguousarray(x.reshape(nb * 16, 16).T)  # (16, sub-blocks)
    scales, L = _make_qx_quants(xs, 32)
    scales = scales.reshape(nb, 16)

    max_scale = _first_max_abs(scales, axis=1)
    empty = np.abs(max_scale) < F32(1e-15)  # the whole block is written as zeros
    iscale = F32(-128) / max_scale
    d = _f16(F32(1) / iscale)
    sc = np.minimum(127, _nearest_int(iscale[:, None] * scales)).astype(np.int8)

    sub_d = (_f32(d)[:, None] * sc.astype(F32)).reshape(-1)
    requant = np.clip(_nearest_int(xs / sub_d), -32, 31) + 32
    L = np.where(sub_d != 0, requant, L).astype(U8).T.reshape(nb, 2, 4, 32)

    # Per 128-value half: ql[l] = L[l] | L[l + 64] << 4, ql[l + 32] = L[l + 32] | L[l + 96] << 4,
    # qh[l] = the top 2 bits of L[l], L[l + 32], L[l + 64], L[l + 96].
    ql = [_pack_nibbles(L[:, :, 0], L[:, :, 2]), _pack_nibbles(L[:, :, 1], L[:, :, 3])]
    out["ql"] = np.concatenate(ql, axis=2).reshape(nb, 128)
    high = L >> 4
    out["qh"] = (high[:, :, 0] | (high[:, :, 1] << 2) | (high[:, :, 2] << 4) | (high[:, :, 3] << 6)).reshape(nb, 64)
    out["scales"] = sc
    out["d"] = d
    out[empty] = np.zeros((), dtype=out.dtype)


def _dequantize_q6_k(b: np.ndarray) -> np.ndarray:
    nb = len(b)
    ql = b["ql"].reshape(nb, 2, 2, 32)  # (half, low/high 32 bytes, l)
    qh = b["qh"].reshape(nb, 2, 1, 32)
    low = np.concatenate([ql & 0xF, ql >> 4], axis=2)  # quarters 0..3 of each half
    high = (qh >> np.array([0, 2, 4, 6], dtype=U8)[:, None]) & 3
    q = ((low | (high << 4)).astype(np.int32) - 32).astype(F32).reshape(nb, 16, 16)
    ds = _f32(b["d"])[:, None] * b["scales"].astype(F32)
    return ds[:, :, None] * q


# --------------------------------------------------------------------------- f32, f16, bf16


def _quantize_f32(x: np.ndarray, out: np.ndarray) -> None:
    out[:] = x[:, 0]


def _quantize_f16(x: np.ndarray, out: np.ndarray) -> None:
    out[:] = _f16(x[:, 0])


def _quantize_bf16(x: np.ndarray, out: np.ndarray) -> None:
    """ggml_compute_fp32_to_bf16: round to nearest even; a NaN keeps its top bits, made quiet."""
    u = np.ascontiguousarray(x[:, 0]).view(np.uint32)
    rounded = (u + (np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1)))) >> np.uint32(16)
    nan = (u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    out[:] = np.where(nan, (u >> np.uint32(16)) | np.uint32(64), rounded).astype(np.uint16)


def _dequantize_plain(b: np.ndarray) -> np.ndarray:
    return b.astype(F32)


def _dequantize_bf16(b: np.ndarray) -> np.ndarray:
    return (b.astype(np.uint32) << np.uint32(16)).view(F32)


# --------------------------------------------------------------------------- q5_0, q5_1, q8_1


def _fifth_bits(q: np.ndarray) -> np.ndarray:
    """(blocks, 32) 5-bit levels -> qh: bit i is bit 4 of level i."""
    bits = (q.astype(np.uint32) >> np.uint32(4)) & np.uint32(1)
    return (bits << np.arange(32, dtype=np.uint32)).sum(axis=1, dtype=np.uint32)


def _five_bit_levels(b: np.ndarray) -> np.ndarray:
    """The 32 levels (0..31) of q5_0 / q5_1 blocks: nibbles of qs, bit 4 from qh."""
    high = (b["qh"][:, None] >> np.arange(32, dtype=np.uint32)) & np.uint32(1)
    return _nibbles(b["qs"]).astype(np.int32) | (high.astype(np.int32) << 4)


def _quantize_q5_0(x: np.ndarray, out: np.ndarray) -> None:
    d = _first_max_abs(x, axis=1) / F32(-16)
    inv = np.where(d != 0, F32(1) / d, F32(0))
    q = np.minimum(31, _to_int8(x * inv[:, None] + F32(16.5))).astype(U8)
    out["d"] = _f16(d)
    out["qh"] = _fifth_bits(q)
    out["qs"] = _pack_nibbles(q[:, :16], q[:, 16:])


def _quantize_q5_1(x: np.ndarray, out: np.ndarray) -> None:
    lo = _first_where(x, x == x.min(axis=1, keepdims=True), axis=1)
    hi = _first_where(x, x == x.max(axis=1, keepdims=True), axis=1)
    d = (hi - lo) / F32(31)
    inv = np.where(d != 0, F32(1) / d, F32(0))
    # (uint8_t)(x0 + 0.5f): a float -> uint8 cast (no clamp in GGML's code)
    q = np.trunc((x - lo[:, None]) * inv[:, None] + F32(0.5)).astype(np.int32).astype(U8)
    out["d"], out["m"] = _f16(d), _f16(lo)
    out["qh"] = _fifth_bits(q)
    out["qs"] = _pack_nibbles(q[:, :16], q[:, 16:])


def _quantize_q8_1(x: np.ndarray, out: np.ndarray) -> None:
    d = np.abs(x).max(axis=1) / F32(127)
    inv = np.where(d != 0, F32(1) / d, F32(0))
    qs = _to_int8(_roundf(x * inv[:, None]))
    out["d"] = _f16(d)
    out["s"] = _f16(qs.astype(np.int32).sum(axis=1).astype(F32) * d)
    out["qs"] = qs


def _dequantize_q5_0(b: np.ndarray) -> np.ndarray:
    return (_five_bit_levels(b) - 16).astype(F32) * _f32(b["d"])[:, None]


def _dequantize_q5_1(b: np.ndarray) -> np.ndarray:
    return _five_bit_levels(b).astype(F32) * _f32(b["d"])[:, None] + _f32(b["m"])[:, None]


# --------------------------------------------------------------------------- q2_K, q3_K, q5_K, q8_K


def _pack_crumbs(L: np.ndarray) -> np.ndarray:
    """(blocks, 256) 2-bit levels -> qs (blocks, 64): per half of 128, qs[l] holds levels
    l, l + 32, l + 64, l + 96 at bits 0, 2, 4, 6."""
    q = L.astype(U8).reshape(len(L), 2, 4, 32)
    return (q[:, :, 0] | (q[:, :, 1] << 2) | (q[:, :, 2] << 4) | (q[:, :, 3] << 6)).reshape(len(L), 64)


def _crumbs(qs: np.ndarray) -> np.ndarray:
    """qs (blocks, 64) -> the 2-bit levels (blocks, 2 halves, 4, 32), as _pack_crumbs packs them."""
    shift = (2 * np.arange(4, dtype=U8)).reshape(1, 1, 4, 1)
    return (qs.reshape(len(qs), 2, 1, 32) >> shift) & 3


def _quantize_q2_k(x: np.ndarray, out: np.ndarray) -> None:
    nb = len(x)
    xs = np.ascontiguousarray(x.reshape(nb * 16, 16).T)  # (16, sub-blocks)
    scales, mins, L = _make_qkx2_quants(xs, np.abs(xs), 3, -0.5, 0.1, 15, mad=True)
    scales, mins = scales.reshape(nb, 16), mins.reshape(nb, 16)
    max_scale, max_min = _positive_max(scales), _positive_max(mins)
    inv_scale = np.where(max_scale > 0, F32(15) / max_scale, F32(0))
    inv_min = np.where(max_min > 0, F32(15) / max_min, F32(0))
    ls = np.where(max_scale[:, None] > 0, _nearest_int(inv_scale[:, None] * scales), 0)
    lm = np.where(max_min[:, None] > 0, _nearest_int(inv_min[:, None] * mins), 0)
    sc = ((ls & 0xFF) | (lm << 4)) & 0xFF  # uint8_t scales[j] = ls; scales[j] |= lm << 4
    d, dmin = _f16(max_scale / F32(15)), _f16(max_min / F32(15))

    sub_d = (_f32(d)[:, None] * (sc & 0xF).astype(F32)).reshape(-1)
    sub_m = (_f32(dmin)[:, None] * (sc >> 4).astype(F32)).reshape(-1)
    requant = np.clip(_nearest_int((xs + sub_m) / sub_d), 0, 3)
    L = np.where(sub_d != 0, requant, L).astype(U8).T.reshape(nb, 256)
    out["scales"] = sc.astype(U8)
    out["qs"] = _pack_crumbs(L)
    out["d"], out["dmin"] = d, dmin


def _dequantize_q2_k(b: np.ndarray) -> np.ndarray:
    nb = len(b)
    sc = b["scales"]
    dl = _f32(b["d"])[:, None] * (sc & 0xF).astype(F32)  # (blocks, 16 sub-blocks)
    ml = _f32(b["dmin"])[:, None] * (sc >> 4).astype(F32)
    q = _crumbs(b["qs"]).reshape(nb, 16, 16).astype(F32)
    return dl[:, :, None] * q - ml[:, :, None]


def _make_q3_quants(x: np.ndarray):
    """make_q3_quants(n = 16, nmax = 4, do_rmse = true) for every sub-block at once.

    x: (16, sub-blocks). Returns (scale, L) with L (16, sub-blocks) in 0..7 (0 where the
    sub-block is under GROUP_MAX_EPS)."""
    nmax = 4
    top = _first_max_abs(x, axis=0)
    zero = np.abs(top) < F32(1e-15)
    L = np.clip(_nearest_int((F32(-nmax) / top) * x), -nmax, nmax - 1).astype(F32)
    w = x * x
    wx = w * x
    sumlx, suml2 = _seq_sum(wx * L), _seq_sum(w * L * L)
    # GGML stops a sub-block after a pass that changed nothing; another pass would not change
    # anything either, so all sub-blocks run the 5 passes.
    for _ in range(5):
        for i in range(len(x)):
            li = L[i]
            slx = sumlx - wx[i] * li
            sl2 = suml2 - w[i] * li * li
            new = np.clip(_nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1).astype(F32)
            slx_new = slx + wx[i] * new
            sl2_new = sl2 + w[i] * new * new
            take = (slx > 0) & (new != li) & (sl2_new > 0) & (slx_new * slx_new * suml2 > sumlx * sumlx * sl2_new)
            L[i] = np.where(take, new, li)
            sumlx = np.where(take, slx_new, sumlx)
            suml2 = np.where(take, sl2_new, suml2)
    scale = np.where(suml2 > 0, sumlx / suml2, F32(0))
    return np.where(zero, F32(0), scale), np.where(zero, 0, L.astype(np.int32) + nmax)


def _q3_k_scales(packed: np.ndarray) -> np.ndarray:
    """block_q3_K.scales (blocks, 12) -> the 16 6-bit scales minus 32 (int32)."""
    j = np.arange(16)
    low = np.where(j < 8, packed[:, j % 8] & 0xF, packed[:, j % 8] >> 4)
    high = (packed[:, 8 + j % 4] >> (2 * (j // 4)).astype(U8)) & 3
    return (low | (high << 4)).astype(np.int32) - 32


def _quantize_q3_k(x: np.ndarray, out: np.ndarray) -> None:
    nb = len(x)
    xs = np.ascontiguousarray(x.reshape(nb * 16, 16).T)  # (16, sub-blocks)
    scales, L = _make_q3_quants(xs)
    scales = scales.reshape(nb, 16)
    max_scale = _first_max_abs(scales, axis=1)
    has = max_scale != 0
    iscale = F32(-32) / max_scale
    l = np.clip(_nearest_int(iscale[:, None] * scales).astype(np.int8), -32, 31).astype(np.int32) + 32
    l = np.where(has[:, None], l, 0).astype(U8)
    packed = np.zeros((nb, 12), dtype=U8)
    packed[:, :8] = (l[:, :8] & 0xF) | ((l[:, 8:] & 0xF) << 4)
    for q in range(4):  # the top 2 bits of scale j at bits 2 (j / 4) of byte 8 + j % 4
        packed[:, 8:] |= (l[:, 4 * q : 4 * q + 4] >> 4) << (2 * q)
    packed[~has] = 0
    d = np.where(has, _f16(F32(1) / iscale), _f16(np.zeros(nb, F32)))

    sub_d = (_f32(d)[:, None] * _q3_k_scales(packed).astype(F32)).reshape(-1)
    requant = np.clip(_nearest_int(xs / sub_d), -4, 3) + 4
    L = np.where(sub_d != 0, requant, L).T.reshape(nb, 8, 32)  # (block, bit of hmask, byte)
    high = (L > 3).astype(U8)
    out["hmask"] = sum(high[:, b] << b for b in range(8)).astype(U8)
    out["qs"] = _pack_crumbs((L & 3).reshape(nb, 256))
    out["scales"] = packed
    out["d"] = d


def _dequantize_q3_k(b: np.ndarray) -> np.ndarray:
    nb = len(b)
    dl = _f32(b["d"])[:, None] * _q3_k_scales(b["scales"]).astype(F32)  # (blocks, 16)
    bit = (4 * np.arange(2, dtype=U8)).reshape(1, 2, 1, 1) + np.arange(4, dtype=U8).reshape(1, 1, 4, 1)
    high = (b["hmask"].reshape(nb, 1, 1, 32) >> bit) & 1
    q = _crumbs(b["qs"]).astype(np.int32) - np.where(high != 0, 0, 4)
    return dl[:, :, None] * q.reshape(nb, 16, 16).astype(F32)


def _quantize_q5_k(x: np.ndarray, out: np.ndarray) -> None:
    nb = len(x)
    d, dmin, scales, L = _k_scales_mins(x, 31, -0.5, 0.1, 15)
    out["d"], out["dmin"], out["scales"] = d, dmin, scales
    out["qh"] = sum(((L[:, s] >> 4) & 1) << s for s in range(8)).astype(U8)
    out["qs"] = _pack_nibbles(L[:, 0::2], L[:, 1::2]).reshape(nb, 128)


def _dequantize_q5_k(b: np.ndarray) -> np.ndarray:
    nb = len(b)
    sc, mn = _unpack_scale_min_k4(b["scales"])
    d = _f32(b["d"])[:, None] * sc.astype(F32)
    m = _f32(b["dmin"])[:, None] * mn.astype(F32)
    qs = b["qs"].reshape(nb, 4, 1, 32)
    low = np.concatenate([qs & 0xF, qs >> 4], axis=2).reshape(nb, 8, 32)
    high = (b["qh"].reshape(nb, 1, 32) >> np.arange(8, dtype=U8).reshape(1, 8, 1)) & 1
    q = (low.astype(np.int32) + 16 * high.astype(np.int32)).astype(F32)
    return d[:, :, None] * q - m[:, :, None]


def _quantize_q8_k(x: np.ndarray, out: np.ndarray) -> None:
    nb = len(x)
    top = _first_max_abs(x, axis=1)
    zero = top == 0
    iscale = F32(-127) / top
    qs = np.minimum(127, _nearest_int(iscale[:, None] * x)).astype(np.int8)
    qs[zero] = 0
    out["d"] = np.where(zero, F32(0), F32(1) / iscale)
    out["qs"] = qs
    out["bsums"] = qs.reshape(nb, 16, 16).astype(np.int32).sum(axis=2).astype(np.int16)


def _dequantize_q8_k(b: np.ndarray) -> np.ndarray:
    return b["d"][:, None] * b["qs"].astype(F32)


_QUANTIZERS = {
    "f32": _quantize_f32,
    "f16": _quantize_f16,
    "bf16": _quantize_bf16,
    "q4_0": _quantize_q4_0,
    "q4_1": _quantize_q4_1,
    "q5_0": _quantize_q5_0,
    "q5_1": _quantize_q5_1,
    "q8_0": _quantize_q8_0,
    "q8_1": _quantize_q8_1,
    "q2_k": _quantize_q2_k,
    "q3_k": _quantize_q3_k,
    "q4_k": _quantize_q4_k,
    "q5_k": _quantize_q5_k,
    "q6_k": _quantize_q6_k,
    "q8_k": _quantize_q8_k,
}
#: GGML has no q8_1 dequantizer (an activation format): its values are q * d, as q8_0's.
_DEQUANTIZERS = {
    "f32": _dequantize_plain,
    "f16": _dequantize_plain,
    "bf16": _dequantize_bf16,
    "q4_0": _dequantize_q4_0,
    "q4_1": _dequantize_q4_1,
    "q5_0": _dequantize_q5_0,
    "q5_1": _dequantize_q5_1,
    "q8_0": _dequantize_q8_0,
    "q8_1": _dequantize_q8_0,
    "q2_k": _dequantize_q2_k,
    "q3_k": _dequantize_q3_k,
    "q4_k": _dequantize_q4_k,
    "q5_k": _dequantize_q5_k,
    "q6_k": _dequantize_q6_k,
    "q8_k": _dequantize_q8_k,
}
