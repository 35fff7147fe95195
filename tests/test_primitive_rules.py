"""Every entry of the primitive table, checked against its declared derivative
kind with an independent oracle (central finite differences of the entry's
own numpy implementation, in float64, at random points drawn by hypothesis):

* kind RULE: the VJP, run through the reverse macro (interpreted, and as
  generated code after the optimiser), equals the finite differences;
* kind ZERO: the finite differences of its float result are zero (so a
  function with a non-zero derivative declared ZERO, as ``%`` once was, fails);
* kind DISCRETE: its result is not a float;
* kind BACKWARD_ONLY: differentiating it in reverse mode is refused unless it
  has a VJP (its transpose, where it is linear and reads no list an earlier pop changed).

Both directions of every entry: tests/test_rules_both_directions.py.

An entry without a kind, or without sample arguments here, fails the test.
Points where a finite difference crosses a kink or a jump are skipped: there
the differences at two step sizes disagree."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from astad import codegen, optimise, rules, structural
from astad.ir import interp
from astad.optimise import copowers
from astad.errors import InternalError
from astad.ir import Bind, Block, Function, ListT, NoneT, Num, Prim, Var
from astad.pipeline import compile_source
from astad.rules import TABLE, DerivativeKind
from astad.rules.table import vjp_never
from astad.ad.reverse import Builder, reverse as reverse_macro


# --------------------------------------------------------------------------- argument specs

from rule_specs import A, B, C, I, L, M, NZ, P, POS, case  # noqa: E402,F401  (the sample files use them too)
import samples_elementwise, samples_reductions, samples_shape, samples_linalg, samples_indexing, samples_python  # noqa: E402


# Sample arguments of every entry that is not BACKWARD_ONLY.
CASES: dict[str, list[tuple]] = {
    "add": [case(M, A()), case(P(), A((2,))), case(P(), P())],
    "sub": [case(M, A()), case(P(), P()), case(A((2, 1)), A((3,)))],
    "mul": [case(M, A()), case(P(), A((2,))), case(P(), P())],
    "div": [case(M, NZ), case(P(), P(lo=0.4, hi=2.0, signed=True)), case(A(), C(2.0))],
    "mod": [case(M, NZ), case(A(lo=-6, hi=6), NZ), case(P(-6, 6), P(0.4, 2.0, signed=True)), case(A(lo=-6, hi=6), C(1.5)),
            case(A(lo=-6, hi=6), C(2)), case(P(-6, 6), A((2,), 0.4, 2.0, signed=True)), case(C(5.5), NZ)],
    "fmod": [case(M, NZ), case(A(lo=-6, hi=6), NZ), case(A(lo=-6, hi=6), C(1.5)), case(P(-6, 6), P(0.4, 2.0, signed=True))],
    "pow": [case(POS, A()), case(P(0.3, 2.5), P()), case(A(), C(3)), case(POS, C(0.5)), case(A(), C(2)), case(M, C(0)),
            case(A(), I((3,), -1, 4)), case(A(), I(None, 0, 3)), case(POS, C(-1.5)), case(A(), C(2.0))],
    "power": [case(POS, A()), case(A(), I((3,), 0, 3))],
    "neg": [case(A()), case(P())],
    "matmul": [case(M, A((3, 4))), case(A(), A((3, 2))), case(M, A()), case(A(), A()), case(A((2, 2, 3)), A()),
               case(A((2, 2, 3)), A((3, 2)))],
    "dot": [case(M, A((3, 2))), case(A(), A())],
    "outer": [case(A((2,)), A()), case(M, A((2,)))],
    "exp": [case(A()), case(P())], "sin": [case(A())], "cos": [case(A())], "tanh": [case(A())],
    "tan": [case(A(lo=-1.2, hi=1.2))], "log": [case(POS), case(P(0.3, 2.5))], "sqrt": [case(POS)],
    "abs": [case(A()), case(P())],
    "maximum": [case(M, A()), case(P(), P()), case(A(), C(0.0)), case(C(0.5), A()), case(A(), I((3,)))],
    "minimum": [case(M, A()), case(P(), P()), case(A(), C(0.0)), case(C(0.5), A())],
    "where": [case(B(), A(), A()), case(B((2, 3)), A(), P()), case(B(), P(), C(1.0))],
    "clip": [case(A(), C(-0.5), C(0.5)), case(A(), A(), A()), case(A(), C(None), P()), case(A(), P(), C(None)),
             case(M, A(), P()), case(A(), C(0.5), C(-0.5)), case(P(), P(), P())],
    **{op: [case(M), case(M, axis=0), case(M, axis=1, keepdims=True), case(A((2, 3, 2)), axis=(0, 2))]
       for op in ("sum", "mean", "max", "min", "prod")},
    "transpose": [case(M), case(A((2, 3, 4)), axes=(1, 0, 2))],
    "reshape": [case(M, C(3), C(2)), case(A((6,)), C(-1), C(2))],
    "ravel": [case(M)],
    "copy": [case(A()), case(M)],
    "expand_dims": [case(M, axis=1), case(M, axis=(0, 2))],
    "concatenate": [case(M, A((1, 3)), axis=0), case(A((2, 1)), M, axis=1)],
    "stack": [case(A(), A(), axis=0), case(A(), A(), axis=1)],
    "diag": [case(A(), k=0), case(A(), k=1), case(A((3, 3)), k=0), case(A((3, 4)), k=-1)],
    "tril": [case(A((3, 3)), k=0), case(A((3, 4)), k=1)],
    "triu": [case(A((3, 3)), k=0), case(A((3, 4)), k=-1)],
    "getitem": [case(A((4, 3)), index=(1,)), case(A((4, 3)), index=(("slice", 1, None, None), 2)),
                case(A((4, 3)), index=(None, Ellipsis, 0)), case(A((4, 3)), I(None, 0, 4), index=(("arg", 1),))],
    "arange": [case(P(-2, 2), C(5.0)), case(P(-2, 2), C(5.0), P(0.5, 1.5)), case(P(1, 4)), case(I(None, 1, 5))],
    "broadcast_to": [case(A(), C((2, 3)))],
    "to_float": [case(A(()))],
    "sum_to": [case(M, A()), case(A((2, 3)), A((2, 1)))],
    "list": [case(A((2,)), A((2,)))],
    "append": [case(L(2), A((2,)))],
    "list_get": [case(L(3), C(1)), case(L(3), C(-1))],
    "list_of_length": [case(L(3), n=3)],
    "list_copy": [case(L(3))],
    "stack_list": [case(L(3), axis=0), case(L(3), axis=1)],
    "concatenate_list": [case(L(3), axis=0)],
    # kind ZERO
    "floordiv": [case(A(lo=-6, hi=6), NZ), case(P(-6, 6), P(0.4, 2.0, signed=True)), case(A(lo=-6, hi=6), C(1.5))],
    **{op: [case(A(lo=-4, hi=4))] for op in ("sign", "floor", "ceil", "trunc", "rint")},
    "zeros": [case(C(2), C(3))], "ones": [case(C(2))], "eye": [case(C(3))],
    "zeros_like": [case(A())], "ones_like": [case(M)],
    # kind DISCRETE
    **{op: [case(A(), A()), case(P(), A())] for op in ("lt", "le", "gt", "ge", "eq", "ne")},
    "not_": [case(P())], "and_": [case(B(), B())], "or_": [case(B(), B())], "isnan": [case(A()), case(P())],
    "shape": [case(M)], "dim": [case(M, axis=1)], "len": [case(A())], "size": [case(M)], "list_len": [case(L(2))],
}

# Each family's new entries have their own sample file (one per rules module).
for _family in (samples_elementwise, samples_reductions, samples_shape, samples_linalg, samples_indexing, samples_python):
    for _op, _cases_of_op in _family.CASES.items():
        CASES.setdefault(_op, []).extend(_cases_of_op)


# --------------------------------------------------------------------------- programs and oracles


def _program(op: str, specs: tuple, params: dict) -> tuple[Function, list[int]]:
    """The core-IR function ``f(params...) = op(args...)``; constants are literals.
    Also the positions of the arguments that are parameters."""
    const = Builder(None).const
    atoms, params_vars, positions = [], [], []
    for i, s in enumerate(specs):
        if isinstance(s, C):
            atoms.append(const(s.value))
        else:
            v = Var(f"a{i}", s.type())
            atoms.append(v)
            params_vars.append(v)
            positions.append(i)
    out = Var("out", rules.infer(op, [a.type for a in atoms], params))
    body = Block((Bind((out,), Prim(op, tuple(atoms), tuple(sorted(params.items())))),), out)
    return Function("f", tuple(params_vars), body), positions


def _call(op: str, specs: tuple, params: dict, args: list) -> Any:
    full, it = [], iter(args)
    for s in specs:
        full.append(s.value if isinstance(s, C) else next(it))
    with np.errstate(all="ignore"):
        return TABLE[op].impl(*full, **params)


def _random_like(rng: np.random.Generator, v: Any) -> Any:
    if isinstance(v, list):
        return [_random_like(rng, e) for e in v]
    if isinstance(v, float):
        return float(rng.standard_normal())
    return rng.standard_normal(np.shape(v))


def _inner(u: Any, v: Any) -> float:
    if isinstance(u, list):
        return sum(_inner(a, b) for a, b in zip(u, v))
    return float(np.sum(np.asarray(u) * np.asarray(v)))


def _coordinates(a: Any) -> list[tuple]:
    """The float coordinates of an argument: (list index or None, array index)."""
    if isinstance(a, list):
        return [(k, idx) for k, e in enumerate(a) for idx in np.ndindex(*np.shape(e))]
    return [(None, idx) for idx in np.ndindex(*np.shape(a))]


def _shifted(a: Any, where: tuple, h: float) -> Any:
    k, idx = where
    if k is not None:
        out = list(a)
        out[k] = _shifted(a[k], (None, idx), h)
        return out
    if isinstance(a, float):
        return a + h
    b = np.array(a, dtype=float)
    b[idx] += h
    return np.float64(b) if np.ndim(a) == 0 and not isinstance(a, np.ndarray) else b


def _fd(g: Any, args: list, i: int, where: tuple, eps: float) -> float:
    plus, minus = list(args), list(args)
    plus[i], minus[i] = _shifted(args[i], where, eps), _shifted(args[i], where, -eps)
    return (g(plus) - g(minus)) / (2 * eps)


def _smooth_fd(g: Any, args: list, i: int, where: tuple) -> float:
    """The central difference, or a skipped example where the point is near a kink or a jump
    (the differences at two step sizes disagree there)."""
    d1, d2 = _fd(g, args, i, where, 1e-5), _fd(g, args, i, where, 2.5e-6)
    assume(np.isfinite(d1) and abs(d1 - d2) <= 1e-6 + 1e-5 * abs(d1))
    return d1


def _is_float_arg(s: Any) -> bool:
    return isinstance(s, (A, P, L))


def _assert_matches_fd(op: str, specs: tuple, params: dict, args: list, u: Any, *results: tuple[Any, str]) -> None:
    """Each of ``results``, a pair (cotangents, label), equals the central differences of
    ``<u, op(args)>`` (computed once for all of them)."""
    def g(xs: list) -> float:
        return _inner(u, _call(op, specs, params, xs))

    free = [s for s in specs if not isinstance(s, C)]
    for i, (s, a) in enumerate(zip(free, args)):
        if not _is_float_arg(s):
            for cts, label in results:
                assert cts[i] is None, f"{label}: discrete argument {i} got cotangent {cts[i]!r}"
            continue
        for where in _coordinates(a):
            want = _smooth_fd(g, args, i, where)
            for cts, label in results:
                ct = cts[i]
                got = 0.0 if ct is None else (ct[where[0]] if where[0] is not None else ct)
                got = np.asarray(got, dtype=float)[where[1]] if np.ndim(got) else float(got)
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"{label}: argument {i} at {where}")


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_same, a, b))
    return type(a) is type(b) and np.array_equal(a, b)


def _cases(kind: DerivativeKind) -> list:
    return [pytest.param(op, args, params, id=f"{op}-{k}") for op, cs in CASES.items() if TABLE[op].kind is kind
            for k, (args, params) in enumerate(cs)]


SEEDS = given(seed=st.integers(0, 2**32 - 1))
FEW = settings(max_examples=6, deadline=None)


# --------------------------------------------------------------------------- the walk over the table


#: calls of a function of its own, whose arguments are a function's IR: tests/test_key_functions.py
KEY_FUNCTION_CALLS = {"call", "call_forward", "call_backward"}


def test_every_entry_has_a_kind_and_samples():
    for name, entry in TABLE.items():
        assert isinstance(entry.kind, DerivativeKind), name
        if entry.kind is not DerivativeKind.BACKWARD_ONLY and name not in KEY_FUNCTION_CALLS:
            assert CASES.get(name), f"primitive {name} has no sample arguments in CASES"
    assert set(CASES) <= set(TABLE)


def test_an_entry_must_state_its_kind():
    with pytest.raises(TypeError):
        rules.Primitive("f", np.sin, rules.elementwise_type(np.sin), None, None)  # type: ignore[call-arg]
    vjp, jvp = TABLE["sin"].vjp, TABLE["sin"].jvp
    R, Z, D, BO = DerivativeKind.RULE, DerivativeKind.ZERO, DerivativeKind.DISCRETE, DerivativeKind.BACKWARD_ONLY
    for kind, v, j in [(R, None, jvp), (R, vjp, None), (Z, vjp, None), (Z, None, jvp), (D, vjp, None), (D, None, jvp),
                       (BO, vjp, None), (BO, None, None), ("zero", None, None)]:
        with pytest.raises(InternalError):
            rules.with_kind_rule(rules.Primitive("f", np.sin, rules.elementwise_type(np.sin), None, v, kind=kind, jvp=j))
    for kind, v, j in [(R, vjp, jvp), (Z, None, None), (D, None, None), (BO, vjp, jvp), (BO, None, jvp)]:
        rules.with_kind_rule(rules.Primitive("f", np.sin, rules.elementwise_type(np.sin), None, v, kind=kind, jvp=j))


_REVERSE_PROGRAMS: dict = {}


def _reverse_programs(op: str, specs: tuple, params: dict) -> tuple:
    """The reverse program of a sample call (AD output, for the interpreter) and its generated
    code after the optimiser: made once per sample, since hypothesis's examples of one sample
    draw new points for the same program (the key is the repr: ``C(2)`` and ``C(2.0)`` differ)."""
    key = (op, repr(specs), repr(sorted(params.items())))
    if key not in _REVERSE_PROGRAMS:
        fn, _ = _program(op, specs, params)
        ad = reverse_macro(structural.make_explicit(fn))
        opt = optimise.optimise(copowers.remove_functions(ad), None)
        _REVERSE_PROGRAMS[key] = ad, compile_source("f", codegen.generate(opt, optimise.residuals(opt), "test"), {})
    return _REVERSE_PROGRAMS[key]


@pytest.mark.parametrize("op, specs, params", _cases(DerivativeKind.RULE))
@FEW
@SEEDS
def test_rule_matches_finite_differences(op, specs, params, seed):
    rng = np.random.default_rng(seed)
    ad, (forward, backward) = _reverse_programs(op, specs, params)
    args = [s.draw(rng) for s in specs if not isinstance(s, C)]
    want = _call(op, specs, params, args)
    u = _random_like(rng, want)
    value, cts = interp.run_reverse(ad, args, u)
    np.testing.assert_allclose(np.asarray(value, dtype=float) if not isinstance(value, list) else np.array(value),
                               np.asarray(want, dtype=float) if not isinstance(want, list) else np.array(want))
    before = copy.deepcopy(args)
    _, residuals = forward(*args)
    generated = backward(residuals, u)
    assert all(_same(a, b) for a, b in zip(args, before)), f"{op}: the generated code changed its arguments"
    _assert_matches_fd(op, specs, params, args, u, (cts, f"{op} (interpreted)"), (generated, f"{op} (generated)"))


@pytest.mark.parametrize("op, specs, params", _cases(DerivativeKind.ZERO))
@FEW
@SEEDS
def test_zero_derivative_is_the_truth(op, specs, params, seed):
    """A ZERO entry's float result has zero finite differences a.e. (``mod`` declared ZERO fails here)."""
    rng = np.random.default_rng(seed)
    args = [s.draw(rng) for s in specs if not isinstance(s, C)]
    out = _call(op, specs, params, args)
    assert np.asarray(out).dtype.kind == "f", f"{op}: a ZERO entry whose result is not a float is DISCRETE"
    u = _random_like(rng, out)
    _assert_matches_fd(op, specs, params, args, u, ([None] * len(args), op))
    fn, _ = _program(op, specs, params)
    _, cts = interp.run_reverse(reverse_macro(structural.make_explicit(fn)), args, u)
    assert all(c is None or not np.any(c) for c in cts), f"{op}: cotangents {cts}"


@pytest.mark.parametrize("op, specs, params", _cases(DerivativeKind.DISCRETE))
def test_discrete_result_is_not_a_float(op, specs, params):
    rng = np.random.default_rng(0)
    fn, _ = _program(op, specs, params)
    assert not fn.body.result.type.differentiable, f"{op}: type {fn.body.result.type}"
    if TABLE[op].effect:  # print, raise, assert: run for what they do (tests/test_python_builtins.py)
        assert fn.body.result.type == NoneT(), op
        return
    out = _call(op, specs, params, [s.draw(rng) for s in specs if not isinstance(s, C)])
    leaves = out if isinstance(out, tuple) else (out,)
    assert all(np.asarray(v).dtype.kind in "biu" for v in leaves), f"{op}: {out!r}"


@pytest.mark.parametrize("op", [n for n, e in TABLE.items() if e.vjp is vjp_never])
def test_backward_only_entries_without_a_transpose_refuse_reverse_mode(op):
    with pytest.raises(InternalError):
        TABLE[op].vjp(None, Prim(op, ()), None, None)
