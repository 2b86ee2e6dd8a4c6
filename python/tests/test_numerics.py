"""bf16, e4m3fn, e2m1, ue8m0 and key32 against hand-worked values (docs/contracts/norm_rope_store.md,
OCP OFP8 1.0, OCP MX 1.0) and ml_dtypes."""

import numpy as np
import pytest

from kerneldiff.numerics import (bf16_from_f32, bf16_to_f32, e2m1_from_f32, e2m1_to_f32, e4m3fn_from_f32, e4m3fn_to_f32,
                                 key32, ue8m0_ceil_f32, ue8m0_to_f32)


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


# e2m1 (OCP MX v1.0): (input, code, reason).
E2M1_CASES = [
    (0.0, 0x0, "+0"),
    (-0.0, 0x8, "-0 keeps its sign (the FP4 store clears it)"),
    (6.0, 0x7, "largest"),
    (-1.5, 0xB, "negative exact"),
    (0.25, 0x0, "midpoint of 0 and 0.5: even 0"),
    (0.75, 0x2, "midpoint of 0.5 (01) and 1 (10): even 1"),
    (1.25, 0x2, "midpoint of 1 (10) and 1.5 (11): even 1"),
    (1.75, 0x4, "midpoint of 1.5 (011) and 2 (100): even 2"),
    (2.5, 0x4, "midpoint of 2 and 3: even 2"),
    (3.5, 0x6, "midpoint of 3 and 4: even 4"),
    (5.0, 0x6, "midpoint of 4 and 6: even 4"),
    (5.0 + 2.0 ** -20, 0x7, "just above the midpoint: up"),
    (0.2499, 0x0, "below the first midpoint: 0"),
    (-0.1, 0x8, "rounds to -0"),
    (7.0, 0x7, "past 6 saturates"),
    (-1e30, 0xF, "huge negative saturates"),
    (np.inf, 0x7, "+inf saturates"),
    (-np.inf, 0xF, "-inf saturates"),
]


@pytest.mark.parametrize("x, code, reason", E2M1_CASES, ids=[c[2] for c in E2M1_CASES])
def test_e2m1_hand_values(x, code, reason):
    assert int(e2m1_from_f32(f32(x))[0]) == code, reason


def test_e2m1_nan_and_decode():
    assert e2m1_from_f32(bits(0x7FC00000, 0xFFC00000)).tolist() == [0x7, 0x7]
    assert e2m1_to_f32(np.arange(16, dtype=np.uint8)).tolist() == [
        0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6]
    assert np.signbit(e2m1_to_f32(np.array([8], np.uint8)))[0]


UE8M0_CASES = [
    (1.0, 127, "an exact power of two keeps its own exponent"),
    (1.5, 128, "rounded up"),
    (0.5 + 2.0 ** -24, 127, "just above 0.5: 1"),
    (1e-4, 114, "1e-4 = 1.6384 * 2^-14: 2^-13"),
    (2.0 ** -126, 1, "smallest normal"),
    (2.0 ** -130, 1, "subnormal: clamped to 2^-126"),
    (0.0, 1, "zero: clamped"),
    (2.0 ** 127, 254, "largest"),
    (3.0e38, 254, "past 2^127: clamped"),
    (np.inf, 254, "+inf"),
    (-2.0, 128, "the sign is ignored"),
]


@pytest.mark.parametrize("s, byte, reason", UE8M0_CASES, ids=[c[2] for c in UE8M0_CASES])
def test_ue8m0_ceil_hand_values(s, byte, reason):
    assert int(ue8m0_ceil_f32(f32(s))[0]) == byte, reason


def test_ue8m0_nan_and_decode():
    assert int(ue8m0_ceil_f32(bits(0x7FC00000))[0]) == 254
    assert ue8m0_to_f32(np.array([127, 114, 1, 254, 0], np.uint8)).tolist() == [1.0, 2.0 ** -13, 2.0 ** -126, 2.0 ** 127, 2.0 ** -127]
    assert np.isnan(ue8m0_to_f32(np.array([255], np.uint8)))[0]


def test_e2m1_against_ml_dtypes():
    ml = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.standard_normal(20000) * s for s in (0.3, 1, 3, 10)]).astype(np.float32)
    grid = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6], np.float32)
    mids = (grid[:-1] + grid[1:]) / 2
    x = np.concatenate([x, grid, -grid, mids, -mids, np.nextafter(mids, np.float32(0)), np.nextafter(mids, np.float32(9))])
    np.testing.assert_array_equal(e2m1_from_f32(x), x.astype(ml.float4_e2m1fn).view(np.uint8))
    codes = np.arange(16, dtype=np.uint8)
    np.testing.assert_array_equal(e2m1_to_f32(codes), codes.view(ml.float4_e2m1fn).astype(np.float32))
