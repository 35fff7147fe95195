"""Every entry of the rule table, in both directions, against independent
oracles: at random points drawn by hypothesis, for the sample arguments of
tests/test_primitive_rules.py (scalars, vectors, matrices, broadcasting
pairs) and of ``DERIVATIVE_CODE`` below (what the macros make):

* the JVP equals the central finite difference of the entry's numpy
  implementation in a random direction (float64);
* the VJP does too, read through ``<VJP(u), t>``;
* the transpose identity ``<u, JVP(t)> == <VJP(u), t>`` holds to 1e-10;
* kinds ZERO and DISCRETE have no JVP (and a ZERO entry's differences vanish).

The rules are evaluated by building their IR with the builder and running it
with the IR interpreter (:mod:`astad.ir.interp`), never through generated code.
An entry without sample arguments fails :func:`test_every_entry_has_samples`."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from astad.ir import interp
from astad.ad.reverse import Builder
from astad.ir import Bind, Block, Function, MakeTuple, Prim, TupleT, Var
from astad.names import Namer
from astad.rules import TABLE, DerivativeKind, infer
from astad.rules.table import vjp_never
from test_primitive_rules import CASES, POS, A, B, C, I, L, M, P, case
from samples_linalg import Square

# Sample arguments of the entries the reverse macro and the optimiser make.
DERIVATIVE_CODE: dict[str, list[tuple]] = {
    "select": [case(B(), A(), branch=True), case(B((2, 3)), A(), branch=False), case(B(), P(), branch=True)],
    "full": [case(P(), C((2, 3))), case(A(()), C((2,))), case(A(), C((2, 3)))],
    "reshape_like": [case(A((6,)), M), case(M, A((3, 2)))],
    "scatter": [case(A(), A((4, 3)), index=(1,)),
                case(A((2,)), A((4, 3)), I(None, 0, 4), index=(("arg", 1), ("slice", 1, None, None)))],
    "scatter_add": [case(A((4, 3)), A(), A((4, 3)), index=(1,)), case(A((4, 3)), A((2, 3)), A((4, 3)), index=(("slice", 1, 3, None),))],
    "prod_vjp": [case(M, A((1, 3)), axis=0), case(M, A((2, 1)), axis=1), case(A(), P(), axis=None),
                 case(M, A((1, 3)), M, axis=0), case(A((2, 2, 3)), A((1, 2, 1)), A((2, 2, 3)), A((2, 2, 3)), axis=(0, 2))],
    "log_domain": [case(POS), case(P(0.3, 2.5))],
    "diag_embed": [case(A(), A((3, 4)), k=1), case(A(), A((3, 3)), k=0)],
    "list_init": [case(L(3))],
    "list_popped": [case(L(3))],
    "list_pop": [case(L(3))],
    "append_in_place": [case(L(2), A((2,)))],
    "list_set_in_place": [case(L(3), A((2,)), C(1)), case(L(3), A((2,)), C(-1)), case(L(3), A((2,)), I(None, 0, 3))],
    "list_onehot": [case(L(3), C(1), A((2,))), case(L(3), I(None, 0, 3), A((2,)))],
    "list_unslice": [case(L(4), L(3), lower=1), case(L(5), L(3), step=2), case(L(3), L(3), step=-1)],
    "list_scatter_add": [case(L(3), C(1), A((2,))), case(L(3), I(None, 0, 3), A((2,)))],
    "unstack": [case(M, axis=0), case(M, axis=1)],
    "split_like": [case(A((6,)), L(3, (2,)), axis=0), case(A((2, 6)), L(3, (2, 2)), axis=1)],
    "list_zeros_like": [case(L(2))],
    "list_fill": [case(A((2,)), C(3)), case(P(), C(2)), case(A(()), C(1))],
    "or_zeros_like": [case(A(), A()), case(L(2), L(2))],
    "adjugate_tangent": [case(Square(), A((3, 3))), case(Square(n=2, batch=(2,)), A((2, 2, 2)))],
    "sum_to_dims": [case(M, C((2, 3))), case(M, C((1, 3))), case(A((2, 2, 3)), C((2, 1))), case(M, C(()))],
}

# More shapes for the functions of one argument: a Python float, a 0-d array, a matrix.
MORE_SHAPES: dict[str, list[tuple]] = {
    **{op: [case(P()), case(A(())), case(M)] for op in ("exp", "sin", "cos", "tanh", "abs", "neg")},
    "tan": [case(P(-1.2, 1.2)), case(A((2, 3), -1.2, 1.2))],
    **{op: [case(P(0.3, 2.5)), case(A((), 0.3, 2.5)), case(A((2, 3), 0.3, 2.5))] for op in ("sqrt", "log")},
}

SAMPLES = {op: CASES.get(op, []) + DERIVATIVE_CODE.get(op, []) + MORE_SHAPES.get(op, [])
           for op in {**CASES, **DERIVATIVE_CODE}}
DIFFERENTIATED = (DerivativeKind.RULE, DerivativeKind.BACKWARD_ONLY)


def _cases(kinds: tuple) -> list:
    return [pytest.param(op, args, params, id=f"{op}-{k}") for op, cs in SAMPLES.items() if TABLE[op].kind in kinds
            for k, (args, params) in enumerate(cs)]


# --------------------------------------------------------------------------- values


def _random_like(rng: np.random.Generator, v: Any) -> Any:
    if isinstance(v, list):
        return [_random_like(rng, e) for e in v]
    if isinstance(v, float):
        return float(rng.standard_normal())
    if np.ndim(v) == 0:
        return np.float64(rng.standard_normal())
    return rng.standard_normal(np.shape(v))


def _axpy(x: Any, h: float, t: Any) -> Any:
    """``x + h * t``, through lists."""
    if isinstance(x, list):
        return [_axpy(a, h, b) for a, b in zip(x, t)]
    out = x + h * t
    return float(out) if isinstance(x, float) else out


def _inner(u: Any, v: Any) -> float:
    if isinstance(u, list):
        return sum(_inner(a, b) for a, b in zip(u, v))
    return float(np.sum(np.asarray(u, dtype=float) * np.asarray(v, dtype=float)))


def _norm(v: Any) -> float:
    return np.sqrt(_inner(v, v))


def _is_float(s: Any) -> bool:
    return isinstance(s, (A, P, L))


# --------------------------------------------------------------------------- the rules as IR, interpreted


class Case:
    """One application ``out = op(args...)``: its IR, and the rules run on it."""

    def __init__(self, op: str, specs: tuple, params: dict) -> None:
        self.op, self.specs, self.params = op, specs, params
        self.b = Builder(Namer(reserved=["out", "ct", "result"] + [f"a{i}" for i in range(len(specs))]
                               + [f"t{i}" for i in range(len(specs))]))
        self.atoms, self.free = [], []
        for i, s in enumerate(specs):
            if isinstance(s, C):
                self.atoms.append(self.b.const(s.value))
            else:
                v = Var(f"a{i}", s.type())
                self.atoms.append(v)
                self.free.append((i, v))
        self.out = Var("out", infer(op, [a.type for a in self.atoms], params))
        self.prim = Prim(op, tuple(self.atoms), tuple(sorted(params.items())))

    def impl(self, args: list) -> Any:
        full, it = [], iter(copy.deepcopy(args))  # scatter_add changes its accumulator in place
        for s in self.specs:
            full.append(s.value if isinstance(s, C) else next(it))
        with np.errstate(all="ignore"):
            return TABLE[self.op].impl(*full, **self.params)

    def _run(self, extra: list[Var], result: Any, args: list, extra_values: list) -> Any:
        binds = [Bind((self.out,), self.prim)] + self.b.binds
        self.b.binds = []
        if isinstance(result, tuple):
            tup = Var("result", TupleT(tuple(a.type for a in result)))
            binds.append(Bind((tup,), MakeTuple(result)))
            result = tup
        fn = Function("f", tuple(v for _, v in self.free) + tuple(extra), Block(tuple(binds), result))
        return interp.run(fn, *copy.deepcopy(args), *copy.deepcopy(extra_values))

    def jvp(self, args: list, tangents: list) -> Any:
        """The JVP rule's tangent at ``args`` (None where it says zero)."""
        tvars, ts = [], [None] * len(self.specs)
        for (i, v), s in zip(self.free, self.specs_free()):
            if _is_float(s):
                ts[i] = Var(f"t{i}", v.type)
                tvars.append(ts[i])
        t_out = TABLE[self.op].jvp(self.b, self.prim, self.out, ts)
        if t_out is None:
            self.b.binds = []
            return None
        return self._run(tvars, t_out, args, [t for t, s in zip(tangents, self.specs_free()) if _is_float(s)])

    def vjp(self, args: list, u: Any) -> list:
        """The VJP rule's cotangents of the free arguments (None where it says zero)."""
        ct = Var("ct", self.out.type)
        cts = TABLE[self.op].vjp(self.b, self.prim, self.out, ct)
        mine = [cts[i] for i, _ in self.free]
        given_ = tuple(c for c in mine if c is not None)
        values = iter(self._run([ct], given_, args, [u]) if given_ else [])
        return [None if c is None else next(values) for c in mine]

    def specs_free(self) -> list:
        return [s for s in self.specs if not isinstance(s, C)]


def _fd(case_: Case, args: list, tangents: list) -> Any:
    """The central difference of the implementation in the direction ``tangents``,
    or a skipped example near a kink or a jump (two step sizes disagree there)."""

    def diff(h: float) -> Any:
        plus = [_axpy(a, h, t) if t is not None else a for a, t in zip(args, tangents)]
        minus = [_axpy(a, -h, t) if t is not None else a for a, t in zip(args, tangents)]
        fp, fm = case_.impl(plus), case_.impl(minus)
        if isinstance(fp, list):
            return [(np.asarray(p, float) - np.asarray(m, float)) / (2 * h) for p, m in zip(fp, fm)]
        return (np.asarray(fp, float) - np.asarray(fm, float)) / (2 * h)

    d1, d2 = diff(1e-5), diff(2.5e-6)
    flat1 = np.concatenate([np.ravel(x) for x in (d1 if isinstance(d1, list) else [d1])]) if d1 is not None else np.zeros(0)
    flat2 = np.concatenate([np.ravel(x) for x in (d2 if isinstance(d2, list) else [d2])]) if d2 is not None else np.zeros(0)
    assume(np.all(np.isfinite(flat1)) and np.all(np.abs(flat1 - flat2) <= 1e-6 + 1e-5 * np.abs(flat1)))
    return d1


def _flat(v: Any, like: Any) -> np.ndarray:
    if v is None:
        v = 0.0 * np.asarray(like, float) if not isinstance(like, list) else [0.0 * np.asarray(e, float) for e in like]
    parts = v if isinstance(v, list) else [v]
    return np.concatenate([np.ravel(np.asarray(x, dtype=float)) for x in parts]) if parts else np.zeros(0)


SEEDS = given(seed=st.integers(0, 2**32 - 1))
FEW = settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])


# --------------------------------------------------------------------------- the walk over the table


def test_every_entry_has_samples():
    """No entry can be added untested: each needs sample arguments here or in CASES."""
    # (calls of a function of its own take a function's IR: tests/test_key_functions.py)
    missing = sorted(name for name in TABLE if not SAMPLES.get(name) and name not in ("call", "call_forward", "call_backward"))
    assert not missing, f"entries without sample arguments: {missing}"
    assert set(SAMPLES) <= set(TABLE), sorted(set(SAMPLES) - set(TABLE))


def test_every_differentiated_entry_has_both_rules():
    for name, entry in TABLE.items():
        if entry.kind in DIFFERENTIATED:
            assert entry.jvp is not None, name
        else:
            assert entry.jvp is None, name
        if entry.kind is DerivativeKind.RULE:
            assert entry.vjp is not vjp_never, name


@pytest.mark.parametrize("op, specs, params", _cases(DIFFERENTIATED))
@FEW
@SEEDS
def test_jvp_vjp_and_transpose(op, specs, params, seed):
    rng = np.random.default_rng(seed)
    c = Case(op, specs, params)
    if not c.out.type.differentiable:
        return  # an integer arange: nothing to differentiate
    free = c.specs_free()
    args = [s.draw(rng) for s in free]
    tangents = [_random_like(rng, a) if _is_float(s) else None for s, a in zip(free, args)]
    value = c.impl(args)
    want = _fd(c, args, tangents)
    got = c.jvp(args, tangents)
    np.testing.assert_allclose(_flat(got, value), _flat(want, value), rtol=1e-5, atol=1e-6, err_msg=f"{op}: JVP vs FD")
    if TABLE[op].vjp is vjp_never:
        return  # made in place only by the optimiser: no reverse-mode derivative (see test_primitive_rules)
    u = _random_like(rng, value)
    cts = c.vjp(args, u)
    pairs = [(ct, t) for ct, t in zip(cts, tangents) if t is not None]
    back = sum(_inner(ct, t) for ct, t in pairs if ct is not None)
    np.testing.assert_allclose(back, _inner(u, want), rtol=1e-5, atol=1e-6 * (1 + _norm(u)), err_msg=f"{op}: <VJP(u), t> vs FD")
    forward = _inner(u, got) if got is not None else 0.0
    scale = _norm(u) * _norm(_flat(got, value)) + sum(_norm(_flat(ct, t)) * _norm(t) for ct, t in pairs)
    assert abs(forward - back) <= 1e-10 * max(scale, 1e-300), f"{op}: <u, JVP(t)> = {forward} != <VJP(u), t> = {back}"


@pytest.mark.parametrize("op, specs, params", _cases((DerivativeKind.ZERO, DerivativeKind.DISCRETE)))
@FEW
@SEEDS
def test_no_tangent_where_the_derivative_is_zero(op, specs, params, seed):
    rng = np.random.default_rng(seed)
    c = Case(op, specs, params)
    assert TABLE[op].jvp is None
    if TABLE[op].effect:
        return  # print, raise, assert: run for what they do (tests/test_python_builtins.py)
    free = c.specs_free()
    args = [s.draw(rng) for s in free]
    value = c.impl(args)
    if np.asarray(value).dtype.kind != "f":
        return  # DISCRETE: test_primitive_rules checks the result is not a float
    tangents = [_random_like(rng, a) if _is_float(s) else None for s, a in zip(free, args)]
    np.testing.assert_allclose(_flat(_fd(c, args, tangents), value), 0.0, atol=1e-6, err_msg=op)


@pytest.mark.parametrize("x", [[0.0, 2.0, 0.0, 3.0], [0.0, 1.5, -2.0, 0.5], [[0.0, 2.0], [1.0, 0.0]]])
def test_prod_vjp_directions_are_exact_at_zeros(x):
    """The derivatives of the product of the others, where entries are zero (no
    division by x): a polynomial, so the central differences are close (error h**2 times its third derivative)."""
    from astad.rules.derivative_code import prod_vjp

    x = np.array(x)
    rng = np.random.default_rng(1)
    t, s = rng.standard_normal(x.shape), rng.standard_normal(x.shape)
    for axis in (None, 0):
        first = prod_vjp(x, 1.0, t, axis=axis)
        h = 1e-5
        fd = (prod_vjp(x + h * t, 1.0, axis=axis) - prod_vjp(x - h * t, 1.0, axis=axis)) / (2 * h)
        np.testing.assert_allclose(first, fd, atol=1e-8)
        second = prod_vjp(x, 1.0, t, s, axis=axis)
        fd2 = (prod_vjp(x + h * s, 1.0, t, axis=axis) - prod_vjp(x - h * s, 1.0, t, axis=axis)) / (2 * h)
        np.testing.assert_allclose(second, fd2, atol=1e-8)
