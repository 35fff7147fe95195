"""Random programs over mixed dtypes: float64, float32 and float16 arrays, numpy scalars of each,
Python floats and ints (numpy's "weak" scalars, NEP 50), int and bool arrays, joined across an
``if``/``else`` and carried by loops, with casts (``astype``, ``np.float32(...)``, ``float(...)``,
``math`` functions), Python's ``max``/``min``, ``np.where``, ``//`` and ``%`` on ints, reductions
(``np.nanmean``, ``np.median``, ``np.trace``, ``np.diff``).

Each program astad accepts must give (oracles independent of astad's own code):

- the primal numpy gives, bit for bit, of numpy's dtype (or Python type);
- an IR whose type of every value is the value's (:func:`dtype_oracle.check_ir_types`, the IR run by
  its interpreter): a value typed float64 that numpy computes in float32 is what made astad's
  generated code differ from numpy's;
- a cotangent of each argument's dtype, a tangent of the value's (JAX's rule, README "Tangents");
- the gradient of central finite differences in float64 of the same program with every float dtype
  float64 (the "upcast" program), to the precision of the narrowest dtype in the program;
- ``<u, J v>`` of forward mode equal to ``<J^T u, v>`` of reverse mode.

A program astad refuses must be refused with astad's own error at a line of the program.  Before
the fix of the joins, ``acc = 0.0; for ...: acc = acc + x32[i]`` was typed float64 (the IR's
``result_type`` of a Python float and a float32), the loop over the sum's elements then ran on
Python floats (``tolist``): a finite float64 result where numpy's float32 overflows; before the
fix of cotangent dtypes, ``x32 * y64`` gave ``x32`` a float64 cotangent.  A Python float joined with a
numpy float64 is typed float64 and accepted until a float16 or float32 meets it
(astad/frontend/weak_joins.py); the IR-type oracle accepts the Python float there."""

from __future__ import annotations

import random
import re
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import astad
from conftest import fuzz_examples, load_program
from dtype_oracle import check_ir_types

FLOATS = ["float64", "float32", "float16"]
TOL = {"float64": 1e-6, "float32": 2e-3, "float16": 6e-2}


class Gen:
    """A program: parameters ``x, y`` (float arrays of drawn dtypes), ``s`` (a scalar: a Python float
    or a numpy scalar), ``k`` (an int array), ``m`` (a bool mask), ``c`` (a bool); statements each
    binding a bounded value (|v| <= 4: squashed with np.tanh where it could grow)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.dtypes = {"x": rng.choice(FLOATS), "y": rng.choice(FLOATS)}
        self.s_kind = rng.choice(["float", "float64", "float32", "float16"])
        self.k_dtype = rng.choice(["int64", "int32", "uint8", "int8"])  # (numpy sums uint8 to uint64, int8 to int64)
        self.arrays = ["x", "y"]  # names of float arrays of shape (3,)
        self.scalars = ["s"]  # names of float scalars
        self.lines: list[str] = []
        self.n = 0
        self.used: set[str] = set()  # dtype names the program's text mentions

    def fresh(self) -> str:
        self.n += 1
        return f"v{self.n}"

    def dtype(self) -> str:
        d = self.rng.choice(FLOATS)
        self.used.add(d)
        return d

    def arr(self) -> str:
        return self.rng.choice(self.arrays)

    def sc(self) -> str:
        return self.rng.choice(self.scalars)

    def literal(self) -> str:
        r = self.rng.random()
        if r < 0.5:
            return self.rng.choice(["0.5", "1.5", "2.0", "-0.75"])
        d = self.dtype()
        return f"np.{d}({self.rng.choice(['0.5', '1.25', '-2.0'])})"

    def array_expr(self) -> str:
        a, b = self.arr(), self.arr()
        choices = [
            lambda: f"np.tanh({a} * {b})",
            lambda: f"{a} + {b}",
            lambda: f"{a} - {self.literal()} * {b}",
            lambda: f"np.tanh({self.literal()} * {a})",
            lambda: f"np.where(m, {a}, {b})",
            lambda: f"np.where({a} > {b}, {a}, {self.literal()})",
            lambda: f"np.tanh({a} * k)",
            lambda: f"{a} * (k % 3) + {b} * (k // 2)",
            lambda: f"{a} / (k + 1)",
            lambda: f"{a} * m",
            lambda: f"{a}.astype(np.{self.dtype()})",
            lambda: f"np.sin({a}) * {self.sc()}",
            lambda: f"{a} * np.mean({b})",
            lambda: f"np.tanh({a} / ({b} * {b} + 1.0))",
            lambda: f"np.maximum({a}, {b})",
            lambda: f"np.{self.dtype()}({a})",
            lambda: f"np.diff({a}, append={a}[:1])",  # (its transpose np.diff(ct, prepend=0, append=0) was float64)
            # reductions of ints and bools: int64, or uint64 of unsigned ints (astad typed np.prod(m) a bool, np.sum
            # of uint8 a uint8: x32 * np.sum(k) was typed float32, its cotangent float64)
            lambda: f"{a} * np.{self.rng.choice(['sum', 'prod', 'cumsum', 'cumprod'])}({self.rng.choice(['k', 'm', 'k + 1'])})",
            # np.dot and np.inner make a Python number a float64 array (np.dot(x32, 2.0) is float64; was float32)
            lambda: f"np.{self.rng.choice(['dot', 'inner'])}({a}, {self.rng.choice(['0.5', '2', self.sc()])})",
            # Python's sum of bool masks counts (0 + m + m: ints); numpy's m + m is their `or` (was astad's)
            lambda: f"{a} * {self.rng.choice(['sum([m, m])', 'sum([m, m, m]) * 0.5', 'sum((m, ~m))', 'sum([m])'])}",
            # numpy's dtypes of composite functions (session 10): np.linspace of float32s is float32 (was typed
            # float64), np.full_like has a's dtype whatever the fill's (a bool fill gave a bool array), np.average
            # computes in result_type(a, w) (int8 weights gave float64), norms of ints are floats (were ints),
            # np.count_nonzero is a numpy int64 in numpy 2 (was a Python int: x32 * it typed float32)
            lambda: f"np.linspace({a}[0], {self.rng.choice([b + '[1]', '1.5', 'np.float32(0.5)'])}, 3)",
            lambda: f"np.full_like({a}, {self.rng.choice(['m[0]', 'k[1]', 's', '2', b + '[2]'])}) * {b}",
            lambda: f"{a} * np.average({b}, weights=({self.rng.choice(['k + 1', 'm', 'k'])})[::-1] + m)",
            lambda: f"{a} * np.linalg.norm({self.rng.choice(['k', 'm'])}, {self.rng.choice(['1', 'np.inf', '-np.inf', '2', '3'])}) * 0.25",
            lambda: f"{a} * np.count_nonzero({self.rng.choice(['m', 'k', b + ' > 0'])})",
        ]
        return self.rng.choice(choices)()

    def scalar_expr(self) -> str:
        a, s = self.arr(), self.sc()
        choices = [
            lambda: f"np.sum({a}) * 0.25",
            lambda: f"{a}[{self.rng.randrange(3)}] * {s}",
            lambda: f"math.tanh({a}[{self.rng.randrange(3)}])",
            lambda: f"float({a}[1]) * 0.5 + {s}",
            lambda: f"np.tanh({s} * {self.literal()})",
            lambda: f"{a}.mean() + {s}",
            lambda: f"np.max({a}) - np.min({a})",
            lambda: f"{a}[0].item() * {s}",
            lambda: f"np.{self.dtype()}({s}) * 0.5",
            lambda: f"max({a}[0], {self.rng.choice([s, '0.25', a + '[1]'])}) * 0.5",
            lambda: f"min({a}[2], {s}) - {s}",
            lambda: f"np.trace(np.outer({a}, {self.arr()})) * 0.25",
            lambda: f"np.nanmean({a}) * {s}",
            lambda: f"np.median({a}) + {s}",
            lambda: f"np.multiply({s}, 0.5)",  # (numpy's functions of Python floats are np.float64: were floats)
            lambda: f"np.subtract({s}, np.divide({s}, 4.0))",
            lambda: f"np.add(np.square({s}), -1.0)",
            # a Python float to a non-integer power: complex below 0 (refused), numpy's nan for a numpy scalar
            lambda: f"({s} - 1.0) ** {self.rng.choice(['0.5', '1.5', '2.0', s])}",
            lambda: f"float({a}[0]) ** 1.5 + {s}",
            # Python's sum of 12 numpy scalars (of a start): left to right, as Python adds (numpy's pairwise
            # .sum() of them rounded otherwise, float32 and float16 in other bits)
            lambda: self.rng.choice([f"sum({a}[j % 3] * (0.5 + 0.1 * j) for j in range(12)) * 0.05",
                                     f"sum([{a}[j % 3] * (0.5 - 0.1 * j) for j in range(12)], {s}) * 0.05"]),
            # np.sum with where= of 120 entries: numpy adds them one after another (its sum without where= pairwise:
            # other float32/float16 bits; astad summed np.where(mask, x, 0))
            lambda: f"np.sum(np.tile({a}, 40) * 0.7, where=np.tile(m, 40)"
                    f"{self.rng.choice(['', ', initial=0.5'])}) * 0.02",
            # Python's sum of an array: its rows from 0 left to right (np.sum adds 15 elements pairwise,
            # in other bits; an int32 array's sum is an int32, np.sum's an int64, which promotes float16 and
            # float32 to float64); of a literal list from 0 (-0.0 + -0.0 is 0.0 there)
            lambda: self.rng.choice([f"sum(np.concatenate([{a}] * 5) * (0.5 + {a}[0])) * 0.05",
                                     f"sum({a}, {s}) * 0.25",
                                     f"{a}[0] * sum(k) * 0.5",
                                     f"np.arctan2(sum([-abs({a}[1]) * 0.0, -abs({a}[2]) * 0.0]), -1.0) * 0.25"]),
        ]
        return self.rng.choice(choices)()

    def statement(self) -> None:
        v = self.fresh()
        r = self.rng.random()
        if r < 0.45:
            self.lines.append(f"{v} = {self.array_expr()}")
            self.arrays.append(v)
        elif r < 0.7:
            self.lines.append(f"{v} = {self.scalar_expr()}")
            self.scalars.append(v)
        elif r < 0.85:  # a join across an if/else
            if self.rng.random() < 0.5:
                a, b = self.scalar_expr(), self.rng.choice([self.scalar_expr(), self.literal()])
                self.scalars.append(v)
            else:
                a, b = self.array_expr(), self.array_expr()
                self.arrays.append(v)
            self.lines += ["if c:", f"    {v} = {a}", "else:", f"    {v} = {b}"]
        else:  # a loop carrying a sum
            init = self.rng.choice(["0.0", "0", f"np.{self.dtype()}(0.0)", f"{self.arr()}[0] * 0.0"])
            a = self.arr()
            body = self.rng.choice([f"{v} = {v} + {a}[i]", f"{v} = {v} + np.tanh({a}[i]) * {self.sc()}",
                                    f"{v} = {v} * 0.5 + {a}[i]", f"{v} = {v} + k[i]"])
            # range(3 * c): no iteration where c is False (the initial value, a Python number, is the result)
            self.lines += [f"{v} = {init}", f"for i in range({self.rng.choice(['3', '3 * c'])}):", f"    {body}"]
            self.scalars.append(v)

    def program(self) -> str:
        for _ in range(self.rng.randint(1, 5)):
            self.statement()
        a, s = self.arrays[-1], self.scalars[-1]
        ret = self.rng.choice([f"np.sum({a}) + {s}", f"np.sum({a} * {a})", f"{s} * 2.0", f"np.tanh({a}) * {s}"])
        body = "\n".join("    " + line for line in self.lines + [f"return {ret}"])
        return f"import math\nimport numpy as np\n\n\ndef f(x, y, s, k, m, c):\n{body}\n"

    def args(self, rng: np.random.Generator, upcast: bool = False) -> list:
        dt = (lambda d: "float64") if upcast else (lambda d: d)
        x = rng.uniform(-1.5, 1.5, 3).astype(dt(self.dtypes["x"]))
        y = rng.uniform(-1.5, 1.5, 3).astype(dt(self.dtypes["y"]))
        s0 = float(rng.uniform(0.5, 1.5))
        s = s0 if self.s_kind == "float" else np.dtype(dt(self.s_kind)).type(s0)
        k = np.array([0, 1, 2], dtype=self.k_dtype)
        m = np.array([True, False, True])
        return [x, y, s, k, m, bool(rng.integers(2))]


def _upcast(source: str) -> str:
    """The program with every float dtype float64."""
    return re.sub(r"np\.float(16|32)\b", "np.float64", source)


def _narrowest(gen: Gen, args: list) -> str:
    found = set(gen.used) | {a.dtype.name for a in args[:3] if isinstance(a, (np.ndarray, np.generic))}
    return next((d for d in reversed(FLOATS) if d in found), "float64")


def _dtype_of(v) -> str:
    return type(v).__name__ if type(v) in (float, int, bool) else np.asarray(v).dtype.name


def _same_primal(got, want) -> None:
    if type(want) in (float, int) and type(got) is {float: np.float64, int: np.int64}[type(want)]:
        want = type(got)(want)  # a Python number joined with a numpy one is typed (and returned as) the numpy one
    assert _dtype_of(got) == _dtype_of(want), f"value {got!r} is {_dtype_of(got)}, numpy's {want!r} {_dtype_of(want)}"
    assert isinstance(got, np.ndarray) == isinstance(want, np.ndarray), f"value {got!r}, numpy's {want!r}"
    if _dtype_of(want) in ("float64", "float"):  # a float64 loop runs on Python floats with math (README: the last bit)
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-300)
    else:
        np.testing.assert_array_equal(got, want)


def _fd(fn, args, i, eps=1e-6):
    a = args[i]
    out = np.zeros(np.shape(a))
    for j in np.ndindex(*np.shape(a)) if np.ndim(a) else [()]:
        plus, minus = list(args), list(args)
        if np.ndim(a):
            p, q = a.copy(), a.copy()
            p[j] += eps
            q[j] -= eps
        else:
            p, q = type(a)(a + eps), type(a)(a - eps)
        plus[i], minus[i] = p, q
        out[j] = (float(np.sum(fn(*plus))) - float(np.sum(fn(*minus)))) / (2 * eps)
    return out


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("dtypes")


def check_program(program_dir, seed: int, note=note) -> str:
    """The oracles of the module docstring on program ``seed``; what happened ("refused", "checked")."""
    gen = Gen(random.Random(seed))
    source = gen.program()
    note(source)
    rng = np.random.default_rng(seed)
    args = gen.args(rng)
    note(repr(args))
    mod = load_program(source, program_dir, "dtypes")
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = mod.f(*args)
        try:
            value, pullback = astad.vjp(mod.f, *args)
        except astad.InternalError:
            raise
        except astad.AstadError as e:
            assert e.loc is not None and e.loc.line > 0, f"refused without a place: {e}"
            return "refused"
        _same_primal(value, want)
        check_ir_types(mod.f, args)
        wrt = [i for i in range(3)]
        u = np.ones_like(want) if isinstance(want, np.ndarray) else 1.0
        cts = pullback(u)
        for i in wrt:
            want_dt = "float64" if type(args[i]) is float else args[i].dtype.name
            got_dt = "float64" if type(cts[i]) is float else np.asarray(cts[i]).dtype.name
            assert got_dt == want_dt, f"the cotangent of argument {i} ({want_dt}) is {got_dt}"
        # forward mode: the value, the tangent's dtype, <u, J v> == <J^T u, v>
        tangents = [np.asarray(rng.uniform(-1, 1, np.shape(a))).astype(np.asarray(a).dtype)[()]
                    if not isinstance(a, float) else float(rng.uniform(-1, 1)) for a in args[:3]]
        fvalue, jv = astad.jvp(mod.f, args, (*tangents, None, None, None))
        _same_primal(fvalue, want)
        assert _dtype_of(jv) in (_dtype_of(want), "float64" if _dtype_of(want) == "float" else "-"), \
            f"a {_dtype_of(jv)} tangent of a {_dtype_of(want)} value"
        tol = TOL[_narrowest(gen, args)]
        lhs = float(np.sum(np.asarray(u, dtype=float) * np.asarray(jv, dtype=float)))
        rhs = sum(float(np.sum(np.asarray(c, dtype=float) * np.asarray(t, dtype=float))) for c, t in zip(cts, tangents))
        scale = 1.0 + sum(float(np.sum(np.abs(np.asarray(c, dtype=float) * np.asarray(t, dtype=float))))
                          for c, t in zip(cts, tangents))
        if np.isfinite(lhs) and np.isfinite(rhs):
            assert abs(lhs - rhs) <= 4 * tol * scale, f"<u, J v> = {lhs} but <J^T u, v> = {rhs}"
        # the gradient against central differences of the program with every float dtype float64
        up = load_program(_upcast(source), program_dir, "dtypes_up")
        up_args = gen.args(np.random.default_rng(seed), upcast=True)
        up_args[5] = args[5]
        if not np.all(np.isfinite(want)):
            return "checked"
        for i in wrt:
            fd = _fd(up.f, up_args, i)
            got = np.asarray(cts[i], dtype=float)
            np.testing.assert_allclose(got, fd, rtol=4 * tol, atol=4 * tol * (1 + float(np.max(np.abs(fd)))),
                                       err_msg=f"the cotangent of argument {i}")
    return "checked"


@settings(max_examples=fuzz_examples(16, long=40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1))
def test_random_dtype_programs_are_correct_or_refused(program_dir, seed):
    check_program(program_dir, seed)


def test_the_generator_is_mostly_accepted(program_dir):
    """The programs are not all refused (the oracles above would then test nothing)."""
    outcomes = [check_program(program_dir, seed, note=lambda _: None) for seed in range(24)]
    assert outcomes.count("checked") >= 9, outcomes  # (about half: the other half mixes dtypes numpy types per path)
