"""Random programs evaluated at the edges of their functions' domains (tests/test_adversary_s12.py).

A program is ``f(x, y)``: ``np.sum`` of a random composition of elementwise steps applied to ``x`` (a few
floats, some exactly 0 or -0.0) with exponents ``y``.  The steps are drawn from three kinds:

- ``ZEROS``: steps that make an exact zero from a zero with a zero derivative (``u ** 3``, ``u * u``,
  ``np.sin(u) * u``): a computed zero tangent or cotangent;
- ``EDGES``: steps with an infinite (or nan) partial at 0 (``np.sqrt``, ``u ** y`` with ``y < 1`` an array,
  ``np.power``, ``np.cbrt``, ``np.log``);
- ``KINKS``: one of several spellings of ``|u|`` (``np.abs``, ``np.hypot(u, 0.0)``, a norm or a standard
  deviation over a stacked axis); the same program with each spelling is the same function.

The points are drawn so that many sit exactly at an edge.  The oracles (test_adversary_s12): where central
and one-sided differences agree (the function is smooth there, at step sizes 1e-4 and 1e-6), each mode's
derivative is that or nan (refused); the derivative at -0.0 is the one at 0.0; each spelling of a kink
gives the same first and second derivatives (or nan)."""

from __future__ import annotations

from hypothesis import strategies as st

#: steps that keep a zero a zero, with derivative 0 there
ZEROS = ["({u}) ** 3", "({u}) ** 3", "({u}) * ({u})", "np.sin({u}) * ({u})", "({u}) ** 2 * 0.5"]
#: steps with an infinite or nan partial at 0 (y holds the exponents, 1/3 or 0.5 or 1.5 or 3.0)
EDGES = ["np.sqrt({u})", "({u}) ** y", "np.power({u}, y)", "np.cbrt({u})", "({u}) ** 0.5", "np.log({u})",
         "np.log1p({u})", "np.arcsin({u})", "np.arccos({u})", "np.arctanh({u})", "np.arccosh({u} + 1.0)", "np.log2({u})",
         "np.log10({u})", "np.reciprocal({u} + 1.0)", "({u}) ** 1.5", "({u}) ** 2.5", "np.sqrt({u}) * ({u})",
         "np.power({u}, 0.5)", "np.exp(np.log({u}) * y)", "np.float_power({u}, y)"]
#: |u|, spelled several ways (each the same function, with a kink at 0)
KINKS = ["np.abs({u})", "np.hypot({u}, 0.0)", "np.linalg.norm(np.stack([{u}, 0.0 * ({u})]), axis=0)",
         "np.std(np.stack([{u}, -({u})]), axis=0)", "np.linalg.norm(({u})[:, None], axis=1)",
         "np.hypot(0.0, {u})"]
#: smooth steps between the others
SMOOTH = ["np.exp({u})", "({u}) + 1.0", "({u}) - 1.0", "2.0 * ({u})", "np.tanh({u})"]

POINTS = [0.0, -0.0, 0.0, 1.0, -1.0, 0.5]
EXPONENTS = [1.0 / 3.0, 1.0 / 3.0, 0.5, 1.5, 3.0]  # (1/3 after ** 3: the identity, smooth through 0)


@st.composite
def edge_programs(draw):
    """``(source, x, y, kink)``: a program's source with ``{kink}`` left to fill with one of KINKS
    (``kink`` says whether it has one), its points x and exponents y (3 floats each)."""
    u = "x"
    has_kink = False
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["zero", "edge", "kink", "smooth", "zero then edge", "zero then edge"]))
        if kind == "kink" and not has_kink:
            u = "KINK(" + u + ")"
            has_kink = True
            continue
        for part in kind.split(" then "):
            step = draw(st.sampled_from({"zero": ZEROS, "edge": EDGES, "smooth": SMOOTH, "kink": ZEROS}[part]))
            u = step.format(u=u)
    # (no tiny nonzero points: x ** 3 * x ** 3 underflows to 0 there, a flat primal, whose derivative no mode knows)
    away = st.floats(-2.0, 2.0).filter(lambda v: abs(v) > 1e-2)
    x = draw(st.lists(st.one_of(st.sampled_from(POINTS), away), min_size=3, max_size=3))
    y = draw(st.lists(st.sampled_from(EXPONENTS), min_size=3, max_size=3))
    source = f"import numpy as np\n\n\ndef f(x, y):\n    return np.sum({u})\n"
    return source, x, y, has_kink


def with_kink(source: str, spelling: str) -> str:
    """``source`` with each ``KINK(arg)`` written as ``spelling`` of ``arg``."""
    while "KINK(" in source:
        start = source.index("KINK(")
        depth, i = 0, start + len("KINK")
        while True:
            depth += {"(": 1, ")": -1}.get(source[i], 0)
            if depth == 0:
                break
            i += 1
        arg = source[start + len("KINK("):i]
        source = source[:start] + spelling.format(u=arg) + source[i + 1:]
    return source
