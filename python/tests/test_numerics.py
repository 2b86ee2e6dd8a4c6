"""bf16, e4m3fn and key32 against hand-worked values (docs/contracts/norm_rope_store.md, OCP OFP8 1.0)."""

import numpy as np
import pytest

from kerneldiff.numerics import bf16_from_f32, bf16_to_f32, e4m3fn_from_f32, e4m3fn_to_f32, key32


def f32(*v):
    return np.array(v, dtype=np.float32)


def bits(*u):
    return np.array(u, dtype=np.uint32).view(np.float32)


# (input, code, reason), grouped by edge class.
E4M3_CASES = [
    # exact values
    (0.0, 0x00, "+0"),
    (-0.0, 0x80, "-0 keeps its sign"),
    (1.0, 0x38, "1 = 2^0: exponent 7, fraction 0"),
    (-2.0, 0xC0, "negative normal"),
    (448.0, 0x7E, "largest finite"),
    (2.0 ** -6, 0x08, "smallest normal"),
    (2.0 ** -9, 0x01, "smallest subnormal"),
    (7 * 2.0 ** -9, 0x07, "largest subnormal"),
    # rounding to nearest, ties to even
    (1.0625, 0x38, "1 + 1/16 is the midpoint of 1 and 1.125: ties to even (fraction 000)"),
    (1.1875, 0x3A, "midpoint of 1.125 (001) and 1.25 (010): to even 010"),
    (1.0625 + 2.0 ** -20, 0x39, "just above the midpoint rounds up"),
    (2.0 ** -10, 0x00, "half the smallest subnormal: tie to even zero"),
    (-(2.0 ** -10), 0x80, "negative tie to -0"),
    (3 * 2.0 ** -10, 0x02, "1.5 quanta: tie to even 2"),
    (15 * 2.0 ** -10, 0x08, "7.5 subnormal quanta: ties to even 8 = the smallest normal"),
    (1.0 + 2.0 ** -4 + 2.0 ** -5, 0x39, "above the midpoint: up"),
    # saturation
    (464.0, 0x7E, "midpoint of 448 and (NaN) 480: to even 448"),
    (465.0, 0x7E, "past the midpoint: saturates, never NaN"),
    (1e30, 0x7E, "huge saturates"),
    (-1e30, 0xFE, "negative huge saturates"),
    (np.inf, 0x7E, "+inf saturates"),
    (-np.inf, 0xFE, "-inf saturates"),
    (2.0 ** -149, 0x00, "f32 subnormal rounds to 0"),
]


@pytest.mark.parametrize("x, code, reason", E4M3_CASES, ids=[c[2] for c in E4M3_CASES])
def test_e4m3fn_hand_values(x, code, reason):
    assert int(e4m3fn_from_f32(f32(x))[0]) == code, reason


def test_e4m3fn_nan_is_7f_whatever_its_sign():
    assert e4m3fn_from_f32(bits(0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFFFFFFF)).tolist() == [0x7F] * 4


def test_e4m3fn_every_code_round_trips_and_midpoints_tie_to_even():
    codes = np.arange(256, dtype=np.uint8)
    vals = e4m3fn_to_f32(codes)
    finite = ~np.isnan(vals)
    assert finite.sum() == 254  # 0x7F and 0xFF are NaN
    np.testing.assert_array_equal(e4m3fn_from_f32(vals[finite]), codes[finite])
    pos = np.sort(vals[(codes < 0x7F)])  # 0 .. 448
    mids = ((pos[:-1].astype(np.float64) + pos[1:]) / 2).astype(np.float32)  # exact in f32
    got = e4m3fn_from_f32(mids)
    lo = e4m3fn_from_f32(pos[:-1])
    even = np.where(lo % 2 == 0, lo, lo + 1)
    np.testing.assert_array_equal(got, even)


def test_e4m3fn_decode_hand_values():
    assert e4m3fn_to_f32(np.array([0x38, 0x7E, 0xFE, 0x01, 0x08, 0x80], np.uint8)).tolist() == [
        1.0, 448.0, -448.0, 2.0 ** -9, 2.0 ** -6, -0.0]
    assert np.isnan(e4m3fn_to_f32(np.array([0x7F, 0xFF], np.uint8))).all()


BF16_CASES = [
    (1.0, 0x3F80, "exact"),
    (-2.0, 0xC000, "negative exact"),
    (1.0 + 2.0 ** -8, 0x3F80, "tie between 0x3F80 and 0x3F81: even"),
    (1.0 + 3 * 2.0 ** -8, 0x3F82, "tie between 0x3F81 and 0x3F82: even"),
    (1.0 + 2.0 ** -8 + 2.0 ** -20, 0x3F81, "just above the tie: up"),
    (np.inf, 0x7F80, "+inf"),
    (-np.inf, 0xFF80, "-inf"),
    (-0.0, 0x8000, "-0"),
    (3.4028234663852886e38, 0x7F80, "f32 max is past the last bf16 midpoint: inf"),
    (3.3895313892515355e38, 0x7F7F, "largest finite bf16"),
    (2.0 ** -133, 0x0001, "smallest bf16 subnormal"),
]


@pytest.mark.parametrize("x, want, reason", BF16_CASES, ids=[c[2] for c in BF16_CASES])
def test_bf16_hand_values(x, want, reason):
    assert int(bf16_from_f32(f32(x))[0]) == want, reason


def test_bf16_nan_quiet_with_sign():
    assert bf16_from_f32(bits(0x7F800001, 0xFFC00001, 0x7FFFFFFF)).tolist() == [0x7FC0, 0xFFC0, 0x7FC0]


def test_bf16_widen_exact():
    b = np.arange(0, 1 << 16, 97, dtype=np.uint16)
    w = bf16_to_f32(b)
    assert (w.view(np.uint32) >> 16).astype(np.uint16).tolist() == b.tolist()
    nonnan = ~np.isnan(w)
    np.testing.assert_array_equal(bf16_from_f32(w[nonnan]), b[nonnan])


def test_key32_total_order():
    # -NaN < -inf < -1 < -0 < +0 < smallest subnormal < 1 < +inf < +NaN
    vals = np.concatenate([bits(0xFFC00000, 0xFF800000), f32(-1.0, -0.0, 0.0, 1e-45, 1.0),
                           bits(0x7F800000, 0x7FC00000)])
    k = key32(vals)
    assert (np.diff(k.astype(np.int64)) > 0).all(), k


def test_type_errors_name_the_rule():
    with pytest.raises(TypeError, match="float32"):
        e4m3fn_from_f32(np.array([1.0]))
    with pytest.raises(TypeError, match="float32"):
        bf16_from_f32(np.array([1.0]))


def test_against_ml_dtypes_where_available():
    ml = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(20000) * s for s in (1e-3, 1, 100)]).astype(np.float32)
    x = x[np.abs(x) <= 448]  # ml_dtypes is not saturating above 464
    np.testing.assert_array_equal(e4m3fn_from_f32(x), x.astype(ml.float8_e4m3fn).view(np.uint8))
    np.testing.assert_array_equal(bf16_from_f32(x), x.astype(ml.bfloat16).view(np.uint16))
