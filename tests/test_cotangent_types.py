"""An integer cotangent of a float value is read as the float cotangent of the
value's dtype: the cotangents a pullback returns are floats, as the same
cotangent written as floats gives (the oracle)."""

import numpy as np
import pytest

import astad


def identity(x):
    return x


def scaled_sum(a, x):
    return a * np.sum(x)


def first(x):
    return x[0]


def as_float32(x):
    return x.astype(np.float32) * 2.0


CASES = [
    (identity, (np.array([1.0, 2.0]),), np.array([1, -2])),
    (identity, (np.array([1.0, 2.0]),), np.array([3, 4], dtype=np.uint8)),
    (scaled_sum, (2.0, np.array([1.0, 2.0])), 3),
    (scaled_sum, (2.0, np.array([1.0, 2.0])), np.int64(3)),
    (first, (np.array([1.0, 2.0]),), 2),
    (first, (np.array([1.0, 2.0]),), np.int32(2)),
    (identity, (np.array(1.5),), np.array(2)),
    (as_float32, (np.array([1.0, 2.0]),), np.array([1, 2])),
]


def _leaves(cts):
    return [c for c in cts if c is not None]


@pytest.mark.parametrize("fn, args, ct", CASES, ids=lambda v: getattr(v, "__name__", None))
def test_an_integer_cotangent_is_the_float_one(fn, args, ct):
    _, pullback = astad.vjp(fn, *args)
    got = pullback(ct)
    want = pullback(np.asarray(ct, dtype=np.float64) if np.ndim(ct) else float(ct))
    for g, w in zip(_leaves(got), _leaves(want)):
        assert np.asarray(g).dtype.kind == "f"
        np.testing.assert_array_equal(np.asarray(g, dtype=np.float64), np.asarray(w, dtype=np.float64))
