"""Random straight-line programs over the supported subset, written to .py
files and imported.  For each: (a) the pullback against central finite
differences (``conftest.check_grad``); (b) the IR interpreter against direct
execution: the core and structural IR evaluate to what the function returns,
and the AD and optimised reverse programs give the generated code's value and
cotangents.

Values stay bounded (an expression that could grow large is wrapped in
``np.tanh``) so that finite differences stay accurate; functions with kinks are
used only where the inputs cannot sit on the kink (log/sqrt of ``a * a + 1.0``,
no ``abs``).  Programs may contain dead code (values never read, ended by
``drop``)."""

import math
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import astad
from astad import interp
from conftest import check_grad, load_program

PARAM_SHAPES = ["f", (), (3,), (4,), (3, 4), (4, 3), (2, 3, 4), (3, 1), (1, 4), (2, 3)]
LIMIT = 4.0  # larger possible values are squashed with np.tanh
INPUT_BOUND = 1.5

HELPERS = '''

def _helper(a, b):
    return np.tanh(a * b) + a


def _pair(a):
    return np.sin(a), np.cos(a)
'''


def _dummy(shape, value=0.7):
    return value if shape == "f" else np.full(shape, value)


_NAMESPACE = {"np": np}
exec(HELPERS, _NAMESPACE)  # noqa: S102 - the helpers, for _shape_of


def _shape_of(expr, env):
    """The shape of ``expr`` ("f" for a Python float), found by evaluating it on stand-in values."""
    with np.errstate(all="ignore"):
        value = eval(expr, _NAMESPACE,  # noqa: S307 - our own programs
                     {n: _dummy(v["shape"]) if v["shape"] != "int" else v["value"] for n, v in env.items()})
    return "f" if type(value) is float else np.shape(value)


def _nd(shape):
    return 0 if shape == "f" else len(shape)


def _bshape(shape):
    return () if shape == "f" else shape


def _broadcasts(s, t):
    try:
        np.broadcast_shapes(_bshape(s), _bshape(t))
        return True
    except ValueError:
        return False


class Gen:
    """Builds one program, statement by statement, tracking each live name's
    shape, a bound on its absolute values, and whether it may be updated in
    place (a fresh array that no other name or view shares)."""

    def __init__(self, draw):
        self.draw = draw
        self.env: dict[str, dict] = {}
        self.lines: list[str] = []
        self.unread: set[str] = set()
        self.assigned: set[str] = set()
        self.counter = 0
        self.params: list[tuple[str, object]] = []

    # ------------------------------------------------------------------ helpers

    def pick(self, options):
        return self.draw(st.sampled_from(options))

    def floats(self):
        return [n for n, v in self.env.items() if v["shape"] != "int"]

    def arrays(self, min_nd=1):
        return [n for n in self.floats() if _nd(self.env[n]["shape"]) >= min_nd]

    def fresh_name(self):
        self.counter += 1
        return f"v{self.counter}"

    def target(self):
        names = [n for n in self.floats() if n not in self.unread]
        if names and self.draw(st.integers(0, 3)) == 0:
            return self.pick(names)  # reassign an existing name (whose value was read)
        return self.fresh_name()

    def line(self, text):
        """Add a statement, tracking which names hold a value nothing has read yet."""
        names = r"\b(?:v\d+|x|y|z|k)\b"
        aug = re.match(r"^(\w+) [-+*/]= (.*)$", text)
        if aug:
            targets, rhs = [aug.group(1)], text
        else:
            lhs, rhs = text.split(" = ", 1)
            targets = re.findall(names, lhs)
        self.unread.difference_update(re.findall(names, rhs))
        self.unread.update(targets)
        self.assigned.update(targets)
        self.lines.append(text)

    def bound(self, name):
        return self.env[name]["bound"]

    def squash(self, expr, bound):
        if bound > LIMIT or not math.isfinite(bound):
            return f"np.tanh({expr})", 1.0
        return expr, bound

    def assign(self, target, expr, bound, fresh, views=()):
        for v in views:  # a view of v: v must no longer be updated in place
            if v in self.env:
                self.env[v]["fresh"] = False
        shape = _shape_of(expr, self.env)
        self.line(f"{target} = {expr}")
        self.env[target] = {"shape": shape, "bound": bound, "fresh": fresh and shape != "f"}

    # ------------------------------------------------------------------ expressions: (expr, bound, fresh, views)

    def e_binary(self):
        a = self.pick(self.floats())
        partners = [n for n in self.floats() if _broadcasts(self.env[n]["shape"], self.env[a]["shape"])]
        b = self.pick(partners + ["0.5", "2.0", "-1.5"])
        ba, bb = self.bound(a), (self.bound(b) if b in self.env else abs(float(b)))
        if self.draw(st.booleans()):
            a, b, ba, bb = b, a, bb, ba
        op = self.pick(["+", "-", "*", "/", "max", "min"])
        if op in "+-":
            expr, bound = f"{a} {op} {b}", ba + bb
        elif op == "*":
            expr, bound = f"{a} * {b}", ba * bb
        elif op == "/":
            expr, bound = f"{a} / ({b} * {b} + 1.0)", ba
        else:
            expr, bound = f"np.{op}imum({a}, {b})", max(ba, bb)
        return (*self.squash(expr, bound), True, ())

    def e_unary(self):
        a = self.pick(self.floats())
        ba = self.bound(a)
        choices = {
            "np.tanh({})": 1.0, "np.sin({})": 1.0, "np.cos({})": 1.0, "-{}": ba,
            "np.exp({})": math.exp(min(ba, 50.0)), "np.log({0} * {0} + 1.0)": math.log(ba * ba + 1.0),
            "np.sqrt({0} * {0} + 1.0)": math.sqrt(ba * ba + 1.0), "{} ** 2": ba ** 2, "{} ** 3": ba ** 3,
            "np.square({})": ba ** 2, "_helper({0}, 0.5)": 1.0 + ba,
        }
        form = self.pick(sorted(choices))
        return (*self.squash(form.format(a), choices[form]), True, ())

    def e_reduction(self):
        names = self.arrays()
        if not names:
            return None
        a = self.pick(names)
        shape = self.env[a]["shape"]
        nd = len(shape)
        axes = [None, *range(nd), *range(-nd, 0)] + ([(0, nd - 1)] if nd > 1 else [])
        axis = self.pick(axes)
        keep = self.draw(st.booleans())
        name = self.pick(["sum", "mean", "max", "min", "prod"])
        kw = ([] if axis is None else [f"axis={axis!r}"]) + (["keepdims=True"] if keep else [])
        expr = f"np.{name}({', '.join([a] + kw)})" if self.draw(st.booleans()) else f"{a}.{name}({', '.join(kw)})"
        count = int(np.prod(shape)) if axis is None else int(np.prod([shape[i] for i in np.atleast_1d(axis)]))
        bound = {"sum": self.bound(a) * count, "prod": self.bound(a) ** count}.get(name, self.bound(a))
        return (*self.squash(expr, bound), True, ())

    def e_matmul(self):
        pairs = []
        for a in self.arrays():
            for b in self.arrays():
                try:
                    np.matmul(np.empty(self.env[a]["shape"]), np.empty(self.env[b]["shape"]))
                    pairs.append((a, b))
                except ValueError:
                    pass
        if not pairs:
            return None
        a, b = self.pick(pairs)
        sa, sb = self.env[a]["shape"], self.env[b]["shape"]
        k = sa[-1]
        form = "np.dot({}, {})" if len(sa) <= 2 and len(sb) <= 2 and self.draw(st.booleans()) else "{} @ {}"
        return (*self.squash(form.format(a, b), self.bound(a) * self.bound(b) * k), True, ())

    def e_index(self):
        names = self.arrays()
        if not names:
            return None
        a = self.pick(names)
        shape = self.env[a]["shape"]
        d0 = shape[0]
        i = self.draw(st.integers(-d0, d0 - 1))
        lo = self.draw(st.integers(0, d0 - 1))
        forms = [f"{a}[{i}]", f"{a}[{lo}:]", f"{a}[:{lo + 1}]", f"{a}[::-1]", f"{a}[::2]", f"{a}[1::2]" if d0 > 1 else f"{a}[:]",
                 f"{a}[None]", f"{a}[:, None]", f"{a}[..., -1]", f"{a}[-{lo + 1}:]"]
        if len(shape) >= 2:
            j = self.draw(st.integers(-shape[1], shape[1] - 1))
            forms += [f"{a}[:, {j}]", f"{a}[{i}, {j}]", f"{a}[1:, ::-1]", f"{a}[:, :{shape[1] - 1 or 1}]",
                      f"{a}[: {a}.shape[0] - 1]" if d0 > 1 else f"{a}[:]", f"{a}[:, len({a}) - {d0}]"]
        ints = [n for n, v in self.env.items() if v["shape"] == "int" and v["value"] < d0]
        if ints:
            forms.append(f"{a}[{self.pick(ints)}]")
        return self.pick(forms), self.bound(a), False, (a,)

    def e_shape(self):
        names = self.arrays()
        if not names:
            return None
        a = self.pick(names)
        shape = self.env[a]["shape"]
        forms = [f"{a}.reshape(-1)", f"{a}.reshape(1, -1)", f"np.reshape({a}, (-1, {shape[-1]}))", f"{a}.T",
                 f"np.transpose({a})", f"np.expand_dims({a}, 0)"]
        if len(shape) == 3:
            forms += [f"np.transpose({a}, (1, 0, 2))", f"{a}.transpose(2, 0, 1)"]
        same = [n for n in names if self.env[n]["shape"] == shape]
        b = self.pick(same)
        forms += [f"np.stack([{a}, {b}])", f"np.stack(({a}, {b}), axis=-1)", f"np.concatenate([{a}, {b}])"]
        if len(shape) >= 2:
            forms.append(f"np.concatenate([{a}, {b}], axis=1)")
        if len(shape) == 2:
            forms += [f"np.tril({a})", f"np.triu({a}, 1)", f"np.diag({a})"]
        if len(shape) == 1:
            forms += [f"np.diag({a})", f"np.outer({a}, {b})"]
        bound = max(self.bound(a), self.bound(b))
        form = self.pick(forms)
        if "outer" in form:
            bound = self.bound(a) * self.bound(b)
        fresh = any(s in form for s in ("stack", "concatenate", "tril", "triu", "outer"))
        return (*self.squash(form, bound), fresh, () if fresh else (a,))

    def e_where(self):
        x = self.pick(self.floats())
        ys = [n for n in self.floats() if _broadcasts(self.env[n]["shape"], self.env[x]["shape"])] + ["0.0"]
        y = self.pick(ys)
        xy = np.broadcast_shapes(_bshape(self.env[x]["shape"]), _bshape(self.env[y]["shape"]) if y in self.env else ())
        c = self.pick([n for n in self.floats() if _broadcasts(self.env[n]["shape"], xy)])
        by = self.bound(y) if y in self.env else 0.0
        return f"np.where({c} > 0.1, {x}, {y})", max(self.bound(x), by), True, ()

    def e_int_scale(self):
        ints = [n for n, v in self.env.items() if v["shape"] == "int"]
        if not ints:
            return None
        a, k = self.pick(self.floats()), self.pick(ints)
        return (*self.squash(f"{a} * {k}", self.bound(a) * self.env[k]["value"]), True, ())

    # ------------------------------------------------------------------ statements

    def statement(self):
        kind = self.pick(["expr"] * 6 + ["unpack", "aug", "pair"])
        if kind == "unpack":
            first, second = self.expression(), self.expression()
            t1, t2 = self.fresh_name(), self.fresh_name()
            self.line(f"{t1}, {t2} = {first[0]}, {second[0]}")
            for t, (expr, bound, fresh, views) in ((t1, first), (t2, second)):
                for v in views:
                    self.env[v]["fresh"] = False
                self.env[t] = {"shape": _shape_of(expr, self.env), "bound": bound, "fresh": False}
            return
        if kind == "pair":
            a = self.pick(self.floats())
            t1, t2 = self.fresh_name(), self.fresh_name()
            self.line(f"{t1}, {t2} = _pair({a})")
            for t in (t1, t2):
                self.env[t] = {"shape": _shape_of(f"_pair({a})[0]", self.env), "bound": 1.0, "fresh": False}
            return
        if kind == "aug":
            targets = [n for n in self.floats() if self.env[n]["fresh"] or self.env[n]["shape"] == "f"]
            if targets:
                t = self.pick(targets)
                st_ = self.env[t]["shape"]
                others = [n for n in self.floats()
                          if _broadcasts(st_, self.env[n]["shape"])
                          and np.broadcast_shapes(_bshape(st_), _bshape(self.env[n]["shape"])) == _bshape(st_)
                          and (st_ != "f" or self.env[n]["shape"] == "f")]
                b = self.pick(others + ["0.25"])
                bb = self.bound(b) if b in self.env else 0.25
                op = self.pick(["+=", "-=", "*=", "/="])
                rhs = f"({b} * {b} + 1.0)" if op == "/=" else b
                bound = {"+=": self.bound(t) + bb, "-=": self.bound(t) + bb, "*=": self.bound(t) * bb,
                         "/=": self.bound(t)}[op]
                if bound <= LIMIT:
                    self.line(f"{t} {op} {rhs}")
                    self.env[t]["bound"] = bound
                    return
        expr, bound, fresh, views = self.expression()
        self.assign(self.target(), expr, bound, fresh, views)

    def expression(self):
        while True:
            kind = self.pick(["binary"] * 3 + ["unary"] * 2 + ["reduction", "matmul", "index", "shape", "where",
                                                                 "int_scale"])
            out = getattr(self, f"e_{kind}")()
            if out is not None and 0 not in _bshape(_shape_of(out[0], self.env)):  # no empty arrays
                return out

    def ret(self):
        if self.draw(st.integers(0, 3)) == 0:  # sometimes leave parameters unused (dropped)
            self.unread.difference_update(p for p, _ in self.params if p not in self.assigned)
        if "k" in self.unread:
            a = self.pick(self.floats())
            self.assign(self.fresh_name(), f"{a} * k", self.bound(a) * self.env["k"]["value"], True)
        names = self.floats()
        # Usually every value (parameters included) is read or returned; sometimes
        # some are left as dead code, which the structural pass drops.
        unused = [n for n in names if n in self.unread]
        if unused and self.draw(st.integers(0, 3)) != 0:
            return ", ".join(unused) if len(unused) > 1 else unused[0]
        kind = self.pick(["sum", "one", "tuple"])
        if kind == "sum":
            a = self.pick(names)
            return f"np.sum({a} * {a})" if _nd(self.env[a]["shape"]) else f"{a} * {a}"
        if kind == "one":
            return self.pick(names)
        k = self.draw(st.integers(2, 3))
        return ", ".join(self.pick(names) for _ in range(k))


@st.composite
def programs(draw):
    g = Gen(draw)
    n_params = draw(st.integers(1, 3))
    for i in range(n_params):
        shape = draw(st.sampled_from(PARAM_SHAPES))
        name = "xyz"[i]
        g.params.append((name, shape))
        g.env[name] = {"shape": shape, "bound": INPUT_BOUND, "fresh": False}
        g.unread.add(name)
    if draw(st.booleans()):
        value = draw(st.integers(1, 2))
        g.params.append(("k", value))
        g.env["k"] = {"shape": "int", "value": value, "bound": float(value), "fresh": False}
        g.unread.add("k")
    for _ in range(draw(st.integers(1, 8))):
        g.statement()
    body = "\n".join(f"    {line}" for line in g.lines + [f"return {g.ret()}"])
    source = ("import numpy as np\n" + HELPERS + "\n\ndef f(" + ", ".join(n for n, _ in g.params) + "):\n"
              + body + "\n")
    return source, g.params, draw(st.integers(0, 2 ** 32 - 1))


def _arguments(params, seed):
    rng = np.random.default_rng(seed)
    args = []
    for _, shape in params:
        if isinstance(shape, int):
            args.append(shape)
        elif shape == "f":
            args.append(float(rng.uniform(-INPUT_BOUND, INPUT_BOUND)))
        else:
            args.append(rng.uniform(-INPUT_BOUND, INPUT_BOUND, shape))
    return args


def _assert_equal(got, want, what):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), f"{what}: {got!r} vs {want!r}"
        for i, (g, w) in enumerate(zip(got, want)):
            _assert_equal(g, w, f"{what}[{i}]")
        return
    if want is None:
        assert got is None, f"{what}: {got!r} is not None"
        return
    assert got is not None, f"{what}: None, expected {want!r}"
    assert np.shape(got) == np.shape(want), f"{what}: shape {np.shape(got)} != {np.shape(want)}"
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=what)


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("random_programs")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_program(program_dir, program):
    source, params, seed = program
    note(source)
    fn = load_program(source, program_dir, "random").f
    args = _arguments(params, seed)
    note(f"args = {args!r}")

    # (a) the pullback against central finite differences
    check_grad(fn, args, seed=seed % 1000)
    # (b) every stage's IR, interpreted, against direct execution and the generated code
    check_stages(fn, args, seed)


def check_stages(fn, args, seed):
    """The core and structural IR, interpreted, give what ``fn`` returns; the AD
    and optimised reverse programs, interpreted, give the generated code's value
    and cotangents for a random output cotangent."""
    d = astad.reverse(fn).transform(*args)
    want = fn(*args)
    _assert_equal(interp.run(d.stages.core, *args), want, "core IR")
    _assert_equal(interp.run(d.stages.structural, *args), want, "structural IR")
    rng = np.random.default_rng(seed)
    ct = (tuple(float(rng.standard_normal()) if np.ndim(w) == 0 else rng.standard_normal(np.shape(w)) for w in want)
          if isinstance(want, tuple) else
          (float(rng.standard_normal()) if np.ndim(want) == 0 else rng.standard_normal(np.shape(want))))
    value, residuals = d.forward(*args)
    cts = d.backward(residuals, ct)
    for stage in ("ad", "optimised"):
        prog = getattr(d.stages, stage)
        v, c = interp.run_reverse(prog, args, ct)
        _assert_equal(v, value, f"{stage} value")
        _assert_equal(c, cts, f"{stage} cotangents")
