"""Random programs drawn from the whole rule table (issue 11, point 7): a chain
of two to four entries, each fed the previous one's result (mapped into the
entry's domain by ``lo + (hi - lo) * (1 + tanh(r)) / 2``) where the types fit,
with fresh parameters for its other arguments.  Any entry with samples in
tests/test_primitive_rules.py (and so every entry a family's samples file
adds) can be drawn.  Each program is checked against central finite
differences in float64: the reverse macro's VJP (interpreted, and as generated
code after the optimiser), the forward macro's JVP (generated), and
⟨u, J v⟩ == ⟨Jᵀ u, v⟩ between the two."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from astad import codegen, optimise, rules, structural
from astad.ad.reverse import Builder, reverse as reverse_macro
from astad.ir import Bind, Block, Function, Num, Prim, Var, interp
from astad.optimise import copowers
from astad.pipeline import compile_source, forward_of_function
from astad.rules import TABLE, DerivativeKind
from rule_specs import A, C, I, P
from test_primitive_rules import CASES

#: the sample calls of every differentiable entry whose arguments are arrays, floats, ints and literals
STEPS = [(op, specs, params) for op, cases in sorted(CASES.items()) if TABLE[op].kind is DerivativeKind.RULE
         for specs, params in cases if all(isinstance(s, (A, P, C, I)) for s in specs)]


class Chain:
    """Builds the IR function step by step, remembering how to run it in numpy."""

    def __init__(self) -> None:
        self.params: list[Var] = []
        self.specs: list[Any] = []  # of the parameters
        self.binds: list[Bind] = []
        self.steps: list[tuple] = []  # (op, [("param", k) | ("const", v) | ("prev", lo, hi)], params)
        self.out: Var | None = None
        self.n = 0

    def fresh(self, t: Any) -> Var:
        self.n += 1
        return Var(f"v{self.n}", t)

    def prim(self, op: str, args: list, params: dict) -> Var:
        out = self.fresh(rules.infer(op, [a.type for a in args], params))
        self.binds.append(Bind((out,), Prim(op, tuple(args), tuple(sorted(params.items())))))
        return out

    def into_domain(self, prev: Var, lo: float, hi: float) -> Var:
        const = Builder(None).const
        t = self.prim("tanh", [prev], {})
        shifted = self.prim("add", [t, const(1.0)], {})
        return self.prim("add", [self.prim("mul", [shifted, const((hi - lo) / 2)], {}), const(lo)], {})

    def add_step(self, op: str, specs: tuple, params: dict) -> bool:
        """Feed the previous result into the first float argument of the fitting type; False if none fits."""
        fed = None
        if self.out is not None:
            fed = next((i for i, s in enumerate(specs) if isinstance(s, (A, P)) and getattr(s, "fed", True)
                        and s.type() == self.out.type), None)  # fed=False: a domain no box (lo, hi) gives (SPD matrices)
            if fed is None:
                return False
        args, recipe = [], []
        for i, s in enumerate(specs):
            if i == fed:
                args.append(self.into_domain(self.out, s.lo, s.hi))
                recipe.append(("prev", s.lo, s.hi))
            elif isinstance(s, C):
                args.append(Builder(None).const(s.value))
                recipe.append(("const", s.value))
            else:
                v = Var(f"a{len(self.params)}", s.type())
                self.params.append(v)
                self.specs.append(s)
                args.append(v)
                recipe.append(("param", len(self.params) - 1))
        try:
            self.out = self.prim(op, args, params)
        except rules.ShapeError:
            return False
        self.steps.append((op, recipe, params))
        return True

    def function(self) -> Function:
        return Function("f", tuple(self.params), Block(tuple(self.binds), self.out))

    def run(self, xs: list) -> Any:
        prev = None
        with np.errstate(all="ignore"):
            for op, recipe, params in self.steps:
                full = [xs[r[1]] if r[0] == "param" else r[1] if r[0] == "const"
                        else r[1] + (r[2] - r[1]) * (1.0 + np.tanh(prev)) / 2 for r in recipe]
                prev = TABLE[op].impl(*full, **params)
        return prev


@st.composite
def chains(draw) -> Chain:
    chain = Chain()
    first = draw(st.sampled_from([s for s in STEPS if any(isinstance(a, (A, P)) for a in s[1])]))
    assume(chain.add_step(*first))
    for _ in range(draw(st.integers(1, 3))):
        fitting = [s for s in STEPS if any(isinstance(a, (A, P)) and getattr(a, "fed", True) and a.type() == chain.out.type
                                           for a in s[1])]
        if not fitting or not chain.add_step(*draw(st.sampled_from(fitting))):
            break
    assume(isinstance(chain.out.type, Num) and chain.out.type.differentiable and any(
        isinstance(s, (A, P)) for s in chain.specs))
    return chain


def _fd_gradient(g, args: list, specs: list) -> list:
    out = []
    for a, s in zip(args, specs):
        if not isinstance(s, (A, P)):
            out.append(None)
            continue
        grad = np.zeros(np.shape(a))
        for idx in np.ndindex(*np.shape(a)):
            def at(h: float) -> float:
                shifted = list(args)
                b = np.array(a, dtype=float)
                b[idx] += h
                shifted[len(out)] = float(b) if isinstance(a, float) else (np.float64(b) if np.ndim(a) == 0 else b)
                return g(shifted)
            d1, d2 = (at(1e-5) - at(-1e-5)) / 2e-5, (at(2.5e-6) - at(-2.5e-6)) / 5e-6
            assume(np.isfinite(d1) and abs(d1 - d2) <= 1e-6 + 1e-5 * abs(d1))  # a kink or a jump nearby
            grad[idx] = d1
        out.append(grad)
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(chain=chains(), seed=st.integers(0, 2**32 - 1))
def test_random_chains_of_table_entries(chain, seed):
    rng = np.random.default_rng(seed)
    args = [s.draw(rng) for s in chain.specs]
    want = chain.run(args)
    assume(np.all(np.isfinite(want)))
    u = rng.standard_normal(np.shape(want))
    fn = chain.function()
    linear = structural.make_explicit(fn)
    ad = reverse_macro(linear)
    value, cts = interp.run_reverse(ad, args, u)
    np.testing.assert_allclose(np.asarray(value, float), np.asarray(want, float), rtol=1e-12, atol=1e-12)
    fd = _fd_gradient(lambda xs: float(np.sum(u * chain.run(xs))), args, chain.specs)
    program = " -> ".join(op for op, _, _ in chain.steps)
    for ct, ref in zip(cts, fd):
        if ref is not None:
            np.testing.assert_allclose(np.asarray(0.0 if ct is None else ct, float) + np.zeros(np.shape(ref)), ref,
                                       rtol=1e-5, atol=1e-6, err_msg=f"{program} (interpreted VJP)")
    opt = optimise.optimise(copowers.remove_functions(ad), None)
    forward, backward = compile_source("f", codegen.generate(opt, optimise.residuals(opt), "test"), {})
    generated = backward(forward(*args)[1], u)
    tangents = [rng.standard_normal(np.shape(a)) if isinstance(s, (A, P)) else None for a, s in zip(args, chain.specs)]
    tangents = [float(t) if isinstance(a, float) and t is not None else t for a, t in zip(args, tangents)]
    wrt = frozenset(i for i, s in enumerate(chain.specs) if isinstance(s, (A, P)))
    fwd = forward_of_function(fn, [p.type for p in fn.params], wrt, "f", {})
    _, jv = fwd.jvp(*args, *[t for t in tangents if t is not None])
    reverse_side = 0.0
    for ct, ref, t in zip(generated, fd, tangents):
        if ref is not None:
            np.testing.assert_allclose(np.asarray(0.0 if ct is None else ct, float) + np.zeros(np.shape(ref)), ref,
                                       rtol=1e-5, atol=1e-6, err_msg=f"{program} (generated VJP)")
            reverse_side += float(np.sum((0.0 if ct is None else ct) * t))
    fd_side = sum(float(np.sum(ref * t)) for ref, t in zip(fd, tangents) if ref is not None)
    np.testing.assert_allclose(float(np.sum(u * jv)), fd_side, rtol=1e-5, atol=1e-6, err_msg=f"{program} (JVP)")
    np.testing.assert_allclose(float(np.sum(u * jv)), reverse_side, rtol=1e-9, atol=1e-10,
                               err_msg=f"{program} (<u, J v> vs <J^T u, v>)")
