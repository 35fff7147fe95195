"""Sample arguments of the elementwise entries added to the rule table (merged into
``CASES`` of tests/test_primitive_rules.py, so tests/test_rules_both_directions.py
checks each entry's JVP and VJP against finite differences): each with a Python
float, a 0-d array, a vector or a matrix, and broadcasting for the binary ones;
arguments inside the function's domain (the edges have their own tests in
tests/test_numpy_elementwise.py)."""

from __future__ import annotations

from rule_specs import A, B, C, I, L, M, NZ, P, POS, case  # noqa: F401

AWAY = A(lo=0.3, hi=2.0, signed=True)  # away from 0 (a kink or a pole there)
UNIT = A(lo=-0.9, hi=0.9)  # inside (-1, 1)


def _unary(lo: float, hi: float, signed: bool = False) -> list[tuple]:
    """A matrix, a 0-d array and a Python float, all drawn from (lo, hi)."""
    return [case(A((2, 3), lo, hi, signed)), case(A((), lo, hi, signed)), case(P(lo, hi, signed))]


def _binary(x: tuple, y: tuple) -> list[tuple]:
    """Broadcasting (a column against a row; a Python float against a matrix), a 0-d array with a Python float."""
    (xlo, xhi, xs), (ylo, yhi, ys) = x, y
    return [case(A((2, 1), xlo, xhi, xs), A((3,), ylo, yhi, ys)), case(P(xlo, xhi, xs), A((2, 3), ylo, yhi, ys)),
            case(A((), xlo, xhi, xs), P(ylo, yhi, ys))]


ANY, AWAY_, POS_ = (-2.0, 2.0, False), (0.3, 2.0, True), (0.3, 2.5, False)

CASES: dict[str, list[tuple]] = {
    **{op: _unary(-2.0, 2.0) for op in ("sinh", "cosh", "arcsinh", "arctan", "expm1", "exp2", "deg2rad", "rad2deg",
                                         "positive", "conjugate")},
    "sinc": _unary(-2.0, 2.0) + [case(A((3,), -0.02, 0.02))],  # the series near 0 (and its edge)
    "fabs": _unary(0.3, 2.0, signed=True),
    "cbrt": _unary(0.3, 2.0, signed=True),
    "reciprocal": _unary(0.3, 2.0, signed=True),
    "arccosh": _unary(1.2, 3.0),
    **{op: _unary(-0.9, 0.9) for op in ("arctanh", "arcsin", "arccos")},
    "log1p": _unary(-0.8, 2.0),
    **{op: _unary(0.3, 2.5) for op in ("log2", "log10")},
    "nan_to_num": [case(M), case(P()), case(A(()), nan=1.0, posinf=1e300, neginf=None)],
    "arctan2": _binary(ANY, AWAY_),
    "hypot": _binary(AWAY_, ANY),
    "logaddexp": _binary(ANY, ANY),
    "logaddexp2": _binary(ANY, ANY),
    "copysign": _binary(AWAY_, AWAY_),
    "float_power": _binary(POS_, ANY) + [case(POS, C(3))],
    "heaviside": [case(I((2, 1), -1, 2), A()), case(A(), P())],  # ints: with zeros
    # kind ZERO
    "round": [case(M, decimals=1), case(P(-4, 4), decimals=0)],
    "fix": [case(A(lo=-4, hi=4)), case(P(-4, 4))],
    # kind DISCRETE
    "isinf": [case(M), case(P())],
    "isfinite": [case(M), case(P())],
    "invert": [case(B()), case(I((2, 3), -3, 3)), case(I(None, -3, 3))],  # ~mask, ~k of an int array or int
}

# Python's math functions: numbers only (a Python float, a 0-d array; an int where it is discrete)
_MATH_DOMAIN = {"log": POS_, "log2": POS_, "log10": POS_, "sqrt": POS_, "log1p": (-0.8, 2.0, False),
                "asin": (-0.9, 0.9, False), "acos": (-0.9, 0.9, False), "atanh": (-0.9, 0.9, False),
                "acosh": (1.2, 3.0, False), "tan": (-1.2, 1.2, False), "fabs": AWAY_, "floor": (-4.0, 4.0, False),
                "ceil": (-4.0, 4.0, False), "trunc": (-4.0, 4.0, False)}
_MATH_UNARY = ("exp", "log", "log1p", "expm1", "log2", "log10", "sqrt", "sin", "cos", "tan", "asin", "acos", "atan",
               "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "fabs", "degrees", "radians", "floor", "ceil",
               "trunc", "isnan", "isinf", "isfinite")
for _i, _name in enumerate(_MATH_UNARY):
    _lo, _hi, _signed = _MATH_DOMAIN.get(_name, ANY)
    CASES[f"math_{_name}"] = [case(P(_lo, _hi, _signed) if _i % 2 else A((), _lo, _hi, _signed))]  # both kinds of number
CASES["math_exp"].append(case(I(None, -2, 3)))  # an int argument: a float result
CASES["math_floor"].append(case(I(None, -2, 3)))
CASES["math_atan2"] = [case(A(()), P(0.3, 2.0, True))]
CASES["math_hypot"] = [case(P(0.3, 2.0, True), P())]
CASES["math_pow"] = [case(P(0.3, 2.5), P()), case(P(), C(3)), case(P(0.3, 2.5), C(-1.5))]
CASES["math_copysign"] = [case(P(0.3, 2.0, True), P(0.3, 2.0, True))]
