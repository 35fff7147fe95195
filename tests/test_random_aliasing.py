"""Random programs that alias: views of arrays updated in place, lists appended
to through other names, names that look like the ones astad generates, deep
nesting, long programs and chains of local functions (what the adversarial
cases of issue 9 found).  Written to .py files and imported.

The oracle (``conftest.check_correct_or_refused``): plain Python runs on copies
of the arguments; astad must either refuse with an ``AstadError`` that is not an
``InternalError`` (no NameError, TypeError or RecursionError from astad or its
generated code), or give the same value, leave the arguments as plain Python
leaves them (changed in place, or not) and a pullback that agrees with central
finite differences in float64 and with the IR interpreter at every stage.
Refusing everything would pass that oracle, so each test counts accepted and
refused programs and asserts that both happen (the in-place and list
generators) or that every program is accepted (names, nesting, long programs,
chains: nothing there is outside the subset).

The generators run each statement they write on the test's own arguments (a
namespace of concrete values), so shapes fit and numpy's view rules are the
real ones: nothing here models aliasing; the oracle does.

Constructs astad gets wrong are left out by the switches below (each with a
reproducer, a standalone script in /work/repro/), not skipped or marked xfail.
``ASTAD_FUZZ_EXAMPLES=N`` (or ``pytest --fuzz-examples N``) runs N examples per
test instead of the small CI defaults."""

import copy
import re
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

from conftest import Refused, check_correct_or_refused, fuzz_examples, load_program, user_stack
from forward_oracle import check_forward

# ---------------------------------------------------------------- switches
# True: the generator writes the construct.  "OPEN: ..." marks a switch turned
# off because astad gets the construct wrong on main today; the lead turns it on
# once the fix is merged.

# In-place updates (`v *= 2.0`, `v += w`) on views of a local array: slices,
# `[..., 0]`, `[:, None]`, `.T`, `.ravel()`, `.reshape`, `np.expand_dims`,
# `np.transpose`, views of views, rows of `for row in y`, views made in a
# lambda, a view of a local function's argument, aliases under a second name or
# through a tuple or list.
# Fixed by the alias analysis (astad/aliases.py); was: an in-place update through a view (or a second name) is not seen by the
# base array: value and gradient silently wrong (reproducer in
# /work/repro/inplace_view.py).
INPLACE_ON_VIEWS = True

# In-place updates on the arguments themselves and on views of arguments
# (`x *= 2.0`, `v = x[1:]; v += 2.0`): plain Python changes the caller's array.
# Fixed by the alias analysis (astad/aliases.py); was: accepted, the value is right but the caller's array is left unchanged
# (reproducer in /work/repro/inplace_argument.py).
INPLACE_ON_ARGUMENTS = True

# In-place updates inside a loop on a loop-carried array that another name
# (or a view, or a tuple) also holds.
# Fixed by the alias analysis (astad/aliases.py); was: the other name keeps the value before the loop (same class as
# INPLACE_ON_VIEWS; reproducer in /work/repro/inplace_loop_alias.py).
INPLACE_LOOP_ALIASES = True

# In-place updates in straight-line code on an array another name holds or on an
# argument (`w = y0; w *= 0.5`, `x += 1.0`): refused today (correct or refused
# holds), and what makes the views test see refusals.
INPLACE_ON_SHARED_NAMES = True

# In-place updates that are sound: on a fresh local array nothing else shares
# (the generator writes these even with the switches above off, so that some
# in-place programs are accepted and checked).
INPLACE_ON_FRESH = True

# `list.append` through an alias (always generated): a list held in a tuple
# (`t[0].append`), in another list, under a second name, through a helper
# (`push(acc, v)`).  Refused today ("an expression statement has no effect",
# "changes a list that is also named"): correct or refused holds.  The forms
# astad gets wrong have their own switches:

# A second name for a list appended to in a loop (`b = acc; for i in ...: b.append(v)`).
# Fixed by the alias analysis (astad/aliases.py); was: not refused (the straight-line form is); `acc` keeps its old length and
# the value and gradient are wrong (reproducer in /work/repro/list_alias_in_loop.py).
LIST_ALIAS_IN_LOOP = True
# Fixed by the alias analysis (a default a function holds); was: a local function's mutable default (`def add(v, out=[])`) appended to
# by two calls: astad gives a fresh list per call, the value and gradient are
# wrong (reproducer in /work/repro/list_default_argument.py).
LIST_DEFAULT_ARGUMENT = True
# A list inside a dict argument appended to (`d["xs"].append(v)`): plain
# Python changes the caller's dict; refused today (correct or refused holds).
LIST_IN_DICT_ARGUMENT = True

# Names that look like the ones astad generates (`out_ct`, `x_ct`, `i_tape`, ...)
# for locals and parameters, and a parameter named `np` (numpy imported as `onp`).
# Fixed by one name authority (astad/names.py); was: such names collide with the generated ones: a dead local `out_ct = x * 1.0`
# or a parameter `out_ct`/`x_ct` gives a wrong gradient, a local `x_ct` an
# UnboundLocalError in generated code (reproducer in /work/repro/generated_names.py).
GENERATED_LOOKING_NAMES = True

# A parameter named `np` while numpy is imported as `onp`.
# Fixed by one name authority (astad/names.py); was: the generated code reads the parameter as numpy (AttributeError:
# 'numpy.ndarray' object has no attribute 'sin'; reproducer in /work/repro/np_parameter.py).
NP_PARAMETER = True

# Deep nesting: one expression 140-180 calls deep (`np.sin(np.tanh(...))`).
# Fixed by astad/deep.py and astad/positions.py; was: RecursionError from frontend.parse (libcst, outside the recursion guard)
# from about 150 deep (reproducer in /work/repro/deep_nesting.py).
DEEP_NESTING = True
DEEP_DEPTH = (140, 180)  # (Python's parser allows 200 nested parentheses)
# Long programs: 300-600 flat statements; Horner with 500 coefficients;
# an unrolled `for` over a list of 500 weights.
# Fixed by bounded nesting in codegen; was: "too deeply nested" InternalError (Horner, `v{i} = v{i-1} + ...`), a
# RecursionError (a flat sum of 500 terms), 10 s to transform the unrolled loop
# (reproducers in /work/repro/long_program.py, /work/repro/deep_nesting.py).
LONG_PROGRAMS = True
LONG_LENGTH = (300, 600)
# Chains of local functions f1..fn, each calling the previous one.
# Fixed by one try per function value; was: transform time exponential in n (n = 12: 1.2 s, 14: 7 s)
# (reproducer in /work/repro/function_chain.py); while open, n <= 8.
LONG_CHAINS = True

PROBLEM_NAMES = ["out_ct", "x_ct_sum", "x_ct", "reversed", "log_domain", "i_tape", "t3", "x_1", "y_ct", "v_ct",
                 "out", "ct", "tape", "res", "dx", "x_tape", "acc_ct", "s_ct"]

# ---------------------------------------------------------------- generator of aliasing programs

def _fits(shape, into):
    """Does an array of ``shape`` broadcast to exactly ``into``?"""
    try:
        return np.broadcast_shapes(shape, into) == into
    except ValueError:
        return False


SHAPES = [(4,), (3, 4), (2, 3, 4), (4, 1)]


def _args(draw, params):
    seed = draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng(seed)
    out = []
    for _, shape in params:
        if shape == "f":
            out.append(float(rng.uniform(-1.5, 1.5)))
        elif isinstance(shape, tuple):
            out.append(rng.uniform(-1.5, 1.5, shape))
        else:  # a dict of a list of arrays
            out.append({"xs": [rng.uniform(-1.5, 1.5, (4,))], "w": rng.uniform(-1.5, 1.5, (4,))})
    return out, seed % 1000


class AliasGen:
    """Writes statements and runs each one at once on the test's arguments (copies), in a
    namespace ``ns``: the generator knows every value's shape, and numpy itself decides what
    shares memory."""

    def __init__(self, draw, args, params, names):
        self.draw = draw
        self.ns = {"np": np}
        self.ns.update({p: copy.deepcopy(a) for (p, _), a in zip(params, args)})
        self.params = [p for p, _ in params]
        self.lines: list[str] = []
        self.names = names  # the pool of local names beyond v1, v2, ...
        self.counter = 0
        self.fresh: set[str] = set()  # arrays made by the program that nothing else shares
        self.counts = Counter()

    def pick(self, options):
        return self.draw(st.sampled_from(options))

    def new_name(self):
        if self.names and self.draw(st.integers(0, 2)) == 0:
            name = self.pick(self.names)
            if name not in self.ns:
                return name
        self.counter += 1
        return f"v{self.counter}"

    def arrays(self, min_nd=0):
        return [n for n, v in self.ns.items() if isinstance(v, np.ndarray) and v.ndim >= min_nd and v.size
                and v.dtype.kind == "f"]

    def run(self, lines, kind):
        """Run ``lines`` on the namespace; keep them if they run and leave the values bounded."""
        saved = dict(self.ns)
        snapshot = {k: v.copy() for k, v in self.ns.items() if isinstance(v, np.ndarray)}
        try:
            with np.errstate(all="raise"):
                exec("\n".join(lines), self.ns)  # noqa: S102 - our own programs
        except Exception:  # noqa: BLE001 - shapes that do not fit: drop the statement
            ok = False
        else:
            ok = all(np.all(np.abs(v) < 50.0) for v in self.ns.values()
                     if isinstance(v, np.ndarray) and v.dtype.kind == "f")
        if not ok:  # undo (arrays changed in place too)
            for k, v in snapshot.items():
                if k in saved and isinstance(saved[k], np.ndarray):
                    saved[k][...] = v
            self.ns.clear()
            self.ns.update(saved)
            return False
        self.lines += lines
        self.counts[kind] += 1
        return True

    # ---------------------------------------------------------- statements

    def s_fresh(self):
        a = self.pick(self.arrays())
        b = self.pick(self.arrays() + ["s"] if "s" in self.ns else self.arrays())
        form = self.pick([f"{a} * 1.0", f"np.sin({a})", f"{a}.copy()", f"np.tanh({a}) + {b}", f"{a} * {b}",
                          f"0.5 * {a} - {b}", f"+{a}"])  # (+a: np.positive, a new array)
        name = self.new_name()
        if self.run([f"{name} = {form}"], "fresh"):
            self.fresh.add(name)

    def view_forms(self, a):
        v = self.ns[a]
        d0 = v.shape[0]
        forms = [f"{a}[1:]", f"{a}[::-1]", f"{a}[::2]", f"{a}[:{max(d0 - 1, 1)}]", f"{a}[..., 0]",
                 f"{a}[:, None]", f"{a}[None]", f"{a}.T", f"{a}.ravel()", f"{a}.reshape(-1)", f"{a}[...]",
                 f"np.expand_dims({a}, 0)", f"np.transpose({a})", f"{a}[:]", f"np.ravel({a})",
                 f"{a}.reshape({', '.join(map(str, v.shape))})",
                 f"{a}.conj()", f"{a}.conjugate()"]  # the array itself (numpy returns it for a real array)
        if v.ndim >= 2:
            forms += [f"{a}[0]", f"{a}[:, 1:]", f"{a}[1:, ::-1]", f"{a}[:, 0]", f"{a}.reshape({v.shape[0]}, -1)",
                      f"np.reshape({a}, (-1,))", f"{a}[(0,)]"]  # a tuple index: one index per axis
        if v.ndim == 3:
            forms += [f"{a}.transpose(1, 0, 2)", f"np.transpose({a}, (2, 0, 1))", f"{a}[0, 1]", f"{a}[(0, 1)]"]
        return forms

    def viewable(self):
        """Arrays whose views may be updated in place (not the arguments', unless INPLACE_ON_ARGUMENTS)."""
        out = []
        for n in self.arrays(1):
            base = self.ns[n]
            of_arg = any(isinstance(self.ns.get(p), np.ndarray) and np.shares_memory(base, self.ns[p])
                         for p in self.params)
            if of_arg and not INPLACE_ON_ARGUMENTS:
                continue
            if (n in self.fresh and not self.shared(n)) or INPLACE_ON_VIEWS or (of_arg and INPLACE_ON_ARGUMENTS):
                out.append(n)
        return out

    def shared(self, name):
        """Does another name of the namespace (or a list or tuple) share ``name``'s memory?"""
        v = self.ns[name]
        for k, w in self.ns.items():
            if k == name or k in ("np", "__builtins__"):
                continue
            items = w if isinstance(w, (list, tuple)) else [w]
            if any(isinstance(i, np.ndarray) and np.shares_memory(i, v) for i in items):
                return True
        return any(isinstance(self.ns.get(p), np.ndarray) and np.shares_memory(self.ns[p], v) for p in self.params)

    def s_view(self):
        """A view of an array (often of a view), kept under a new name."""
        names = self.arrays(1)
        a = self.pick(names)
        form = self.pick(self.view_forms(a))
        if self.draw(st.integers(0, 4)) == 0:  # made inside a lambda
            form = self.pick([f"(lambda t: {form.replace(a, 't')})({a})", f"(lambda: {form})()"])
            self.counts["lambda view"] += 1
        name = self.new_name()
        if self.run([f"{name} = {form}"], "view"):
            self.fresh.discard(name)
            self.fresh.discard(a)
            if name in self.targets() and self.draw(st.booleans()):  # update the view at once
                self.s_inplace(name)

    def rhs_for(self, target):
        """A right-hand side whose shape broadcasts to ``target``'s."""
        shape = self.ns[target].shape
        fits = [n for n in self.arrays() if _fits(self.ns[n].shape, shape)]
        options = ["2.0", "0.5", "1.0", "-0.5"] + ([f"np.sin({n})" for n in fits] + fits
                                                    + [f"np.tanh({n}) * 0.5" for n in fits])
        if "s" in self.ns:
            options.append("s")
        return self.pick(options)

    def targets(self):
        if INPLACE_ON_VIEWS or INPLACE_ON_ARGUMENTS:
            return self.viewable()
        return [n for n in self.arrays(1) if n in self.fresh and not self.shared(n)] if INPLACE_ON_FRESH else []

    def s_inplace(self, t=None):
        targets = self.targets()
        if not targets:
            return
        t = t or self.pick(targets)
        op = self.pick(["+=", "-=", "*=", "*="])
        rhs = self.rhs_for(t)
        if op == "*=" and not re.match(r"^[-\d.]+$", rhs):
            rhs = f"np.tanh({rhs})"
        self.run([f"{t} {op} {rhs}"], "inplace" if t in self.fresh else "inplace shared")

    def s_rows(self):
        """`for row in y: row *= ...` (the rows are views of y)."""
        names = [n for n in self.targets() if self.ns[n].ndim >= 2]
        if not names or not INPLACE_ON_VIEWS:
            return
        a = self.pick(names)
        row_shape = self.ns[a].shape[1:]
        fits = [n for n in self.arrays() if _fits(self.ns[n].shape, row_shape)]
        rhs = self.pick(["2.0", "0.5", "1.0"] + [f"np.tanh({n})" for n in fits])
        op = self.pick(["*=", "+=", "-="])
        r = self.pick(["row", "r", "t3"] + (["reversed"] if GENERATED_LOOKING_NAMES else []))
        body = self.pick([f"{r} {op} {rhs}", f"{r}[0] {op} {rhs if rhs[0].isdigit() else '0.5'}"])
        if self.run([f"for {r} in {a}:", f"    {body}"], "rows"):
            self.ns.pop(r, None)  # (astad refuses reading a loop variable after its loop)

    def s_alias(self):
        """A second name, a tuple or a list holding an array, updated through it."""
        if not INPLACE_ON_VIEWS:
            return
        names = self.targets()
        if not names:
            return
        a = self.pick(names)
        b = self.pick(self.arrays())
        name = self.new_name()
        op = self.pick(["*=", "+=", "-="])
        rhs = self.pick(["0.5", "2.0", "1.0"])
        form = self.pick(["name", "tuple", "list", "unpack"])
        lines = {"name": [f"{name} = {a}", f"{name} {op} {rhs}"],
                 "tuple": [f"{name} = ({a}, {b})", f"{name}[0] {op} {rhs}"],
                 "list": [f"{name} = [{b}, {a}]", f"{name}[1] {op} {rhs}"],
                 "unpack": [f"{name}, _ = {a}, {b}", f"{name} {op} {rhs}"]}[form]
        self.run(lines, "alias " + form)

    def s_loop_alias(self):
        """In-place updates on a loop-carried array that another name also holds."""
        if not INPLACE_LOOP_ALIASES:
            return
        names = self.targets()
        if not names:
            return
        a = self.pick(names)
        other = self.new_name()
        hold = self.pick([a, f"{a}[1:]", f"({a}, 1.0)", f"[{a}]", f"{a}.T"])
        rhs = self.rhs_for(a)
        n = self.draw(st.integers(1, 3))
        self.run([f"{other} = {hold}", f"for i in range({n}):", f"    {a} *= 0.9",
                  f"    {a} += {rhs if not re.match(r'^[-0-9.]+$', rhs) else '0.25'}"], "loop alias")

    def s_function(self):
        """A local function that updates its argument (or a view of it) in place."""
        names = self.targets()
        if not names:
            return
        a = self.pick(names)
        fname = self.new_name() if GENERATED_LOOKING_NAMES else f"h{self.counter + 1}"
        self.counter += 1
        body = self.pick([["t *= 0.5", "return t"], ["t += 1.0", "return t * 2.0"], ["return t * 2.0"]]
                         + ([["u = t[..., 0]", "u += 1.0", "return np.sum(t)"]] if INPLACE_ON_VIEWS else []))
        if any("=" in b and "return" not in b for b in body) and not (INPLACE_ON_VIEWS or INPLACE_ON_ARGUMENTS):
            if a not in self.fresh or self.shared(a):
                return
        name = self.new_name()
        self.run([f"def {fname}(t):"] + [f"    {b}" for b in body] + [f"{name} = {fname}({a})"], "function")
        self.fresh.discard(a)

    def s_shared(self):
        """An in-place update on a second name of an array, or on an argument."""
        if not INPLACE_ON_SHARED_NAMES:
            return
        a = self.pick(self.arrays(1))
        op, rhs = self.pick(["*=", "+=", "-="]), self.pick(["0.5", "1.0", "2.0"])
        if a in self.params and self.draw(st.booleans()):
            self.run([f"{a} {op} {rhs}"], "inplace argument")
            return
        name = self.new_name()
        self.run([f"{name} = {a}", f"{name} {op} {rhs}"], "inplace second name")

    def s_zero_d(self):
        """A 0-d array (mutable, unlike the numpy scalar most operations give for one number), held
        by a second name, a tuple or a list, updated in place, and read through the holder."""
        a = self.pick(self.arrays(1))
        r = f"{a}.ravel()" if self.ns[a].ndim > 1 else a
        e = f"np.where({r}[0] > 0.0, {r}[0], -{r}[0])"
        form = self.pick([f"np.tensordot({r}, {r}, 1)", f"np.tensordot({r}, {r}, 1)", e, f"{e}.astype(np.float64)",
                          f"np.roll({e}, 1)", f"np.tile({e}, ())", f"np.copy({r}[0])"])
        t, u, w = self.new_name(), self.new_name(), self.new_name()
        hold, read = self.pick([(t, u), (f"({t}, 1.0)", f"{u}[0]"), (f"[{t}]", f"{u}[-1]")])
        if self.run([f"{t} = {form}", f"{u} = {hold}", f"{t} {self.pick(['+=', '*=', '-='])} 0.5",
                     f"{w} = {read} + np.zeros(1)"], "zero-d"):
            return w
        return None

    def s_unpack(self):
        """`y[0], y[1] = y[1], y[0]`: Python assigns left to right, so a later value that views a row
        (column) an earlier target changed reads the changed one."""
        names = [n for n in self.targets() if self.ns[n].shape[0] >= 2]
        if not names:
            return
        t = self.pick(names)
        parts = [f"{t}[0]", f"{t}[1]", f"{t}[-1]"] + ([f"{t}[:, 0]", f"{t}[..., -1]"] if self.ns[t].ndim >= 2 else [])
        a, b = self.pick(parts), self.pick(parts)
        values = [self.pick([b, f"{b}.copy()", f"{b} * 2.0"]), self.pick([a, f"{a}.copy()", f"np.sin({a})"])]
        name = self.new_name()
        second = self.pick([b, name])
        self.run([f"{a}, {second} = {values[0]}, {values[1]}"], "unpack")
        self.fresh.discard(name)

    def s_rebind(self):
        a = self.pick(self.arrays())
        self.run([f"{a} = np.tanh({a}) * 1.5"], "rebind")
        self.fresh.add(a)

    def statement(self, sound=False):
        if sound:  # only new arrays and updates of them: what astad must accept
            if self.draw(st.booleans()):
                return self.s_fresh()
            targets = [t for t in sorted(self.fresh) if t in self.arrays(1)]
            return self.s_inplace(self.pick(targets)) if targets else None
        kinds = ["fresh", "view", "view", "view", "inplace", "inplace", "inplace", "rows", "alias", "loop_alias",
                 "function", "rebind", "shared", "zero_d", "unpack"]
        getattr(self, "s_" + self.pick(kinds))()

    def ret(self):
        names = self.arrays()
        chosen = self.draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True))
        if "y0" in names and "y0" not in chosen and self.draw(st.integers(0, 3)):
            chosen.append("y0")  # most views are of y0: read what updates through them did
        terms = [self.pick([f"np.sum({n} * {n})", f"np.sum(np.sin({n}))", f"np.sum({n}) * 0.5"]) for n in chosen]
        if self.draw(st.integers(0, 4)) == 0:
            return ", ".join(chosen) if len(chosen) > 1 else chosen[0]
        return " + ".join(terms)


def _render(lines, params, ret, np_alias):
    body = [f"    {ln}" for ln in lines + [f"return {ret}"]]
    text = "def f(" + ", ".join(params) + "):\n" + "\n".join(body) + "\n"
    if np_alias != "np":  # numpy under another name (a parameter is named np)
        text = re.sub(r"\bnp\.(?=[a-z_]+\()", np_alias + ".", text)
    return f"import numpy as {np_alias}\n\n\n" + text


@st.composite
def alias_programs(draw):
    n_params = draw(st.integers(1, 2))
    pool = (["x", "y"] + (["x_ct", "out_ct", "x_1", "i_tape"] if GENERATED_LOOKING_NAMES else [])
            + (["P_np"] if NP_PARAMETER else []))  # P_np: a parameter named np (numpy then is onp)
    names = draw(st.lists(st.sampled_from(pool), min_size=n_params, max_size=n_params, unique=True))
    params = [(n, draw(st.sampled_from(SHAPES))) for n in names]
    if draw(st.booleans()):
        params.append(("s", "f"))
    args, seed = _args(draw, params)
    g = AliasGen(draw, args, params, PROBLEM_NAMES if GENERATED_LOOKING_NAMES else [])
    first = params[0][0]
    g.run([f"y0 = {first} * 1.0"], "fresh")
    g.fresh.add("y0")
    sound = draw(st.integers(0, 3)) == 0  # a quarter of the programs update only arrays nothing else sees
    zero_d = draw(st.integers(0, 7)) == 0  # an eighth: such updates, and a 0-d array's alias updated (s_zero_d)
    for _ in range(draw(st.integers(1, 7))):
        g.statement(sound or zero_d)
    read = g.s_zero_d() if zero_d else None
    ret = g.ret() + (f" + np.sum({read})" if read else "")
    source = _render(g.lines, [p for p, _ in params], ret, "onp" if "P_np" in names else "np")
    source = source.replace("P_np", "np")
    return source, args, seed, g.counts


@st.composite
def np_param_programs(draw):
    """A parameter named ``np`` (numpy imported as ``onp``)."""
    shape = draw(st.sampled_from(SHAPES))
    args, seed = _args(draw, [("x", shape), ("s", "f")])
    forms = ["np * 2.0 + s", "onp.sin(np) * s", "onp.sum(np * np) + s", "np.T * s", "np[..., 0] * s",
             "onp.tanh(np.sum(axis=0))", "np.reshape(-1) * s"]
    lines = []
    for i in range(draw(st.integers(1, 4))):
        lines.append(f"v{i} = {draw(st.sampled_from(forms))}")
    ret = " + ".join(f"onp.sum(onp.sin(v{i}))" for i in range(len(lines)))
    source = "import numpy as onp\n\n\ndef f(np, s):\n" + "\n".join(f"    {ln}" for ln in lines) + \
        f"\n    return {ret}\n"
    return source, args, seed, Counter({"np parameter": 1})


# ---------------------------------------------------------------- lists through aliases

@st.composite
def list_programs(draw):
    """A list appended to through an alias; the program runs in Python first (else rejected)."""
    dict_arg = LIST_IN_DICT_ARGUMENT and draw(st.booleans())
    params = [("x", (4,)), ("s", "f")] + ([("d", "dict")] if dict_arg else [])
    args, seed = _args(draw, params)
    acc = draw(st.sampled_from(["acc", "xs"] + (["x_ct", "i_tape", "out_ct"] if GENERATED_LOOKING_NAMES else [])))
    lines = [draw(st.sampled_from([f"{acc} = []", f"{acc} = [x * 1.0]", f"{acc} = [np.sin(x)]"]))]
    elems = ["x * 2.0", "np.sin(x) * s", "x * s", "np.tanh(x + s)", "x * (i + 1.0)"]
    forms = ["tuple", "nested", "name", "helper"] + ["plain"] * 4 + (["loop name"] * 2 if LIST_ALIAS_IN_LOOP else [])
    forms += ["concat", "concat name", "slice", "replace", "copy"]  # new lists: `xs + [v]`, `xs[:]`, `list(xs)`
    if LIST_DEFAULT_ARGUMENT:
        forms += ["default"] * 2
    if dict_arg:
        forms.append("dict")
    counts = Counter()
    holders = 0
    for _ in range(draw(st.integers(1, 2))):
        form = draw(st.sampled_from(forms))
        counts["list " + form] += 1
        e = draw(st.sampled_from(elems)).replace("i + 1.0", "2.0")
        holders += 1
        h = f"hold{holders}"
        lines += {"tuple": [f"{h} = ({acc}, s)", f"{h}[0].append({e})"],
                  "nested": [f"{h} = [{acc}]", f"{h}[-1].append({e})"],
                  "name": [f"{h} = {acc}", f"{h}.append({e})"],
                  "helper": [f"def push{holders}(l, v):", "    l.append(v)", "    return 0.0",
                             f"{h} = push{holders}({acc}, {e})"],
                  "plain": [f"{acc}.append({e})"],
                  "loop name": [f"{h} = {acc}", "for i in range(2):",
                                f"    {h}.append({draw(st.sampled_from(elems))})"],
                  "default": [f"def add{holders}(v, out=[]):", "    out.append(v)", "    return out",
                              f"{h} = add{holders}({e})", f"{h} = add{holders}(x * 0.5)",
                              f"{acc}.append(np.sum(np.stack({h}), axis=0))"],
                  "dict": ["d['xs'].append(x * d['w'])", f"{acc}.append(np.stack(d['xs'])[-1])"],
                  "concat": [f"{acc} = {acc} + [{e}]"],
                  "concat name": [f"{h} = {acc} + [{e}]", f"{acc}.append(x * 0.5)", f"{acc} = {acc} + {h}[-1:]"],
                  "slice": [f"{h} = {acc}[:]", f"if isinstance({h}, list):", f"    {h}.append({e})",
                            f"{acc} = {h}"],
                  "replace": [f"{acc} = {acc}[:1] + [{e}] + {acc}[1:]"],
                  "copy": [f"{h} = list({acc})", f"{h}.append({e})", f"{acc}.append({h}[-1] * 0.5)"]}[form]
    ret = draw(st.sampled_from([f"np.sum(np.stack({acc}) ** 2) + len({acc}) * s",
                                f"np.sum({acc}[-1] * {acc}[0]) + s * len({acc})",
                                f"np.sum(np.sin(np.stack({acc})))"]))
    source = "import numpy as np\n\n\ndef f(" + ", ".join(p for p, _ in params) + "):\n" + \
        "\n".join(f"    {ln}" for ln in lines + [f"return {ret}"]) + "\n"
    return source, args, seed, counts


# ---------------------------------------------------------------- size: nesting, length, chains

UNARY = ["np.sin({})", "np.tanh(0.9 * {})", "np.cos({}) * 0.5", "(0.5 * {} + 0.25)", "np.tanh({} + x)",
         "np.sin({} * s)"]


@st.composite
def big_programs(draw):
    forms = ["chain"] + (["deep"] if DEEP_NESTING else []) + (["long", "horner", "unrolled"] if LONG_PROGRAMS else [])
    form = draw(st.sampled_from(forms))
    params = [("x", draw(st.sampled_from(["f", (3,)]))), ("s", "f")]
    lines = []
    if form == "deep":
        depth = draw(st.integers(*DEEP_DEPTH))
        unary = draw(st.sampled_from([UNARY, UNARY[:1], UNARY[:3]]))  # all kinds, or only calls
        ops = draw(st.lists(st.sampled_from(unary), min_size=depth, max_size=depth))
        expr = "x"
        for op in ops:
            expr = op.format(expr)
        lines = [f"v = {expr}"]
        ret = "np.sum(v)"
    elif form == "long":
        n = draw(st.integers(*LONG_LENGTH))
        lines = ["v0 = x * 1.0"]
        for i in range(1, n):
            j = draw(st.integers(max(0, i - 5), i - 1))
            lines.append(f"v{i} = v{i - 1} + 0.01 * np.sin(v{j} * s)")
        ret = f"np.sum(v{n - 1})"
    elif form == "horner":
        n = draw(st.integers(400, 500))
        coeffs = [round(((i * 7919) % 200 - 100) / 5000.0, 4) for i in range(n)]
        if draw(st.booleans()):  # statement by statement
            lines = ["t = np.tanh(x) * 0.9", f"v = {coeffs[0]}"] + [f"v = v * t + {c}" for c in coeffs[1:]]
        else:  # one flat sum: a left-nested expression n deep with no parentheses
            lines = ["t = np.tanh(x) * 0.9", "v = " + " + ".join(f"{c} * t" if i % 2 else f"np.sin(t) * {c}"
                                                                for i, c in enumerate(coeffs))]
        ret = "np.sum(v * s)"
    elif form == "unrolled":
        n = draw(st.integers(400, 500))
        params.append(("ws", "weights"))
        lines = ["h = x * 1.0", "for w in ws:", "    h = np.tanh(h * w + 0.1)"]
        ret = "np.sum(h) * s"
    else:
        n = draw(st.integers(2, 16 if LONG_CHAINS else 8))
        lines = ["def f1(t):", "    return np.sin(t) * 0.9"]
        for i in range(2, n + 1):
            body = draw(st.sampled_from([f"f{i - 1}(t) + 0.1", f"np.tanh(f{i - 1}(t) * s)",
                                         f"(lambda u: f{i - 1}(u) * 0.9)(t)"]))
            lines += [f"def f{i}(t):", f"    return {body}"]
        ret = f"np.sum(f{n}(x))"
    args, seed = _args(draw, [p for p in params if p[1] != "weights"])
    if form == "unrolled":
        rng = np.random.default_rng(seed)
        args.append([float(w) for w in rng.uniform(0.5, 1.0, n)])
    source = "import numpy as np\n\n\ndef f(" + ", ".join(p for p, _ in params) + "):\n" + \
        "\n".join(f"    {ln}" for ln in lines + [f"return {ret}"]) + "\n"
    return source, args, seed, Counter({form: 1})


# ---------------------------------------------------------------- the tests

@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("random_aliasing")


TALLY: dict[str, Counter] = {}


# Seconds a chain of at most 16 local functions may take to transform (9f1ba33: 14 functions 7 s,
# 16 functions 133 s; linear would be well under a second).
CHAIN_TRANSFORM_SECONDS = 5.0


def _transform_seconds(fn, args):
    import time

    import astad

    start = time.perf_counter()
    with user_stack():
        try:
            astad.reverse(fn).transform(*copy.deepcopy(args))
        except astad.AstadError:
            pass
    return time.perf_counter() - start


def _check(program_dir, program, tally, stem, data):
    source, args, seed, counts = program
    note(source)
    note(f"args = {args!r}; constructs: {dict(counts)}")
    try:
        fn = load_program(source, program_dir, stem).f
    except SyntaxError:
        assume(False)
    try:
        fn(*copy.deepcopy(args))
    except Exception:  # noqa: BLE001 - a program plain Python cannot run (the generator filters most)
        assume(False)
    t = TALLY.setdefault(tally, Counter())
    if "chain" in counts:  # transform time must not grow exponentially with the chain (LONG_CHAINS)
        seconds = _transform_seconds(fn, args)
        assert seconds < CHAIN_TRANSFORM_SECONDS, f"transforming took {seconds:.1f}s"
    try:
        check_correct_or_refused(fn, args, seed)
    except Refused as e:
        t["refused"] += 1
        t.update("refused " + k for k in counts)
        note(f"refused: {e}")
        _check_forward(fn, args, data, t, reverse_refused=True)
        return
    t["accepted"] += 1
    t.update("accepted " + k for k in counts)
    _check_forward(fn, args, data, t, reverse_refused=False)


def _check_forward(fn, args, data, t, reverse_refused):
    """Forward mode on the same program (``forward_oracle.check_forward``): it may refuse only
    what reverse mode refuses; what it accepts it must get right (value, arguments left as plain
    Python leaves them, J v against central differences; <u, J v> == <J^T u, v> where reverse
    mode accepts)."""
    try:
        with user_stack():
            check_forward(fn, args, data, reverse=not reverse_refused)
    except Refused as e:
        assert reverse_refused, f"reverse mode accepts the program, forward mode refuses it: {e}"
        t["forward refused"] += 1
        note(f"forward mode refused: {e}")
        return
    t["forward accepted" + (" (reverse refused)" if reverse_refused else "")] += 1


_FEW = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                                  HealthCheck.data_too_large])


@settings(max_examples=fuzz_examples(30, long=60), **_FEW)
@given(alias_programs(), st.data())
def test_random_views_and_inplace(program_dir, program, data):
    _check(program_dir, program, "views", "alias", data)


@settings(max_examples=fuzz_examples(25), **_FEW)
@given(list_programs(), st.data())
def test_random_list_aliases(program_dir, program, data):
    _check(program_dir, program, "lists", "lists", data)


@pytest.mark.skipif(not NP_PARAMETER, reason="switch off")
@settings(max_examples=fuzz_examples(10), **_FEW)
@given(np_param_programs(), st.data())
def test_random_np_parameter(program_dir, program, data):
    _check(program_dir, program, "names", "np_param", data)


@settings(max_examples=fuzz_examples(3, long=6), **_FEW)
@given(big_programs(), st.data())
def test_random_big_programs(program_dir, program, data):
    _check(program_dir, program, "big", "big", data)


def test_tallies_show_both_outcomes():
    """Refusing everything passes the oracle: the in-place programs must be accepted often
    (fresh arrays updated in place are sound) and the big programs always (nothing there is
    outside the subset).  Runs after the random tests of this module (pytest keeps file order)."""
    views, lists, big = TALLY.get("views", Counter()), TALLY.get("lists", Counter()), TALLY.get("big", Counter())
    print(f"\nviews: {dict(views)}\nlists: {dict(lists)}\nbig: {dict(big)}")
    if not views:
        pytest.skip("run with the random tests of this module")
    assert big["refused"] == 0 and big["forward refused"] == 0, big
    if views["accepted"] + views["refused"] >= 20:  # (not with --fuzz-examples 2)
        assert views["accepted inplace"] > 0 and views["refused"] > 0, views
        assert views["forward accepted"] > 0, views
    if lists["accepted"] + lists["refused"] >= 20:
        assert lists["accepted"] > 0 and lists["refused"] > 0, lists
