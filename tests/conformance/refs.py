"""Independent references for the CPU conformance tests.

Nothing here uses the registry's numpy expressions or the runtime: elementwise ops are
evaluated with `math` on Python floats (or exact Python ints, wrapped like fixed-width
integers), strided views are read element by element from the flat buffer, and
conv/pool/gather/scatter/matmul are naive loops. Inputs are small.
"""

from __future__ import annotations

import itertools
import math

import ml_dtypes
import numpy as np

from generated import Device, DType, Layout
from generated.conversions import to_numpy

CPU = Device.parse("cpu")

NP = {
    "u8": np.dtype(np.uint8),
    "u32": np.dtype(np.uint32),
    "i64": np.dtype(np.int64),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "f16": np.dtype(np.float16),
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
}
INT = ("u8", "u32", "i64")
FLOAT = ("bf16", "f16", "f32", "f64")
BITS = {"u8": 8, "u32": 32, "i64": 64}
#: Relative tolerance by dtype (also the absolute floor, scaled by the magnitude of the terms).
TOL = {"bf16": 1e-2, "f16": 1e-3, "f32": 1e-5, "f64": 1e-12}


def dtype_member(name: str) -> DType:
    return DType(name)


# --------------------------------------------------------------------------- integers


def wrap(v: int, name: str) -> int:
    """A Python int as the fixed-width integer `name` holds after wrapping arithmetic."""
    bits = BITS[name]
    v &= (1 << bits) - 1
    if name == "i64" and v >= 1 << 63:
        v -= 1 << 64
    return v


def int_range(name: str) -> tuple[int, int]:
    if name == "i64":
        return -(1 << 63), (1 << 63) - 1
    return 0, (1 << BITS[name]) - 1


def rust_as_int(x: float, name: str) -> int:
    """Rust `x as <int>`: NaN -> 0, truncate toward zero, saturate."""
    if math.isnan(x):
        return 0
    lo, hi = int_range(name)
    if x == math.inf or x >= hi:
        return hi
    if x == -math.inf or x <= lo:
        return lo
    return int(x)  # int() truncates toward zero


def trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


# --------------------------------------------------------------------------- values


def random_values(name: str, n: int, rng: np.random.Generator, domain: str = "any") -> np.ndarray:
    """n random values of dtype `name`. domain: any | pos (> 0) | nonzero | small (few
    distinct values, so that ties occur) | halves (many exact .5 and integer values)."""
    dt = NP[name]
    if name in INT:
        lo, hi = int_range(name)
        if domain == "nonzero":
            mag = rng.integers(1, min(hi, 1000), size=n, endpoint=True)
            return (mag * (rng.choice([-1, 1], n) if name == "i64" else 1)).astype(dt)
        if domain == "small":
            lo, hi = (0, 3) if name != "i64" else (-2, 2)
        elif domain == "pos":
            lo, hi = 1, min(hi, 1000)
        elif name == "i64":
            lo, hi = -(1 << 40), 1 << 40
        return rng.integers(lo, hi, size=n, endpoint=True, dtype=np.int64 if name == "i64" else np.uint64).astype(dt)
    if domain == "pos":
        v = rng.uniform(0.1, 4.0, n)
    elif domain == "nonzero":
        v = rng.choice([-1.0, 1.0], n) * rng.uniform(0.25, 4.0, n)
    elif domain == "halves":
        v = rng.integers(-8, 8, n) * 0.5 + rng.choice([0.0, 0.0, 0.25, -0.125], n)
    elif domain == "small":
        v = rng.integers(-3, 4, n) * 0.5
    else:
        v = rng.normal(0.0, 2.0, n)
    return v.astype(np.float64).astype(dt)


def as_py(a: np.ndarray) -> list:
    """Element values as Python ints (integer dtypes) or floats."""
    if a.dtype.kind in "ui":
        return [int(v) for v in a.reshape(-1).tolist()]
    return [float(v) for v in a.astype(np.float64).reshape(-1).tolist()]


# --------------------------------------------------------------------------- layouts


def make_layout(kind: str, shape: tuple[int, ...]) -> tuple[int, Layout]:
    """(buffer size, layout of `shape` within it) for a layout kind:
    contig | offset (start_offset 3) | transposed (reversed dims) |
    narrowed (a sub-block of a larger tensor, offset and gaps) | broadcast (dim 0 has stride 0)."""
    shape = tuple(shape)
    n = math.prod(shape)
    if kind == "contig":
        return n, Layout.contiguous(shape)
    if kind == "offset":
        return n + 5, Layout.contiguous(shape, start_offset=3)
    if kind == "transposed":
        base = Layout.contiguous(shape[::-1])
        return n, base.permute(tuple(reversed(range(len(shape)))))
    if kind == "narrowed":
        if len(shape) == 1:
            return 2 * n + 2, Layout((n,), (2,), 1)
        big = (shape[0] + 2,) + shape[1:-1] + (shape[-1] + 3,)
        lay = Layout.contiguous(big).narrow(0, 1, shape[0]).narrow(len(shape) - 1, 2, shape[-1])
        return math.prod(big), lay
    if kind == "broadcast":
        inner = shape[1:]
        base = Layout.contiguous((1,) + inner, start_offset=2)
        return math.prod(inner) + 3, base.broadcast_as(shape)
    if kind == "permuted":  # dims stored as (0, 2, 1, ...) order, viewed back
        if len(shape) < 3:
            return make_layout("transposed", shape)
        stored = (shape[0],) + shape[2:] + (shape[1],)
        perm = (0, len(shape) - 1) + tuple(range(1, len(shape) - 1))
        return n, Layout.contiguous(stored).permute(perm)
    raise ValueError(kind)


def read_view(flat: np.ndarray, layout: Layout) -> np.ndarray:
    """The logical tensor of `layout` over `flat`, element by element (no as_strided)."""
    out = np.empty(layout.shape, flat.dtype)
    for idx in np.ndindex(*layout.shape):
        off = layout.start_offset + sum(i * s for i, s in zip(idx, layout.stride))
        out[idx] = flat[off]
    return out


def offsets_of(layout: Layout) -> set[int]:
    return {layout.start_offset + sum(i * s for i, s in zip(idx, layout.stride)) for idx in np.ndindex(*layout.shape)}


def operand(name: str, kind: str, shape, rng, domain: str = "any"):
    """(storage, flat host buffer, layout, logical values) of a random operand."""
    size, layout = make_layout(kind, shape)
    flat = random_values(name, size, rng, domain)
    storage = CPU.storage_from_slice(flat)
    return storage, flat, layout, read_view(flat, layout)


def result(storage, shape) -> np.ndarray:
    """A result storage read back as its (contiguous) tensor of `shape`, checking that
    the buffer is exactly contiguous of that shape."""
    n = math.prod(shape)
    assert storage.inner.ndim == 1 and storage.inner.size == n, (storage.inner.shape, shape)
    return to_numpy(storage, Layout.contiguous(tuple(shape)))


# --------------------------------------------------------------------------- comparison


def assert_close(got: np.ndarray, want, name: str, scale=None, what: str = "") -> None:
    """Integers exactly; floats within TOL[name] relative to |want| + scale
    (scale: the magnitude of the summed terms, default 1)."""
    got = np.asarray(got)
    assert got.dtype == NP[name], f"{what}: dtype {got.dtype}, expected {NP[name]}"
    if name in INT:
        want_arr = np.array(want, dtype=object).reshape(got.shape)
        got_list = np.array([int(v) for v in got.reshape(-1).tolist()], dtype=object).reshape(got.shape)
        bad = np.argwhere(got_list != want_arr)
        if bad.size:
            i = tuple(bad[0])
            raise AssertionError(f"{what}: {len(bad)} mismatches; first at {i}: got {got_list[i]}, want {want_arr[i]}")
        return
    g = got.astype(np.float64)
    w = np.asarray(want, dtype=np.float64).reshape(g.shape)
    if scale is None:
        s = np.ones_like(w)
    else:
        s = np.asarray(scale, dtype=np.float64)
        s = s.reshape(w.shape) if s.size == w.size else np.broadcast_to(s, w.shape)
    rtol = TOL[name]
    both_nan = np.isnan(g) & np.isnan(w)
    same_inf = np.isinf(w) & (g == w)
    with np.errstate(invalid="ignore"):
        err = np.abs(g - w)
        ok = both_nan | same_inf | (err <= rtol * (np.abs(w) + s))
    if not ok.all():
        i = tuple(np.argwhere(~ok)[0])
        raise AssertionError(
            f"{what}: {int((~ok).sum())}/{ok.size} outside rtol {rtol}; first at {i}: got {g[i]!r}, want {w[i]!r}"
        )


# --------------------------------------------------------------------------- elementwise references


def _round_half_away(x: float) -> float:
    if math.isnan(x) or math.isinf(x):
        return x
    a = abs(x)
    f = math.floor(a)
    r = f + 1.0 if a - f >= 0.5 else f
    return math.copysign(r, x)


def _gelu(x: float) -> float:
    return 0.5 * x * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def _sign(x):
    return (x > 0) - (x < 0)


#: The input domains `operand` draws from (see its callers): what a reference is defined on.
DOMAINS = ("any", "pos", "nonzero", "halves", "small")

#: op -> (float reference, int reference or None, input domain)
UNARY = {
    "neg": (lambda x: -x, lambda v: -v, "any"),
    "recip": (lambda x: 1.0 / x, None, "pos"),
    "sqr": (lambda x: x * x, lambda v: v * v, "any"),
    "sqrt": (math.sqrt, None, "pos"),
    "exp": (math.exp, None, "any"),
    "log": (math.log, None, "pos"),
    "sin": (math.sin, None, "any"),
    "cos": (math.cos, None, "any"),
    "tanh": (math.tanh, None, "any"),
    "abs": (abs, abs, "any"),
    "erf": (math.erf, None, "any"),
    "gelu": (_gelu, None, "any"),
    "gelu_erf": (lambda x: 0.5 * x * (1.0 + math.erf(x / math.sqrt(2.0))), None, "any"),
    "silu": (lambda x: x / (1.0 + math.exp(-x)), None, "any"),
    "relu": (lambda x: max(x, 0.0), lambda v: max(v, 0), "any"),
    "ceil": (lambda x: float(math.ceil(x)), None, "halves"),
    "floor": (lambda x: float(math.floor(x)), None, "halves"),
    "round": (_round_half_away, None, "halves"),
    "sign": (lambda x: float(_sign(x)), _sign, "any"),
}

#: op -> (float reference, int reference); ints wrap afterwards.
BINARY = {
    "add": (lambda a, b: a + b, lambda a, b: a + b),
    "sub": (lambda a, b: a - b, lambda a, b: a - b),
    "mul": (lambda a, b: a * b, lambda a, b: a * b),
    "div": (lambda a, b: a / b, trunc_div),  # Candle / Rust / C: integer division truncates
    "maximum": (max, max),
    "minimum": (min, min),
}

CMP = {
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
}


REDUCE_OPS = ("sum", "min", "max", "argmin", "argmax")


def reduce_ref(values: np.ndarray, op: str, dims: tuple[int, ...], name: str):
    """(expected, scale) of reducing `values` over dims (kept with size 1). The reduced
    sub-block is walked in row-major order over the dims in ascending order."""
    shape = values.shape
    rd = sorted(set(dims))
    out_shape = tuple(1 if d in rd else s for d, s in enumerate(shape))
    want = np.empty(out_shape, dtype=object)
    scale = np.zeros(out_shape)
    for o in np.ndindex(*out_shape):
        block = []
        for sub in itertools.product(*(range(shape[d]) for d in rd)):
            idx = list(o)
            for d, i in zip(rd, sub):
                idx[d] = i
            v = values[tuple(idx)]
            block.append(int(v) if name in INT else float(v))
        if op == "sum":
            want[o] = wrap(sum(block), name) if name in INT else math.fsum(block)
            scale[o] = sum(abs(float(v)) for v in block)
        elif op == "min":
            want[o] = min(block)
        elif op == "max":
            want[o] = max(block)
        elif op in ("argmin", "argmax"):
            best = 0
            for i, v in enumerate(block):
                if (v < block[best]) if op == "argmin" else (v > block[best]):
                    best = i
            want[o] = best
        else:
            raise KeyError(op)
    return want, scale


# --------------------------------------------------------------------------- nn references


def _acc_done(acc: np.ndarray, name: str):
    if name in INT:
        return np.vectorize(lambda v: wrap(int(v), name), otypes=[object])(acc)
    return acc


def _zeros(shape, name):
    return np.zeros(shape, dtype=object) if name in INT else np.zeros(shape)


def _py(a: np.ndarray, name: str) -> np.ndarray:
    return np.array(as_py(a), dtype=object).reshape(a.shape) if name in INT else a.astype(np.float64)


def conv1d_ref(x, w, p, name):
    x, w = _py(x, name), _py(w, name)
    l_out = p.l_out()
    out, scale = _zeros((p.b_size, p.c_out, l_out), name), np.zeros((p.b_size, p.c_out, l_out))
    for b, o, j in itertools.product(range(p.b_size), range(p.c_out), range(l_out)):
        for c, k in itertools.product(range(p.c_in), range(p.k_size)):
            i = j * p.stride + k * p.dilation - p.padding
            if 0 <= i < p.l_in:
                out[b, o, j] += x[b, c, i] * w[o, c, k]
                scale[b, o, j] += abs(float(x[b, c, i]) * float(w[o, c, k]))
    return _acc_done(out, name), scale


def conv_transpose1d_ref(x, w, p, name):
    x, w = _py(x, name), _py(w, name)
    l_out = p.l_out()
    out, scale = _zeros((p.b_size, p.c_out, l_out), name), np.zeros((p.b_size, p.c_out, l_out))
    for b, c, i, o, k in itertools.product(
        range(p.b_size), range(p.c_in), range(p.l_in), range(p.c_out), range(p.k_size)
    ):
        j = i * p.stride + k * p.dilation - p.padding
        if 0 <= j < l_out:
            out[b, o, j] += x[b, c, i] * w[c, o, k]
            scale[b, o, j] += abs(float(x[b, c, i]) * float(w[c, o, k]))
    return _acc_done(out, name), scale


def conv2d_ref(x, w, p, name):
    x, w = _py(x, name), _py(w, name)
    oh, ow = p.out_h(), p.out_w()
    out, scale = _zeros((p.b_size, p.c_out, oh, ow), name), np.zeros((p.b_size, p.c_out, oh, ow))
    for b, o, y, z in itertools.product(range(p.b_size), range(p.c_out), range(oh), range(ow)):
        for c, ky, kz in itertools.product(range(p.c_in), range(p.k_h), range(p.k_w)):
            iy = y * p.stride + ky * p.dilation - p.padding
            iz = z * p.stride + kz * p.dilation - p.padding
            if 0 <= iy < p.i_h and 0 <= iz < p.i_w:
                out[b, o, y, z] += x[b, c, iy, iz] * w[o, c, ky, kz]
                scale[b, o, y, z] += abs(float(x[b, c, iy, iz]) * float(w[o, c, ky, kz]))
    return _acc_done(out, name), scale


def conv_transpose2d_ref(x, w, p, name):
    x, w = _py(x, name), _py(w, name)
    oh, ow = p.out_h(), p.out_w()
    out, scale = _zeros((p.b_size, p.c_out, oh, ow), name), np.zeros((p.b_size, p.c_out, oh, ow))
    for b, c, iy, iz in itertools.product(range(p.b_size), range(p.c_in), range(p.i_h), range(p.i_w)):
        for o, ky, kz in itertools.product(range(p.c_out), range(p.k_h), range(p.k_w)):
            y = iy * p.stride + ky * p.dilation - p.padding
            z = iz * p.stride + kz * p.dilation - p.padding
            if 0 <= y < oh and 0 <= z < ow:
                out[b, o, y, z] += x[b, c, iy, iz] * w[c, o, ky, kz]
                scale[b, o, y, z] += abs(float(x[b, c, iy, iz]) * float(w[c, o, ky, kz]))
    return _acc_done(out, name), scale


def pool_ref(x, k, s, name, mode):
    (kh, kw), (sh, sw) = k, s
    bsz, ch, h, w = x.shape
    oh, ow = (h - kh) // sh + 1, (w - kw) // sw + 1
    vals = _py(x, name)
    out = np.empty((bsz, ch, oh, ow), dtype=object)
    scale = np.zeros((bsz, ch, oh, ow))
    for b, c, y, z in itertools.product(range(bsz), range(ch), range(oh), range(ow)):
        win = [vals[b, c, y * sh + i, z * sw + j] for i in range(kh) for j in range(kw)]
        if mode == "max":
            out[b, c, y, z] = max(win)
        elif name in INT:
            out[b, c, y, z] = trunc_div(sum(win), len(win))  # exact mean, truncated toward zero
        else:
            out[b, c, y, z] = math.fsum(win) / len(win)
            scale[b, c, y, z] = max(abs(float(v)) for v in win)
    return out, scale


def upsample1d_ref(x, size):
    l_in = x.shape[2]
    return np.stack([x[:, :, (i * l_in) // size] for i in range(size)], axis=2)


def upsample2d_ref(x, height, width):
    h, w = x.shape[2:]
    out = np.empty(x.shape[:2] + (height, width), x.dtype)
    for i in range(height):
        for j in range(width):
            out[:, :, i, j] = x[:, :, (i * h) // height, (j * w) // width]
    return out


def matmul_ref(a, b, name):
    """a: (B, m, k), b: (B, k, n) -> (B, m, n) with exact int (wrapped) / f64 accumulation."""
    a, b = _py(a, name), _py(b, name)
    bsz, m, k = a.shape
    n = b.shape[2]
    out, scale = _zeros((bsz, m, n), name), np.zeros((bsz, m, n))
    for z, i, j in itertools.product(range(bsz), range(m), range(n)):
        for t in range(k):
            out[z, i, j] += a[z, i, t] * b[z, t, j]
            scale[z, i, j] += abs(float(a[z, i, t]) * float(b[z, t, j]))
    return _acc_done(out, name), scale


# What an entry of each table looks like, for the message that asks for a missing one.
_ENTRY_FORMS = {
    "unary": (
        "UNARY",
        '"{op}": (float reference, integer reference or None, input domain)',
        '"exp": (math.exp, None, "any")',
    ),
    "binary": (
        "BINARY",
        '"{op}": (float reference, integer reference)',
        '"add": (lambda a, b: a + b, lambda a, b: a + b)',
    ),
    "cmp": ("CMP", '"{op}": reference', '"lt": lambda a, b: a < b'),
}


def missing_reference(family: str, op: str) -> str:
    """What to add to this file for an elementwise op of ops.yaml that has no reference here."""
    table, form, example = _ENTRY_FORMS[family]
    domains = f"; input domains: {', '.join(DOMAINS)}" if family == "unary" else ""
    return (
        f"no reference for {family} op {op!r} (declared in ops.yaml): add to {table} in "
        f"tests/conformance/refs.py an entry {form.format(op=op)}, computed with math on Python "
        f"floats (and ints), not from ops.yaml's numpy expression; e.g. {example}{domains}"
    )
