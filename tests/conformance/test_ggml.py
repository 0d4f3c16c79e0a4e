"""GGML block formats (runtime.ggml) and the cpu backend's quantized storage (runtime.cpu.quant).

Four independent references: blocks computed by hand here, byte images written by GGML's
own reference C code (tests/fixtures/ggml, see its README), the `gguf` package's numpy
(de)quantizers, and error bounds / fixed points that follow from the algorithms.
"""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from runtime import ggml
from runtime.cpu import quant as cpu_quant
from runtime.errors import DTypeMismatch, ShapeMismatch
from runtime.layout import Layout

try:  # gguf (the `test` extra) is one more oracle; its numpy code does not quantize K formats
    import gguf
    from gguf import quants as gguf_quants
except ImportError:
    gguf = None
needs_gguf = pytest.mark.skipif(gguf is None, reason="the gguf package is not installed")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ggml"
FORMATS = list(ggml.FORMATS)
#: GGML has no q8_1 dequantizer (test_q8_1_dequantize_by_hand); gguf's numpy dequantizes
#: neither q8_1 nor q8_K, and quantizes only these.
DEQUANTIZED = [f for f in FORMATS if f != "q8_1"]
GGUF_DEQUANTIZES = [f for f in FORMATS if f not in ("q8_1", "q8_k")]
GGUF_QUANTIZES = ["f32", "f16", "bf16", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0"]
F32 = np.float32


def f16_bytes(v: float) -> list[int]:
    """The two little-endian bytes of an f16 field."""
    return list(np.array([v], dtype="<f2").view(np.uint8))


def bits(a: np.ndarray) -> np.ndarray:
    """f32 values as their bit patterns: equality that tells -0.0 from 0.0."""
    return np.asarray(a, dtype=F32).view(np.uint32)


class Fmt(str):
    """Stands in for the generated GgmlDType (a StrEnum): a str whose `value` is the name."""

    @property
    def value(self) -> str:
        return str.__str__(self)


# --------------------------------------------------------------------------- by hand


@pytest.mark.parametrize("sign", [1, -1])
def test_q4_0_by_hand(sign):
    # x = sign * (q - 8) / 4 with q[0] = 0: x[0] is the first value of largest magnitude, so
    # d = x[0] / -8 = sign / 4 and every value sits exactly on its level q.
    q = np.array(list(range(16)) + list(range(15, -1, -1)))
    x = (sign * (q - 8) / 4).astype(F32)
    expected = f16_bytes(sign * 0.25) + [int(q[j] | (q[j + 16] << 4)) for j in range(16)]
    assert list(ggml.quantize(x, "q4_0")) == expected


def test_q4_0_rounds_half_up():
    # d = -8 / -8 = 1; levels are trunc(x + 8.5): 0.5 -> 9, -0.5 -> 8, -1.5 -> 7, 1.5 -> 10.
    x = np.zeros(32, dtype=F32)
    x[:5] = [-8, 0.5, -0.5, -1.5, 1.5]
    levels = [0, 9, 8, 7, 10] + [8] * 27
    expected = f16_bytes(1.0) + [levels[j] | (levels[j + 16] << 4) for j in range(16)]
    assert list(ggml.quantize(x, "q4_0")) == expected


def test_q4_0_zero_block_has_negative_zero_scale():
    # max stays +0.0, d = 0.0 / -8 = -0.0; every value maps to level 8.
    assert list(ggml.quantize(np.zeros(32, F32), "q4_0")) == [0x00, 0x80] + [0x88] * 16


def test_q4_1_by_hand():
    # x = -1 + q / 2: min -1, max 6.5, d = 7.5 / 15 = 0.5, levels q exactly.
    q = np.array([(5 * i + 3) % 16 for i in range(32)])
    q[7], q[20] = 0, 15
    x = (-1 + q / 2).astype(F32)
    expected = f16_bytes(0.5) + f16_bytes(-1.0) + [int(q[j] | (q[j + 16] << 4)) for j in range(16)]
    assert list(ggml.quantize(x, "q4_1")) == expected


def test_q4_1_min_keeps_the_first_zero():
    # min = -0.0 (the first of the zeros) is stored as f16 -0.0; max 15, d 1.
    x = np.arange(32, dtype=F32) % 16
    x[0], x[16] = -0.0, 0.0
    out = ggml.quantize(x, "q4_1")
    assert list(out[:4]) == f16_bytes(1.0) + [0x00, 0x80]
    assert list(out[4:]) == [j | (j << 4) for j in range(16)]


def test_q8_0_by_hand():
    # amax = 63.5 = 127 * 0.5: d = 0.5, x / d = q exactly.
    q = np.array([127, -127] + list(range(-90, 90, 6)), dtype=np.int8)
    x = (q.astype(F32) * F32(0.5)).astype(F32)
    expected = f16_bytes(0.5) + list(q.view(np.uint8))
    assert list(ggml.quantize(x, "q8_0")) == expected


def test_q8_0_rounds_half_away_from_zero():
    # d = 127 / 127 = 1; roundf: 2.5 -> 3, -2.5 -> -3, 0.5 -> 1, -0.5 -> -1 (rint would give 2, -2, 0, 0).
    x = np.zeros(32, dtype=F32)
    x[:5] = [127, 2.5, -2.5, 0.5, -0.5]
    expected = f16_bytes(1.0) + [127, 3, 253, 1, 255] + [0] * 27
    assert list(ggml.quantize(x, "q8_0")) == expected


def test_q4_k_structure():
    # x = i % 16: every sub-block fits scale 1, min 0 exactly, so max_scale = 1, the 6-bit
    # scales are all 63 and the mins all 0; d = f16(1/63), dmin = 0.
    x = (np.arange(256) % 16).astype(F32)
    out = ggml.quantize(x, "q4_k")
    assert out.size == 144
    assert list(out[:2]) == f16_bytes(F32(1) / F32(63))
    assert list(out[2:4]) == [0, 0]
    # scales[0..3] = 63 | (63 >> 4) << 6, mins[0..3] = 0, scales[8..11] = 63 & 0xF | 0 << 4
    assert list(out[4:16]) == [255] * 4 + [0] * 4 + [15] * 4
    # qs: byte l of each 64-value chunk = L[l] | L[l + 32] << 4, here (l % 16) * 0x11
    assert list(out[16:]) == [(l % 16) * 0x11 for l in range(32)] * 4


def test_q4_k_dequantize_by_hand():
    d, dmin = 0.5, 0.25
    sc = [1, 2, 3, 4, 40, 50, 60, 63]
    mn = [0, 5, 10, 15, 20, 33, 47, 62]
    packed = [0] * 12
    for j in range(8):  # the 6-bit packing of quantize_row_q4_K_ref
        if j < 4:
            packed[j], packed[j + 4] = sc[j], mn[j]
        else:
            packed[j + 4] = (sc[j] & 0xF) | ((mn[j] & 0xF) << 4)
            packed[j - 4] |= (sc[j] >> 4) << 6
            packed[j] |= (mn[j] >> 4) << 6
    levels = [(7 * i + 1) % 16 for i in range(256)]
    qs = [levels[64 * c + l] | (levels[64 * c + 32 + l] << 4) for c in range(4) for l in range(32)]
    block = np.array(f16_bytes(d) + f16_bytes(dmin) + packed + qs, dtype=np.uint8)
    want = [F32(d) * F32(sc[i // 32]) * F32(levels[i]) - F32(dmin) * F32(mn[i // 32]) for i in range(256)]
    assert np.array_equal(bits(ggml.dequantize(block, "q4_k", 256)), bits(want))


def test_q6_k_structure():
    # Each 16-value sub-block is -8..7: make_qx_quants fits scale 1/4 exactly, so
    # d = f16(-1/512), every 8-bit scale is -128 and the levels are 4x + 32.
    x = (np.arange(256) % 16 - 8).astype(F32)
    out = ggml.quantize(x, "q6_k")
    blocks = ggml.block_view(out, "q6_k")
    levels = (4 * x + 32).astype(int)
    half = levels.reshape(2, 4, 32)  # [h][k][l] = levels[128 h + 32 k + l]
    ql = [half[h, k, l] & 0xF | (half[h, k + 2, l] & 0xF) << 4 for h in range(2) for k in range(2) for l in range(32)]
    qh = [sum((half[h, k, l] >> 4) << (2 * k) for k in range(4)) for h in range(2) for l in range(32)]
    assert list(out[:128]) == ql
    assert list(out[128:192]) == qh
    assert list(out[192:208].view(np.int8)) == [-128] * 16
    assert list(out[208:]) == f16_bytes(-1 / 512) == [0x00, 0x98]
    assert blocks["d"][0] == np.float16(-1 / 512)
    assert np.array_equal(ggml.dequantize(out, "q6_k", 256), x)  # d * sc * q = 0.25 * 4x


def test_q6_k_zero_block_is_all_zero_bytes():
    assert not ggml.quantize(np.zeros(512, F32), "q6_k").any()


# --------------------------------------------------------------------------- GGML's C reference


@pytest.fixture(scope="module")
def reference_inputs() -> np.ndarray:
    return np.load(FIXTURES / "inputs.npy")


@pytest.mark.parametrize("fmt", FORMATS)
def test_quantize_matches_ggml(fmt, reference_inputs):
    want = np.fromfile(FIXTURES / f"{fmt}.bin", dtype=np.uint8)
    got = ggml.quantize(reference_inputs, fmt)
    f = ggml.FORMATS[fmt]
    differing = np.flatnonzero(np.any(got.reshape(-1, f.nbytes) != want.reshape(-1, f.nbytes), axis=1))
    assert differing.size == 0, f"{fmt}: blocks {differing.tolist()} differ from GGML's"


@pytest.mark.parametrize("fmt", DEQUANTIZED)
def test_dequantize_matches_ggml(fmt, reference_inputs):
    data = np.fromfile(FIXTURES / f"{fmt}.bin", dtype=np.uint8)
    want = np.load(FIXTURES / f"{fmt}.dequant.npy")
    assert np.array_equal(bits(ggml.dequantize(data, fmt, reference_inputs.size)), bits(want))


def test_q8_1_by_hand():
    # d = 127 / 127 = 1, levels round half away from zero; s = d * sum(levels) = 1 + 3 + -3 = 1.
    x = np.zeros(32, F32)
    x[:4] = [127, 0.5, 2.5, -2.5]
    expected = f16_bytes(1.0) + f16_bytes(127 + 1 + 3 - 3) + [127, 1, 3, 253] + [0] * 28
    assert list(ggml.quantize(x, "q8_1")) == expected


def test_q8_1_dequantize_by_hand():
    # q * d, as q8_0 (GGML itself has no q8_1 dequantizer)
    data = np.array(f16_bytes(0.5) + f16_bytes(99.0) + [2, 254] + [0] * 30, dtype=np.uint8)
    assert ggml.dequantize(data, "q8_1", 32).tolist() == [1.0, -1.0] + [0.0] * 30


def test_q8_k_bsums_and_zero_block():
    # d = 1 / (-127 / max) with max the first of largest magnitude; bsums the sums of 16 levels.
    x = np.zeros(512, F32)
    x[:3] = [-254, 2, 100]
    b = ggml.block_view(ggml.quantize(x, "q8_k"), "q8_k")
    assert b["qs"][0, :3].tolist() == [-127, 1, 50] and b["bsums"][0].tolist() == [-76] + [0] * 15
    assert b["d"][0] == F32(1) / (F32(-127) / F32(-254))
    assert b["d"][1] == 0 and not b["qs"][1].any() and not b["bsums"][1].any()


@pytest.mark.parametrize("fmt", ["f32", "f16", "bf16"])
def test_plain_formats_hold_one_value_an_element(fmt):
    x = np.array([1.0, -2.5, 3.0e-3, 65504.0, 7.0], dtype=F32)
    q = ggml.quantize(x, fmt)
    want = {"f32": x, "f16": x.astype(np.float16), "bf16": x.astype(ml_dtypes.bfloat16)}[fmt]
    assert q.tobytes() == want.tobytes()
    assert np.array_equal(ggml.dequantize(q, fmt, x.size), want.astype(F32))


# --------------------------------------------------------------------------- the gguf package


def gguf_type(fmt: str):
    return gguf.GGMLQuantizationType[fmt.upper()]


@needs_gguf
@pytest.mark.parametrize("fmt", GGUF_QUANTIZES)
def test_quantize_matches_gguf(fmt):
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((16, 256)) * np.exp(rng.uniform(-6, 6, (16, 1)))).astype(F32)
    want = gguf_quants.quantize(x, gguf_type(fmt))  # the plain formats come back as their dtype
    assert np.array_equal(ggml.quantize(x, fmt), want.reshape(-1).view(np.uint8))


@needs_gguf
@pytest.mark.parametrize("fmt", GGUF_DEQUANTIZES)
def test_dequantize_random_bytes_matches_gguf(fmt):
    # Arbitrary bytes, f16 NaN and infinities included: dequantizing is defined for all of them.
    f = ggml.FORMATS[fmt]
    data = np.random.default_rng(8).integers(0, 256, 64 * f.nbytes, dtype=np.uint8)
    with np.errstate(invalid="ignore"):  # inf * 0
        want = gguf_quants.dequantize(data.reshape(8, -1), gguf_type(fmt)).reshape(-1)
    got = ggml.dequantize(data, fmt, 64 * f.block)
    np.testing.assert_array_equal(got, want)


# --------------------------------------------------------------------------- properties


def float_blocks(block: int, limit: float, max_blocks: int = 4):
    """f32 arrays of 1..max_blocks blocks: zeros, runs of equal values, any magnitude up to limit."""
    values = st.one_of(st.just(0.0), st.floats(-limit, limit, width=32, allow_subnormal=False))
    return st.integers(1, max_blocks).flatmap(lambda n: arrays(F32, n * block, elements=values))


PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def c_scale(x: np.ndarray, fmt: str) -> np.ndarray:
    """Per block, the f32 `d` the quantizer computes before rounding it to f16."""
    if fmt == "q8_0":
        return np.abs(x).max(axis=1) / F32(127)
    if fmt == "q4_1":
        return (x.max(axis=1) - x.min(axis=1)) / F32(15)
    a = np.abs(x)
    return x[np.arange(len(x)), np.argmax(a, axis=1)] / F32(-8)


@PROPERTY
@given(float_blocks(32, 3e4))
def test_q8_0_error_is_half_a_step(x):
    # |x - q d| <= d/2 with the f32 d; storing d as f16 adds at most |q| |d - d16| <= 127 |d - d16|.
    blocks = x.reshape(-1, 32)
    d = c_scale(blocks, "q8_0").astype(np.float64)[:, None]
    d16 = d.astype(np.float16).astype(np.float64)
    err = np.abs(ggml.dequantize(ggml.quantize(x, "q8_0"), "q8_0", x.size).reshape(-1, 32) - blocks)
    assert np.all(err <= d / 2 + 127 * np.abs(d - d16) + 1e-6 * np.abs(blocks).max())


@PROPERTY
@given(float_blocks(32, 3e4))
def test_q4_0_error_is_half_a_step(x):
    # Levels run -8..7 from the signed max: a value within half a step of a level lands on
    # it; only values beyond level 7 (the far end, up to 8 d away) are clipped, within one step.
    blocks = x.reshape(-1, 32)
    d = c_scale(blocks, "q4_0").astype(np.float64)[:, None]
    d16 = d.astype(np.float16).astype(np.float64)
    err = np.abs(ggml.dequantize(ggml.quantize(x, "q4_0"), "q4_0", x.size).reshape(-1, 32) - blocks)
    clipped = np.where(d != 0, blocks / np.where(d != 0, d, 1), 0) >= 7.5
    bound = np.where(clipped, np.abs(d), np.abs(d) / 2) + 8 * np.abs(d - d16) + 1e-6 * np.abs(blocks).max()
    assert np.all(err <= bound)


@PROPERTY
@given(float_blocks(32, 3e4))
def test_q4_1_error_is_half_a_step(x):
    blocks = x.reshape(-1, 32)
    d = c_scale(blocks, "q4_1").astype(np.float64)[:, None]
    m = blocks.min(axis=1).astype(np.float64)[:, None]
    d16, m16 = (v.astype(np.float16).astype(np.float64) for v in (d, m))
    err = np.abs(ggml.dequantize(ggml.quantize(x, "q4_1"), "q4_1", x.size).reshape(-1, 32) - blocks)
    assert np.all(err <= d / 2 + 15 * np.abs(d - d16) + np.abs(m - m16) + 1e-6 * np.abs(blocks).max())


@PROPERTY
@given(fmt=st.sampled_from(["q2_k", "q3_k", "q4_k", "q5_k", "q6_k"]), data=st.data())
def test_k_quant_error_is_a_fraction_of_the_range(fmt, data):
    # Loose, but far below what a misplaced nibble or scale would cost (about half the range);
    # the absolute term covers f16 scales of tiny blocks, which round to 0 or to few bits.
    x = data.draw(float_blocks(256, 1e3, max_blocks=2))
    blocks = x.reshape(-1, 256)
    span = (np.maximum(blocks.max(axis=1), 0) - np.minimum(blocks.min(axis=1), 0))[:, None]
    err = np.abs(ggml.dequantize(ggml.quantize(x, fmt), fmt, x.size).reshape(-1, 256) - blocks)
    fraction = {"q2_k": 0.5, "q3_k": 0.3, "q4_k": 0.25, "q5_k": 0.12, "q6_k": 0.05}[fmt]
    bound = np.full(err.shape, fraction * span + 2e-4)
    if fmt == "q2_k":
        # GGML's q2_K fits each 16 values weighting each by |x|: a value of little weight beside
        # large ones may land levels away (test_q2_k_leaves_a_zero_among_large_values_as_ggml_does),
        # within the span; those of a quarter of the 16's largest |x| or more stay within half.
        a = np.abs(blocks)
        light = a < a.reshape(len(a), 16, 16).max(axis=2).repeat(16, axis=1) / 4
        bound = np.where(light, span + 2e-4, bound)
    assert np.all(err <= bound)


def test_q2_k_leaves_a_zero_among_large_values_as_ggml_does(reference_inputs):
    # Super-block 8 of the fixtures: a 0 (weight 0) among -219s and a -260 in one 16. GGML's
    # quantize_row_q2_K_ref fits the others and puts the 0 on the top level, 0.53 of the span
    # away; its bytes are the fixture's (test_quantize_matches_ggml), its value this.
    block = reference_inputs[8 * 256 : 9 * 256]
    assert block[80] == 0 and block.min() == -260
    want = np.load(FIXTURES / "q2_k.dequant.npy")[8 * 256 + 80]
    got = ggml.dequantize(ggml.quantize(block, "q2_k"), "q2_k", 256)[80]
    assert got == want == np.float32(-136.96289)


@PROPERTY
@given(fmt=st.sampled_from(["q4_0", "q8_0"]), data=st.data())
def test_requantizing_is_a_fixed_point(fmt, data):
    # The dequantized block has its largest level at exactly +-d16 * (8 or 127), so GGML finds
    # the same d again and every value back on its level; unless d16 underflowed to 0 and
    # the values with it.
    x = data.draw(float_blocks(32, 3e4))
    f = ggml.FORMATS[fmt]
    q = ggml.quantize(x, fmt)
    again = ggml.quantize(ggml.dequantize(q, fmt, x.size), fmt)
    blocks = x.reshape(-1, 32)
    kept = (ggml.block_view(q, fmt)["d"] != 0) | ~blocks.any(axis=1)
    assert np.array_equal(again.reshape(-1, f.nbytes)[kept], q.reshape(-1, f.nbytes)[kept])


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("shape", [(0,), (1, 256), (3, 2, 256)])
def test_sizes(fmt, shape):
    f = ggml.FORMATS[fmt]
    x = np.ones(shape, dtype=F32)
    q = ggml.quantize(x, fmt)
    assert q.dtype == np.uint8 and q.ndim == 1 and q.size == x.size // f.block * f.nbytes
    assert ggml.block_view(q, fmt).shape == (x.size // f.block,)
    assert ggml.dequantize(q, fmt, x.size).dtype == F32


def test_formats_table():
    table = {name: (f.block, f.nbytes, f.ggml_type) for name, f in ggml.FORMATS.items()}
    # ggml-common.h's block sizes, ggml.h's enum ggml_type
    assert table == {
        "f32": (1, 4, 0),
        "f16": (1, 2, 1),
        "bf16": (1, 2, 30),
        "q4_0": (32, 18, 2),
        "q4_1": (32, 20, 3),
        "q5_0": (32, 22, 6),
        "q5_1": (32, 24, 7),
        "q8_0": (32, 34, 8),
        "q8_1": (32, 36, 9),
        "q2_k": (256, 84, 10),
        "q3_k": (256, 110, 11),
        "q4_k": (256, 144, 12),
        "q5_k": (256, 176, 13),
        "q6_k": (256, 210, 14),
        "q8_k": (256, 292, 15),
    }
    assert all(ggml.block_view(np.zeros(f.nbytes, np.uint8), n).itemsize == f.nbytes for n, f in ggml.FORMATS.items())


# --------------------------------------------------------------------------- errors


def test_errors_name_the_op():
    with pytest.raises(DTypeMismatch, match="quantize on cpu"):
        ggml.quantize(np.zeros(32, F32), "iq2_xxs")
    with pytest.raises(ShapeMismatch, match="quantize on cpu: expected shape a multiple of 256"):
        ggml.quantize(np.zeros(300, F32), "q4_k")
    with pytest.raises(ShapeMismatch, match="dequantize on cpu"):
        ggml.dequantize(np.zeros(17, np.uint8), "q4_0", 32)
    with pytest.raises(ShapeMismatch, match="dequantize on cpu"):
        ggml.dequantize(np.zeros(18, np.uint8), "q4_0", 31)
    with pytest.raises(DTypeMismatch, match="dequantize on cpu: expected dtype uint8"):
        ggml.dequantize(np.zeros(18, np.int8), "q4_0", 32)


# --------------------------------------------------------------------------- cpu_quant


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16, np.float32, np.float64])
def test_cpu_quantize_any_float(dtype):
    x = np.linspace(-3, 3, 512).astype(dtype).reshape(2, 256)
    q = cpu_quant.quantize(0, x, Fmt("q8_0"))
    assert q.fmt == "q8_0" and np.array_equal(q.data, ggml.quantize(x.astype(F32), "q8_0"))
    assert cpu_quant.q_dtype(q) == "q8_0" and cpu_quant.q_device(q) == 0
    assert cpu_quant.q_size_in_bytes(q) == 16 * 34


def test_cpu_quantize_rejects_integers():
    with pytest.raises(DTypeMismatch, match="quantize on cpu"):
        cpu_quant.quantize(0, np.zeros(32, np.int64), "q4_0")


def test_qzeros_and_bytes():
    z = cpu_quant.qzeros(0, 512, Fmt("q4_K"))
    assert z.fmt == "q4_k" and not cpu_quant.q_data(z).any()
    assert not cpu_quant.q_dequantize(z, 512).any()
    raw = ggml.quantize(np.arange(64, dtype=F32), "q4_1")
    q = cpu_quant.qstorage_from_bytes(0, raw, "q4_1")
    raw[:] = 0  # the storage owns a copy
    assert np.array_equal(cpu_quant.q_dequantize(q, 64), ggml.dequantize(cpu_quant.q_data(q), "q4_1", 64))
    cpu_quant.q_data(q)[:] = 0  # and hands out copies
    assert cpu_quant.q_data(q).any()
    with pytest.raises(ShapeMismatch, match="qzeros on cpu"):
        cpu_quant.qzeros(0, 100, "q8_0")
    with pytest.raises(ShapeMismatch, match="qstorage_from_bytes on cpu"):
        cpu_quant.qstorage_from_bytes(0, np.zeros(19, np.uint8), "q4_1")
    with pytest.raises(DTypeMismatch, match="qstorage_from_bytes on cpu"):
        cpu_quant.qstorage_from_bytes(0, np.zeros(20, np.float32), "q4_1")


def test_dequantize_leading_blocks():
    x = np.random.default_rng(3).standard_normal(512).astype(F32)
    q = cpu_quant.quantize(0, x, "q6_k")
    full = cpu_quant.q_dequantize(q, 512)
    assert np.array_equal(cpu_quant.q_dequantize(q, 256), full[:256])
    half = cpu_quant.q_dequantize_f16(q, 512)
    assert half.dtype == np.float16 and np.array_equal(half, full.astype(np.float16))
    with pytest.raises(ShapeMismatch, match="dequantize on cpu"):
        cpu_quant.q_dequantize(q, 768)
    with pytest.raises(ShapeMismatch, match="dequantize_f16 on cpu"):
        cpu_quant.q_dequantize_f16(q, 100)


N = 6


def x_case(case: str, m: int, k: int, rng):
    """(flat buffer, layout, the (..., k) values the layout shows) for a layout case."""
    if case == "contiguous":
        buf = rng.standard_normal(2 * m * k).astype(F32)
        return buf, Layout.contiguous((2, m, k)), buf.reshape(2, m, k)
    if case == "transposed":  # x^T stored row-major
        buf = rng.standard_normal(k * m).astype(F32)
        return buf, Layout.contiguous((k, m)).transpose(0, 1), buf.reshape(k, m).T
    if case == "narrowed":  # a column window of a wider matrix, from an offset
        buf = rng.standard_normal(5 + m * (k + 32)).astype(F32)
        layout = Layout.contiguous((m, k + 32), start_offset=5).narrow(1, 16, k)
        return buf, layout, buf[5:].reshape(m, k + 32)[:, 16 : 16 + k]
    if case == "broadcast":  # one (m, k) matrix for 3 batches (batch stride 0)
        buf = rng.standard_normal(m * k).astype(F32)
        layout = Layout.contiguous((1, m, k)).broadcast_as((3, m, k))
        return buf, layout, np.broadcast_to(buf.reshape(1, m, k), (3, m, k))
    raise ValueError(case)


@pytest.mark.parametrize("case", ["contiguous", "transposed", "narrowed", "broadcast"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_q_matmul(fmt, case):
    rng = np.random.default_rng(sum(map(ord, fmt + case)))
    k = ggml.FORMATS[fmt].block * 2
    w = rng.standard_normal((N, k)).astype(F32)
    q = cpu_quant.quantize(0, w, fmt)
    buf, layout, xv = x_case(case, 4, k, rng)
    out = cpu_quant.q_matmul(q, buf, layout, (N, k))
    w64 = ggml.dequantize(q.data, fmt, N * k).astype(np.float64).reshape(N, k)
    want = xv.astype(np.float64) @ w64.T
    assert out.dtype == F32 and out.shape == (want.size,)
    scale = np.abs(xv).astype(np.float64) @ np.abs(w64).T
    assert np.all(np.abs(out.reshape(want.shape) - want) <= 1e-4 * scale + 1e-6)  # f32 accumulation


def test_q_matmul_errors():
    q = cpu_quant.quantize(0, np.ones((4, 64), F32), "q8_0")
    x = np.ones(3 * 64, F32)
    with pytest.raises(ShapeMismatch, match="qmatmul on cpu"):
        cpu_quant.q_matmul(q, x, Layout.contiguous((64, 3)), (4, 64))  # last dim is not k
    with pytest.raises(ShapeMismatch, match="qmatmul on cpu"):
        cpu_quant.q_matmul(q, x, Layout.contiguous((3, 64)), (8, 32))  # k not whole blocks
    with pytest.raises(ShapeMismatch, match="qmatmul on cpu"):
        cpu_quant.q_matmul(q, x, Layout.contiguous((3, 64)), (2, 64))  # n * k is not the size
    with pytest.raises(DTypeMismatch, match="qmatmul on cpu: expected dtype float32"):
        cpu_quant.q_matmul(q, x.astype(np.float64), Layout.contiguous((3, 64)), (4, 64))


@pytest.mark.parametrize("fmt", FORMATS)
def test_partial_blocks_are_a_shape_error_and_plain_formats_take_any_count(fmt):
    f = ggml.FORMATS[fmt]
    x = np.random.default_rng(3).standard_normal(f.block * 3 + 7).astype(F32)
    if f.block == 1:  # f32, f16, bf16: one value an element
        q = ggml.quantize(x, fmt)
        assert q.size == x.size * f.nbytes and ggml.dequantize(q, fmt, x.size).size == x.size
        return
    with pytest.raises(
        ShapeMismatch, match=rf"quantize on cpu: expected shape a multiple of {f.block} elements \({fmt}\)"
    ):
        ggml.quantize(x, fmt)
    q = ggml.quantize(x[: f.block * 3], fmt)
    with pytest.raises(ShapeMismatch, match=rf"dequantize on cpu: expected shape a multiple of {f.block}"):
        ggml.dequantize(q, fmt, f.block * 3 - 1)
    with pytest.raises(ShapeMismatch, match=r"block_view on cpu"):
        ggml.block_view(q[:-1], fmt)
