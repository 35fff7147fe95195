"""Random straight-line programs over the supported subset, written to .py
files and imported.  For each: (a) the pullback against central finite
differences (``conftest.check_grad``); (b) the IR interpreter against direct
execution: the core and structural IR evaluate to what the function returns,
and the AD and optimised reverse programs give the generated code's value and
cotangents.

Most programs also use functions as values (``Gen.functions``; astad inlines
each call where it is made, reading captured variables' values at the call):

- lambdas (one or two parameters, sometimes a default, `c=v3` held by value)
  and nested defs (locals, a default `c=2.0`, a lambda or a def inside) that
  capture scalars and arrays of the program (and the int parameter ``k``),
  called through their names, with keywords, several times, and after a
  captured name is reassigned or updated in place (late binding: the call sees
  the new value; a value held by default or factory argument stays the old
  one), also a name assigned only after the lambda; a function's name bound
  to a new lambda (functions calling it by name call the new one);
- functions that call other functions by name, functions returning tuples,
  functions as defaults (`fn=g1`), numpy functions as values (`np.tanh`);
- nested higher-order helpers (`twice(f, v)`, `compose(p, q)` returning a
  lambda, a helper stacking `fn(r)` over rows, one calling `fn` in a loop),
  tuples of functions called through an element (`fs[1](x)`) or unpacked,
  factories (`def make(c): return lambda t: c * t`);
- list comprehensions and generator expressions over an array's rows,
  `range(len(x))`, `range(n)`, `range(k)`, `enumerate` (with an `if` filter),
  `zip`, a list of names or a tuple of functions, nested, with a variable
  that may shadow a name of the program, and ``map`` with one or two arrays,
  stacked with ``np.stack``/``np.array``.

Values stay bounded (an expression that could grow large is wrapped in
``np.tanh``; each function carries a bound on its result from its arguments'
and captured values' bounds at the call) so that finite differences stay
accurate; functions with kinks are used only where the inputs cannot sit on
the kink (log/sqrt of ``a * a + 1.0``, no ``abs``).  Shapes are found by
running the program's statements on stand-in values (functions included).
Programs may contain dead code (values never read, functions never called,
ended by ``drop``).

Constructs astad gets wrong are left out by the switches below (each with a
reproducer), not skipped or marked xfail."""

import math
import re
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import astad
from astad.ir import interp
from conftest import check_grad, fuzz_examples, load_program
from forward_oracle import check_forward

PARAM_SHAPES = ["f", (), (3,), (4,), (3, 4), (4, 3), (2, 3, 4), (3, 1), (1, 4), (2, 3)]
LIMIT = 4.0  # larger possible values are squashed with np.tanh
INPUT_BOUND = 1.5

# Switches that leave out what astad gets wrong, each with a reproducer; flip
# one to True to generate the construct again.

# (fixed in 1d84b8a for comprehensions and `map` without `if` filters, which is
# what this generator stacks; the switch stays as a regression check; a list
# appended to in a loop still has a run-time length) astad bug: the array
# `np.stack`/`np.array` make of a comprehension, of
# `list(map(...))` or of a list appended to in a loop has a first axis of
# run-time length (`?`) to astad, even over `range(3)` or the rows of a (3,)
# array; combined with an array of known shape where numpy needs the sizes to
# agree, transforming fails (AstadTypeError) though the shapes fit:
#     def f(x):
#         return np.stack([x, np.stack([np.sin(r) for r in x])])
#     f(np.array([0.3, -0.5, 0.9]))  # stack: array shapes (3,), (?,) do not fit together
# (also `v = np.stack([np.sin(r) for r in x]); v *= x`: "in-place `*=` cannot
# change f64[?] into f64[3]"; `np.concatenate([x, np.stack([...])])`: "the
# sizes along the axis must be known to differentiate".  Up to e3c2f42 such an
# array multiplied by a value broadcast up to its shape and reduced,
# `np.sum(np.stack([r for r in y]) * 2.0)`, failed in the backward code
# (TypeError in `np.broadcast_to(out_ct * 2.0, (None,))`); fixed in cf1d310.)
# False: the array a comprehension, `map` or a higher-order helper stacks is
# reshaped to its shape right away (`np.stack([...]).reshape(3, 4)`), which
# tells astad its length.  (A comprehension with an `if` filter has a length
# known only at run time: the generator always reshapes what it stacks.)
RUNTIME_LENGTH = True

# (fixed in cf1d310; the switch stays as a regression check) a function
# returned by a nested def (`return lambda t: ...`, or a nested `def inner`
# returned) read the variables it captures from the enclosing function when
# the nested def was called, not when the returned function is called
# (Python's late binding); value and gradient wrong:
#     def f(x):
#         def make():
#             return lambda t: t + x
#         g = make()
#         x = x * 3.0
#         return g(1.0)
#     f(0.5)  # astad: 1.5, Python: 2.5
# False: a name captured by the function a factory returns is not reassigned
# (nor updated in place) after the factory is defined.
FACTORY_LATE_BINDING = True

# (fixed in 0d321a2; the switch stays as a regression check) a function called
# inside a comprehension whose variable has the name of a variable the function
# captures read the comprehension's variable (Python: the enclosing
# function's; the comprehension's variables are its own); value and gradient
# wrong:
#     def f(x):
#         g = lambda t: t * x
#         return np.sum(np.array([g(1.0) for x in [2.0, 3.0]]))
#     f(0.5)  # astad: 5.0, Python: 1.0
# (also `np.stack([g(x) for x in x * 2.0])` for an array x of shape (3,):
# astad gives shape (3,), Python (3, 3).  A parameter of a nested def or
# lambda with that name, `def h(x): return g(1.0)`, is right.)
# False: a comprehension's variable is not named after a variable that a
# function of the program captures.
COMPREHENSION_SHADOWS_CAPTURE = True

# (fixed in 0d321a2; the switch stays as a regression check) from cf1d310,
# which made astad refuse `v += ...` on an array a function holds: an array
# given as an argument to a function whose body makes a function (a lambda or
# nested def, even one that does not use the argument) was taken as held by
# that function for good: a later `v *= ...` was refused, though nothing can
# see the array once the call returns (UnsupportedSyntaxError:
# "`v *= ...` changes the array in place, and a function made earlier holds it
# (as a default, or as an argument of the function that made it)"):
#     def f(x):
#         def h(t):
#             g = lambda w: w
#             return t * 2.0
#         v = x * 2.0
#         u = h(v)
#         v *= 0.5
#         return np.sum(u * v)
#     f(np.array([0.3, -0.5, 0.9]))
# (also through a function that calls such a function, `g = lambda t:
# np.tanh(h(t))`, `g(v)`; and `(lambda t: (lambda w: w * 2.0)(t))(v)`.)
# False: an array given (in the same expression) to a call that may reach a
# function making a function is not updated in place afterwards.
AUG_AFTER_CALL_OF_A_MAKER = True

# Not generated (refused with an AstadError since cf1d310; before, astad
# silently kept the old value): `v += ...` on an array a function holds by
# value, as a lambda's default (`lambda t, c=v: ...`) or as the argument of the
# function that made it (`make(v)`); the generator writes `v = v + ...` then.

# Names that look like the ones astad generates: some of the program's variables
# (v12, acc3) are renamed to these (``lookalike_names``; the control-flow
# generator too).
# Fixed by one name authority (astad/names.py); was: such names collide with astad's generated names: a dead local
# `out_ct = x * 1.0` gives a wrong gradient, a local `x_ct` an UnboundLocalError
# in the generated code (reproducer in /work/repro/generated_names.py, and
# test_random_aliasing.GENERATED_LOOKING_NAMES).
# False: the program's variables keep the generator's names.
GENERATED_LOOKING_NAMES = True
LOOKALIKE_NAMES = ["out_ct", "x_ct_sum", "x_ct", "reversed", "log_domain", "i_tape", "t3", "x_1", "y_ct", "v_ct",
                   "out_tape", "s_ct", "x_t", "x_t_t", "out_t", "t1_t", "v_t", "no_ct", "nothing", "f_t"]
# Forward mode and derivatives of derivatives (issue 10): parameters ``y``, ``z`` renamed to names
# that look generated (``x_t`` beside ``x``), and the program reading a module constant named like a
# generated function (``x = x * f_jvp``, the constants 1.0 in HELPERS).
# Fixed (branch attack): a constant named ``f_jvp`` was replaced by the generated ``f_jvp`` (internal
# TypeError in forward mode); a parameter ``no_ct`` (or ``nothing``) was shadowed by the None the
# pipeline passed for the unused cotangent of forward-over-reverse (hessian, grad(grad), jacfwd(jacrev)).
# False: parameters keep their names, no constant is read.
GENERATED_LOOKING_PARAMS = True

# (fixed; the switch stays as a regression check) astad bug up to b7a652f: a chained assignment
# `a = b = e` named the value `a` and left `b` holding the temporary it no longer binds
# (InternalError: structural pass: not linear ..., unbound ['t1']):
#     def f(x):
#         a = b = x * 2.0
#         return a * b
# False: one target per assignment.
CHAINED_ASSIGNMENT = True

# (fixed; the switch stays as a regression check) astad bug up to b7a652f: `np.concatenate(xs,
# axis=None)` (numpy flattens the arrays first) was joined along axis 0: a wrong type, a pullback
# that crashed on its shapes or, for arrays of one row, broadcast into a wrong gradient:
#     def f(x):
#         return np.sum(np.concatenate([x, x ** 2], axis=None) ** 2 * np.arange(6.0))
#     f(np.array([[0.3, -0.5, 1.2]]))  # astad: [[-0.6, 1.0, -2.4]], finite differences: [[0.324, -3.0, 39.36]]
# False: np.concatenate along an axis only.
CONCATENATE_AXIS_NONE = True
# Module-level floats named like the program's local variables (f's, its nested defs' and lambdas'
# parameters and locals, comprehension variables), drawn by ``shadowing_globals``: a local read as the
# global of its name gives a wrong value.  Such a bug (fixed): a nested def's local read on a path that had
# not assigned it was the enclosing function's variable or the module's global of that name
# (tests/test_nested_locals.py).  False: the module holds only HELPERS.
GLOBALS_NAMED_LIKE_LOCALS = True
# (fixed; the switch stays as a regression check) astad bug up to 6c45e1d: a pullback read a module-level
# array when it ran, not the values the forward call used (the backward read the global by name):
#     A = np.ones(3)
#     def f(x):
#         return np.sum(A * x * x)
#     value, pullback = astad.reverse(f)(np.arange(3.0)); A[:] = 5.0
#     pullback(1.0)  # astad: [0, 6, 12], the derivative at the forward's values: [0, 2, 4]
# The programs read module-level arrays ``G1``, ``G2`` (of a parameter's shapes, a 0-d one too) as
# any value, never assigned, some read-only; test_random_program changes them (in place, by slice or
# rebinding the name; a read-only one made writeable again first) between the forward call and the
# pullback.  False: no module-level arrays.
MODULE_ARRAYS = True
PARAM_LOOKALIKES = ["no_ct", "x_t", "nothing", "x_t_t", "ct", "t1", "x_ct", "f_t_t"]
CONSTANT_LOOKALIKES = ["f_jvp", "f_forward", "f_backward", "f_t_jvp", "no_ct_2"]


def lookalike_names(draw, source):
    """A renaming (old name -> new) of some of ``source``'s variables to names that look generated."""
    names = sorted(set(re.findall(r"\b(?:v|acc)\d+\b", source)))
    if not GENERATED_LOOKING_NAMES or not names:
        return {}
    k = draw(st.integers(0, min(len(names), len(LOOKALIKE_NAMES))))
    renaming = dict(zip(draw(st.permutations(names))[:k], draw(st.permutations(LOOKALIKE_NAMES))[:k]))
    params = [p for p in ("y", "z") if re.search(rf"def f\(x(, [yz])*, {p}\b", source)]
    if GENERATED_LOOKING_PARAMS and params:
        taken = set(renaming.values())
        new = [n for n in draw(st.permutations(PARAM_LOOKALIKES)) if n not in taken]
        renaming.update(zip(params[:draw(st.integers(0, len(params)))], new))
    return renaming


def reading_a_constant(draw, source):
    """``source`` with ``x = x * C`` first in ``f``, ``C`` a constant 1.0 of HELPERS named like generated code."""
    if not GENERATED_LOOKING_PARAMS or not draw(st.booleans()):
        return source
    header = re.search(r"def f\(.*\):\n", source)
    assert header is not None
    name = draw(st.sampled_from(CONSTANT_LOOKALIKES))
    return source[:header.end()] + f"    x = x * {name}\n" + source[header.end():]


def shadowing_globals(draw, source):
    """``source`` with module-level floats (1.25, 1.75, ...) named like some of the program's local
    variables, drawn from the names its ``def f`` assigns, loops over and takes as parameters."""
    if not GLOBALS_NAMED_LIKE_LOCALS or not draw(st.booleans()):
        return source
    at = source.index("\n\ndef f(")
    body = source[at:]
    assigned = set(re.findall(r"^ *(\w+) = ", body, re.M))
    looped = {n for pair in re.findall(r"\bfor (\w+)(?:, (\w+))? in\b", body) for n in pair if n}
    params = {n for ps in re.findall(r"(?:def \w+\(|lambda )([^():]*)[):]", body)
              for n in re.findall(r"([A-Za-z_]\w*)(?:=[^,]*)?", ps)}
    names = (assigned | looped | params) - {"f", "np"} - set(re.findall(r"\w+", source[:at]))
    if not names:
        return source
    chosen = draw(st.lists(st.sampled_from(sorted(names)), unique=True, min_size=1, max_size=4))
    constants = "".join(f"{n} = {1.25 + 0.5 * j}\n" for j, n in enumerate(chosen))
    return source[:at] + "\n" + constants + source[at:]


def renamed(source, renaming):
    for old, new in renaming.items():
        source = re.sub(rf"\b{old}\b", new, source)
    return source


# Bodies of the lambdas (and one-line nested defs) the generator writes: {t}, {s}
# the parameters, {a}, {b} captured names; with a bound on the result from the
# bounds of the arguments (t, s) and of the captured values at the call (a, b).
LAMBDA_BODIES_1 = [
    ("{t} * {a} + np.sin({t})", lambda t, s, a, b: t * a + 1.0),
    ("np.tanh({t} * {a}) + {b}", lambda t, s, a, b: 1.0 + b),
    ("np.tanh({t}) * {a}", lambda t, s, a, b: a),
    ("{t} / ({a} * {a} + 1.0)", lambda t, s, a, b: t),
    ("np.sin({t} + {a}) * {t}", lambda t, s, a, b: t),
    ("np.tanh(np.sum({t} * {a}))", lambda t, s, a, b: 1.0),
    ("0.5 * {t} * {t} + {a}", lambda t, s, a, b: 0.5 * t * t + a),
    ("_helper({t}, {a})", lambda t, s, a, b: 1.0 + t),
    ("np.exp(-{t} * {t}) * {a}", lambda t, s, a, b: a),
    ("np.cos({a}) * {t} - {b}", lambda t, s, a, b: t + b),
    ("np.sin({t}) * 2.0", lambda t, s, a, b: 2.0),
    ("{t} * {t}", lambda t, s, a, b: t * t),
    ("np.tanh({t}) + {a} * {b}", lambda t, s, a, b: 1.0 + a * b),
]
LAMBDA_BODIES_2 = [
    ("{t} * {s} + {a}", lambda t, s, a, b: t * s + a),
    ("np.tanh({t} - {s}) * {a}", lambda t, s, a, b: a),
    ("{t} + np.sin({s} * {a})", lambda t, s, a, b: t + 1.0),
    ("{t} * np.cos({s}) - {a}", lambda t, s, a, b: t + a),
    ("np.tanh({t} * {s})", lambda t, s, a, b: 1.0),
    ("{s} / ({t} * {t} + 1.0) + {b}", lambda t, s, a, b: s + b),
]
# Bodies of nested defs: lines, with {c} the second parameter (a default `c=2.0`,
# a plain `s`) or a constant; the bound from (t, c, a, b).
DEF_BODIES = [
    (["u = np.tanh({t} * {a})", "return u * {c} + {b}"], lambda t, c, a, b: c + b),
    (["u = {t} * {c}", "w = np.sin(u) + {a}", "return np.tanh(w) * {b}"], lambda t, c, a, b: b),
    (["return {t} * {c} - {a}"], lambda t, c, a, b: t * c + a),
    (["q = lambda w: w * {a}", "return np.tanh(q({t})) + {t} * {c}"], lambda t, c, a, b: 1.0 + t * c),
    (["def inner(w):", "    return np.sin(w) * {a}", "return inner({t}) + inner({c} * {t})"],
     lambda t, c, a, b: 2.0 * a),
    (["u = {t} * {a}", "u = np.tanh(u + {c})", "return u * {b}"], lambda t, c, a, b: b),
]
# numpy functions used as values (passed, kept in tuples): the bound of the result from the argument's.
BUILTIN_FUNCTIONS = {"np.sin": lambda t: 1.0, "np.cos": lambda t: 1.0, "np.tanh": lambda t: 1.0,
                     "np.square": lambda t: t * t, "np.exp": lambda t: math.exp(min(t, 50.0))}
# Nested higher-order helpers, taking functions.
HOFS = {
    "twice": ["def {n}(f, v):", "    return f(f(v))"],
    "both": ["def {n}(fn, v, w):", "    return 0.5 * fn(v) + 0.5 * fn(w)"],
    "compose": ["def {n}(p, q):", "    return lambda v: p(q(v))"],
    "rows": ["def {n}(fn, rows):", "    return np.stack([fn(r) for r in rows])"],
    "loop": ["def {n}(fn, v):", "    acc = np.tanh(fn(v))", "    for i in range(2):",
             "        acc = acc + np.tanh(fn(v) * i)", "    return acc"],
}
# Functions that return functions: (lines, bound of the made function from (t, c, a)).
FACTORIES = [
    (["def {n}(c):", "    return lambda t: c * t"], lambda t, c, a: c * t),
    (["def {n}(c):", "    return lambda t: np.tanh(c * t) + {a}"], lambda t, c, a: 1.0 + a),
    (["def {n}(c):", "    return lambda t: t / (c * c + 1.0) + np.sin({a})"], lambda t, c, a: t + 1.0),
    (["def {n}(c):", "    def inner(t):", "        return np.tanh(t * c) * {a}", "    return inner"],
     lambda t, c, a: a),
]

HELPERS = '''

def _helper(a, b):
    return np.tanh(a * b) + a


def _pair(a):
    return np.sin(a), np.cos(a)


f_jvp = f_forward = f_backward = f_t_jvp = no_ct_2 = 1.0
'''


def _dummy(shape, value=0.7):
    return value if shape == "f" else np.full(shape, value)


_NAMESPACE = {"np": np}
exec(HELPERS, _NAMESPACE)  # noqa: S102 - the helpers, for _shape_of


def _dummies(env):
    return {n: _dummy(v["shape"]) if v["shape"] != "int" else v["value"] for n, v in env.items()}


def _shape_of(expr, env, namespace=None):
    """The shape of ``expr`` ("f" for a Python float), found by evaluating it on stand-in values.
    ``namespace``: the globals the program's stand-in functions were made in (they read the
    stand-ins of the names they capture from it when called, as the program's functions do)."""
    with np.errstate(all="ignore"):
        if namespace is None:
            value = eval(expr, _NAMESPACE, _dummies(env))  # noqa: S307 - our own programs
        else:
            namespace.update(_dummies(env))
            value = eval(expr, namespace)
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

    #: ``return a, (), b`` sometimes
    empty_tuples = True

    def __init__(self, draw):
        self.draw = draw
        self.env: dict[str, dict] = {}
        self.lines: list[str] = []
        self.unread: set[str] = set()
        self.assigned: set[str] = set()
        self.counter = 0
        self.params: list[tuple[str, object]] = []
        # functions as values (only when ``functions`` is set: ControlFlowGen leaves them out)
        self.funcs: dict[str, dict] = {}  # name -> {"arity", "bound", "default", "captures", "by_value"}
        self.ftuples: dict[str, list[dict]] = {}  # a tuple of functions -> its elements' infos
        self.hofs: dict[str, str] = {}  # a higher-order helper -> its kind (a key of HOFS)
        self.called: set[str] = set()
        self.pinned: set[str] = set()  # names not to reassign (FACTORY_LATE_BINDING)
        self.all_captures: set[str] = set()  # every name some function captures (COMPREHENSION_SHADOWS_CAPTURE)
        self.makers: set[str] = set()  # functions whose call may make a function (AUG_AFTER_CALL_OF_A_MAKER)
        self.fns = None  # the namespace the stand-in functions live in (for shape_of)
        self.fn_counts = Counter()

    functions = False  # generate functions as values

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
        names = [n for n in self.floats() if n not in self.unread and n not in self.pinned]
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
            *lhs, rhs = text.split(" = ")  # (`a = b = value`: two targets)
            targets = re.findall(names, " ".join(lhs))
        self.unread.difference_update(re.findall(names, rhs))
        self.unread.update(targets)
        self.assigned.update(targets)
        self.lines.append(text)

    def bound(self, name):
        return self.env[name]["bound"]

    def shape_of(self, expr):
        return _shape_of(expr, self.env, self.fns)

    def valid(self, expr):
        """Does ``expr`` evaluate (on stand-ins) to a value that is not an empty array?"""
        try:
            return 0 not in _bshape(self.shape_of(expr))
        except Exception:  # noqa: BLE001 - shapes that do not fit, a function given the wrong value
            return False

    def squash(self, expr, bound):
        if bound > LIMIT or not math.isfinite(bound):
            return f"np.tanh({expr})", 1.0
        return expr, bound

    def assign(self, target, expr, bound, fresh, views=()):
        for v in views:  # a view of v: v must no longer be updated in place
            if v in self.env:
                self.env[v]["fresh"] = False
        shape = self.shape_of(expr)
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
        if CONCATENATE_AXIS_NONE:
            c = self.pick(names)  # any shape: flattened
            forms.append(f"np.concatenate([{a}, {c}], axis=None)")
            bound_c = self.bound(c)
        if len(shape) == 2:
            forms += [f"np.tril({a})", f"np.triu({a}, 1)", f"np.diag({a})"]
        if len(shape) == 1:
            forms += [f"np.diag({a})", f"np.outer({a}, {b})"]
        bound = max(self.bound(a), self.bound(b))
        form = self.pick(forms)
        if "axis=None" in form:
            bound = max(bound, bound_c)
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

    # ------------------------------------------------------------------ functions as values

    def fn_name(self, prefix):
        self.counter += 1
        return f"{prefix}{self.counter}"

    def no_aug(self, names):
        """``names`` are held elsewhere (captured by value): no ``+=`` on them from now on."""
        for n in names:
            if n in self.env:
                self.env[n]["fresh"] = False

    def define(self, lines):
        """Add a nested def (lines) or an assignment of functions (one line), and make its stand-in."""
        if self.fns is None:
            self.fns = dict(_NAMESPACE)
        self.fns.update(_dummies(self.env))
        exec("\n".join(lines), self.fns)  # noqa: S102 - our own programs
        if len(lines) == 1:
            self.line(lines[0])
        else:
            self.unread.difference_update(re.findall(r"\b(?:v\d+|x|y|z|k)\b", "\n".join(lines)))
            self.lines.extend(lines)

    def callables(self, arity=None):
        """(text, info) of the functions a call can go through: names, elements of tuples."""
        out = list(self.funcs.items())
        for t, infos in self.ftuples.items():
            out += [(f"{t}[{j}]", i) for j, i in enumerate(infos)] + [(f"{t}[-1]", infos[-1])]
        return [c for c in out if arity is None or c[1]["arity"] == arity]

    def fbound(self, info, bounds, c=None):
        """The bound of a call given the arguments' bounds (``c``: the value given to a default parameter)."""
        if info["default"] is not None:
            bounds = [*bounds, info["default"] if c is None else c]
        return info["bound"](bounds)

    def call(self, fn, info, args):
        """Text and bound of a call of ``fn`` with ``args`` [(text, bound)], sometimes overriding a default."""
        extra, c = [], None
        if info["default"] is not None and self.draw(st.integers(0, 2)) == 0:
            value = self.pick(["0.5", "-1.5", "2.0"])
            extra, c = ([value] if self.draw(st.booleans()) else [f"c={value}"]), abs(float(value))
        if info.get("fn_default") and self.draw(st.booleans()):  # another function for `fn=...`
            other, _ = self.function_arg()
            extra = [other] if self.draw(st.booleans()) else [f"fn={other}"]
        texts = [a for a, _ in args]
        if info.get("params") and self.draw(st.integers(0, 4)) == 0:  # `g(t=x)`, `h(s=y, t=x)`
            texts = [f"{p}={a}" for p, a in zip(info["params"], texts)]
            if c is not None:
                extra = [f"c={value}"]
            elif extra and not extra[0].startswith("fn="):
                extra = [f"fn={extra[0]}"]
            texts = self.draw(st.permutations(texts + extra))
            extra = []
        return f"{fn}({', '.join(texts + extra)})", self.fbound(info, [b for _, b in args], c)

    def mark_called(self, text):
        """``text`` calls functions of the program: note which; arrays it gives to a function that makes
        functions are not updated in place from now on (AUG_AFTER_CALL_OF_A_MAKER)."""
        self.called.update(re.findall(r"\b(?:g|h|m|cm|fs)\d+\b", text))
        if not AUG_AFTER_CALL_OF_A_MAKER and self.mentions_maker(text):
            self.no_aug(re.findall(r"\b(?:v\d+|x|y|z)\b", text))

    def mentions_maker(self, text):
        return any(n in self.makers for n in re.findall(r"\b(?:g|h|m|cm|fs)\d+\b", text))

    def maker_if(self, name, text):
        """``name`` is bound to a function made from ``text``: a maker if the text calls one."""
        if self.mentions_maker(text):
            self.makers.add(name)

    def known_length(self, expr, filtered=False):
        """``expr`` stacks a list: reshape it if astad sees it with a run-time length (a filtered
        comprehension's always, RUNTIME_LENGTH)."""
        if RUNTIME_LENGTH and not filtered:
            return expr, True
        return f"{expr}.reshape({', '.join(map(str, self.shape_of(expr)))})", False

    def captures(self, body, a, b):
        return {n for key, n in (("{a}", a), ("{b}", b)) if key in body}

    def by_value_arg(self, constants):
        """A value a function will hold (a lambda's default, a factory's argument): often a fresh array."""
        fresh = [n for n in self.arrays() if self.env[n]["fresh"]]
        if fresh and self.draw(st.booleans()):
            return self.pick(fresh)
        return self.pick(self.floats() + constants)

    def new_lambda(self, arity=1, default=False, calls=True, a=None):
        """(source, info, names captured by value) of a lambda capturing names of the program (``a``: one
        it must capture); ``calls``: its body may call a function of the program by name."""
        names = self.floats()
        forced = a is not None
        b = self.pick(names + (["k"] if "k" in self.env else []))  # the int parameter too
        a = a if forced else self.pick(names)
        dflt, by_value, s = None, (), "s"
        if arity == 1 and default and self.draw(st.integers(0, 2)) == 0:  # `lambda t, c=v3: ...`
            d = self.by_value_arg(["0.5", "2.0"])
            body, bf = self.pick(LAMBDA_BODIES_2)
            params, s = f"t, c={d}", "c"
            dflt = self.bound(d) if d in self.env else abs(float(d))
            by_value = (d,) if d in self.env else ()
        elif arity == 1:
            ones = self.callables(1) if calls else []
            calling = ([("np.tanh(" + self.pick(ones)[0] + "({t})) + {a}", lambda t, s, a, b: 1.0 + a)]
                       if ones else [])
            body, bf = self.pick([x for x in LAMBDA_BODIES_1 + calling if "{a}" in x[0]] if forced else
                                 LAMBDA_BODIES_1 + calling)
            params = "t"
        else:
            body, bf = self.pick(LAMBDA_BODIES_2)
            params = "t, s"

        def bound(bs, a=a, b=b, bf=bf):
            return bf(bs[0], bs[1] if len(bs) > 1 else 0.0, self.bound(a), self.bound(b))

        text = f"lambda {params}: " + body.format(t="t", s=s, a=a, b=b)
        self.all_captures |= self.captures(body, a, b)
        return text, {"arity": arity, "bound": bound, "default": dflt, "captures": self.captures(body, a, b),
                      "by_value": set(by_value), "params": ("t", "s")[:arity]}, by_value

    def function_arg(self):
        """(text, info) of a function to pass: a name, a tuple's element, a lambda written in place or
        a numpy function."""
        ones = self.callables(1)
        kind = self.draw(st.integers(0, 5))
        if ones and kind >= 3:
            return self.pick(ones)
        if kind == 0:
            return self.builtin()
        text, info, _ = self.new_lambda(1)
        return text, info

    def builtin(self):
        name = self.pick(sorted(BUILTIN_FUNCTIONS))
        return name, {"arity": 1, "bound": lambda bs, f=BUILTIN_FUNCTIONS[name]: f(bs[0]), "default": None,
                      "captures": set(), "by_value": set()}

    def call_statement(self, fn, info, tries=3):
        """``v = fn(...)`` with arguments that fit, if some are found."""
        for _ in range(tries):
            args = [self.pick(self.floats()) for _ in range(info["arity"])]
            expr, bound = self.call(fn, info, [(a, self.bound(a)) for a in args])
            if self.valid(expr):
                self.mark_called(expr)
                self.assign(self.target(), *self.squash(expr, bound), True)
                return args
        return None

    def fn_lambda(self):
        name = self.fn_name("g")
        text, info, by_value = self.new_lambda(2 if self.draw(st.integers(0, 3)) == 0 else 1, default=True)
        self.no_aug(by_value)
        self.define([f"{name} = {text}"])
        self.maker_if(name, text)
        self.funcs[name] = info
        if self.draw(st.booleans()):
            self.call_statement(name, info)

    def fn_def(self):
        name = self.fn_name("h")
        names = self.floats()
        a, b = self.pick(names), self.pick(names)
        form = self.pick(["default", "default", "two", "one"])
        cval = self.pick(["2.0", "0.5", "-1.5"])
        if form == "default":
            params, c, dflt, arity = f"t, c={cval}", "c", abs(float(cval)), 1
        elif form == "two":
            params, c, dflt, arity = "t, s", "s", None, 2
        else:
            params, c, dflt, arity = "t", cval, None, 1
        if self.draw(st.integers(0, 3)) == 0:  # a one-line body
            body, bf2 = self.pick(LAMBDA_BODIES_2)
            body_lines = ["return " + body]

            def bf(t, c_, a_, b_, bf2=bf2):
                return bf2(t, c_, a_, b_)
        else:
            body_lines, bf = self.pick(DEF_BODIES)
        body = "\n".join(body_lines)
        const = abs(float(cval))

        def bound(bs, a=a, b=b, bf=bf):
            return bf(bs[0], bs[1] if len(bs) > 1 else const, self.bound(a), self.bound(b))

        self.define([f"def {name}({params}):"] + ["    " + ln.format(t="t", s=c, c=c, a=a, b=b) for ln in body_lines])
        info = {"arity": arity, "bound": bound, "default": dflt, "captures": self.captures(body, a, b),
                "by_value": set(), "params": ("t", "s")[:arity]}
        self.all_captures |= info["captures"]
        if "lambda" in body or "def " in body:
            self.makers.add(name)
        self.funcs[name] = info
        if self.draw(st.booleans()):
            self.call_statement(name, info)

    def fn_forward(self):
        """A lambda capturing a name assigned only after it (and before the call)."""
        name, later = self.fn_name("g"), self.fresh_name()
        text, info, _ = self.new_lambda(1, a=later)
        self.define([f"{name} = {text}"])
        self.maker_if(name, text)
        expr, bound, fresh, views = self.expression()
        self.assign(later, expr, bound, fresh, views)
        self.funcs[name] = info
        self.call_statement(name, info)

    def fn_rebind(self):
        """Bind a function's name to a new lambda: functions that call it by name call the new one."""
        name = self.pick(sorted(self.funcs))
        text, info, by_value = self.new_lambda(self.funcs[name]["arity"], default=True, calls=False)
        self.no_aug(by_value)
        self.define([f"{name} = {text}"])
        self.funcs[name] = info
        self.called.discard(name)
        if self.draw(st.booleans()):
            self.call_statement(name, info)

    def fn_pair(self):
        """A function that returns a tuple, unpacked or indexed."""
        a = self.pick(self.floats())
        (b1, f1), (b2, f2) = self.pick(LAMBDA_BODIES_1), self.pick(LAMBDA_BODIES_1)
        name = self.fn_name(self.pick(["g", "h"]))
        body = f"{b1}, {b2}".format(t="t", a=a, b=a)
        self.all_captures.add(a)
        self.define([f"{name} = lambda t: ({body})"] if name[0] == "g" else
                    [f"def {name}(t):", f"    return {body}"])
        for _ in range(3):
            x = self.pick(self.floats())
            if not self.valid(f"{name}({x})"):
                continue
            bx, ba = self.bound(x), self.bound(a)
            bounds = (f1(bx, 0.0, ba, ba), f2(bx, 0.0, ba, ba))
            if self.draw(st.booleans()):
                t1, t2 = self.fresh_name(), self.fresh_name()
                self.line(f"{t1}, {t2} = {name}({x})")
                for j, t in enumerate((t1, t2)):
                    self.env[t] = {"shape": self.shape_of(f"{name}({x})[{j}]"), "bound": bounds[j], "fresh": False}
                    if self.squash(t, bounds[j])[1] != bounds[j]:  # too large: squash it
                        self.assign(t, f"np.tanh({t})", 1.0, True)
            else:
                j = self.draw(st.integers(0, 1))
                self.assign(self.target(), *self.squash(f"{name}({x})[{j}]", bounds[j]), False)
            return

    def fn_fdefault(self):
        """A function whose default is a function (held by value): `lambda t, fn=g1: ...`."""
        fn, _ = self.function_arg()
        a = self.pick(self.floats())
        name = self.fn_name(self.pick(["g", "h"]))
        body, bound, captures = self.pick([(f"np.tanh(fn(t)) + {a}", lambda bs: 1.0 + self.bound(a), {a}),
                                           (f"np.tanh(fn(t) * {a})", lambda bs: 1.0, {a}),
                                           ("np.tanh(fn(fn(t))) * 0.5 + t", lambda bs: 0.5 + bs[0], set())])
        self.define([f"{name} = lambda t, fn={fn}: {body}"] if name[0] == "g" else
                    [f"def {name}(t, fn={fn}):", f"    return {body}"])
        self.all_captures.add(a)
        info = {"arity": 1, "bound": bound, "default": None, "captures": captures,
                "by_value": set(), "params": ("t",), "fn_default": True}
        self.makers.add(name)  # its `fn` may be one
        self.funcs[name] = info
        self.call_statement(name, info)

    def fn_tuple(self):
        elements = []
        for _ in range(self.draw(st.integers(2, 3))):
            named = self.callables()
            kind = self.draw(st.integers(0, 4))
            if named and kind >= 2:
                text, info = self.pick(named)
            elif kind == 0:
                text, info = self.builtin()
            else:
                text, info, _ = self.new_lambda(1)
            elements.append((text, info))
        name = self.fn_name("fs")
        self.define([f"{name} = ({', '.join(t for t, _ in elements)})"])
        self.maker_if(name, " ".join(t for t, _ in elements))
        self.ftuples[name] = [i for _, i in elements]
        use = self.pick(["call", "call", "unpack", "stack"])
        if use == "unpack":  # `g5, g6 = fs4`
            targets = [self.fn_name("g") for _ in elements]
            self.define([f"{', '.join(targets)} = {name}"])
            for t, (text, _) in zip(targets, elements):
                self.maker_if(t, text)
            self.funcs.update((t, i) for t, (_, i) in zip(targets, elements))
            return
        if use == "stack" and all(i["arity"] == 1 for _, i in elements):
            self.comprehension_statement(f"tuple:{name}")
            return
        j = self.draw(st.integers(-len(elements), len(elements) - 1))
        self.call_statement(f"{name}[{j}]", elements[j][1])

    def fn_factory(self):
        name = self.fn_name("make")
        lines, bf = self.pick(FACTORIES)
        a = self.pick(self.floats())
        self.define([ln.format(n=name, a=a) for ln in lines])
        captures = {a} if any("{a}" in ln for ln in lines) else set()
        self.all_captures |= captures
        if not FACTORY_LATE_BINDING:
            self.pinned |= captures
        for _ in range(self.draw(st.integers(1, 2))):
            d = self.by_value_arg(["0.5", "-1.5"])
            bc = self.bound(d) if d in self.env else abs(float(d))
            self.no_aug([d])

            def bound(bs, bc=bc, a=a):
                return bf(bs[0], bc, self.bound(a))

            info = {"arity": 1, "bound": bound, "default": None, "captures": captures,
                    "by_value": {d} if d in self.env else set(), "params": ("t",)}
            if self.draw(st.integers(0, 2)) == 0:  # `make3(v1)(x)`
                self.call_statement(f"{name}({d})", info)
            else:
                m = self.fn_name("m")
                self.define([f"{m} = {name}({d})"])
                self.funcs[m] = info
                if self.draw(st.booleans()):
                    self.call_statement(m, info)

    def fn_hof(self):
        kind = self.pick(sorted(HOFS))
        name = self.fn_name(kind)
        self.define([ln.format(n=name) for ln in HOFS[kind]])
        self.hofs[name] = kind
        if kind == "compose" and self.draw(st.booleans()):  # `cm5 = compose4(g1, lambda t: ...)`
            (p, ip), (q, iq) = self.function_arg(), self.function_arg()
            cm = self.fn_name("cm")
            self.define([f"{cm} = {name}({p}, {q})"])
            self.maker_if(cm, f"{p} {q}")
            self.mark_called(f"{p} {q}")

            def bound(bs, ip=ip, iq=iq):
                return self.fbound(ip, [self.fbound(iq, bs)])

            self.funcs[cm] = {"arity": 1, "bound": bound, "default": None,
                              "captures": ip["captures"] | iq["captures"], "by_value": ip["by_value"] | iq["by_value"],
                              "params": ("v",)}
            return
        for _ in range(3):
            out = self.hof_expression(name)
            if out is not None:
                self.assign(self.target(), *out)
                return

    def hof_expression(self, name):
        kind = self.hofs[name]
        fn, info = self.function_arg()
        a = self.pick(self.floats())
        ba = self.bound(a)
        fresh = True
        if kind == "twice":
            expr, bound = f"{name}({fn}, {a})", self.fbound(info, [self.fbound(info, [ba])])
        elif kind == "loop":
            expr, bound = f"{name}({fn}, {a})", 3.0
        elif kind == "both":
            b = self.pick(self.floats())
            expr = f"{name}({fn}, {a}, {b})"
            bound = 0.5 * (self.fbound(info, [ba]) + self.fbound(info, [self.bound(b)]))
        elif kind == "compose":
            q, iq = self.function_arg()
            expr, bound = f"{name}({fn}, {q})({a})", self.fbound(info, [self.fbound(iq, [ba])])
        else:  # rows
            arrays = self.arrays()
            if not arrays:
                return None
            a = self.pick(arrays)
            expr, bound = f"{name}({fn}, {a})", self.fbound(info, [self.bound(a)])
            if self.valid(expr):
                expr, fresh = self.known_length(expr)
        if not self.valid(expr):
            return None
        self.mark_called(expr)
        return (*self.squash(expr, bound), fresh, (a,) if kind == "rows" else ())

    def e_hof_call(self):
        if not self.hofs:
            return None
        return self.hof_expression(self.pick(sorted(self.hofs)))

    def e_call(self):
        cands = self.callables()
        if not cands:
            return None
        for _ in range(3):
            fn, info = self.pick(cands)
            args = [self.pick(self.floats()) for _ in range(info["arity"])]
            expr, bound = self.call(fn, info, [(a, self.bound(a)) for a in args])
            if self.valid(expr):
                self.mark_called(expr)
                return (*self.squash(expr, bound), True, ())
        return None

    def comprehension(self, form=None):
        """A list comprehension (or ``list(map(...))``) calling a function, stacked into an array."""
        arrays = self.arrays()
        if not arrays:
            return None
        a, b = self.pick(arrays), self.pick(arrays)
        ba, d0 = self.bound(a), self.env[a]["shape"][0]
        twos = self.callables(2)
        if form is None:
            forms = ["rows", "rows", "range_len", "range_n", "map", "map", "map", "filter", "enumerate", "generator",
                     "list", "index"]
            forms += ["range_k"] if "k" in self.env else []
            forms += ["map2", "zip", "nested"] if twos else []
            forms += [f"tuple:{t}" for t, infos in self.ftuples.items() if all(i["arity"] == 1 for i in infos)]
            form = self.pick(forms)
        if form in ("map2", "zip", "nested"):
            fn, info = self.pick(twos)
            bound = self.fbound(info, [ba, self.bound(b)])
            p, q = self.loop_var("p"), self.loop_var("q")
            if p == q:
                p, q = "p", "q"
            inner = {"map2": f"list(map({fn}, {a}, {b}))", "zip": f"[{fn}({p}, {q}) for {p}, {q} in zip({a}, {b})]",
                     "nested": f"[np.stack([{fn}(p, q) for q in {b}]) for p in {a}]"}[form]
        elif form == "index":  # a lambda taking an index
            c = self.pick(self.floats())
            body, bound = self.pick([(f"{a}[j] * {c}", ba * self.bound(c)), (f"np.tanh({a}[j] + {c})", 1.0)])
            inner = f"[(lambda j: {body})(i) for i in range(len({a}))]"
            self.all_captures.update((a, c))
        elif form.startswith("tuple:"):
            fs = form[6:]
            inner = f"[fn({a}) for fn in {fs}]"
            bound = max(self.fbound(i, [ba]) for i in self.ftuples[fs])
        else:
            fn, info = self.function_arg()
            call_fn = f"({fn})" if fn.startswith("lambda") else fn
            scale = {"range_k": self.env.get("k", {}).get("value", 1), "enumerate": d0}.get(form, 1)
            r = self.loop_var("r")
            if form == "list":  # over a list of names
                items = [a] + [self.pick(self.floats()) for _ in range(self.draw(st.integers(0, 2)))]
                ba = max(self.bound(n) for n in items)
            arg = {"rows": r, "range_len": f"{a}[i]", "range_n": f"{a}[i]", "filter": r, "enumerate": r,
                   "range_k": f"{a} * (i + 1.0)", "map": None, "generator": r, "list": r}[form]
            if arg is None:
                inner, bound = f"list(map({fn}, {a}))", self.fbound(info, [ba])
            else:
                text, bound = self.call(call_fn, info, [(arg, ba * (scale if form == "range_k" else 1))])
                n = self.draw(st.integers(1, d0))
                inner = {"rows": f"[{text} for {r} in {a}]", "range_len": f"[{text} for i in range(len({a}))]",
                         "range_n": f"[{text} for i in range({n})]",
                         "filter": f"[{text} for i, {r} in enumerate({a}) if i % 2 == 0]",
                         "enumerate": f"[{text} * (i + 1.0) for i, {r} in enumerate({a})]",
                         "range_k": f"[{text} for i in range(k)]",
                         "generator": f"list({text} for {r} in {a})",
                         "list": f"[{text} for {r} in [{', '.join(items)}]]" if form == "list" else ""}[form]
                bound *= scale if form == "enumerate" else 1
        expr = f"{self.pick(['np.stack', 'np.array'])}({inner})"
        if not self.valid(expr):
            return None
        self.mark_called(expr)
        expr, fresh = self.known_length(expr, filtered=" if " in inner)
        # astad refuses `a += ...` once anything indexed `a` (iterating over its rows too)
        return (*self.squash(expr, bound), fresh, (a, b))

    def loop_var(self, name):
        """A comprehension's variable: ``name``, or sometimes the name of a variable of the program
        (shadowed inside the comprehension only; not one a function captures, COMPREHENSION_SHADOWS_CAPTURE)."""
        names = [n for n in self.floats() if COMPREHENSION_SHADOWS_CAPTURE or n not in self.all_captures]
        if names and self.draw(st.integers(0, 3)) == 0:
            return self.pick(names)
        return name

    def e_comprehension(self):
        return self.comprehension()

    def fn_comprehension(self):
        for _ in range(3):
            out = self.comprehension()
            if out is not None:
                self.assign(self.target(), *out)
                return

    def comprehension_statement(self, form):
        out = self.comprehension(form)
        if out is not None:
            self.assign(self.target(), *out)

    def late_candidates(self):
        out = []
        for fn, info in self.callables():
            caps = sorted(c for c in info["captures"] | info["by_value"]
                          if c in self.env and self.env[c]["shape"] != "int" and c not in self.pinned)
            if caps:
                out.append((fn, info, caps))
        return out

    def fn_late(self):
        """Call a function, reassign (or update in place) a name it captures, call it again: the
        second call sees the new value (but not if the function holds the old value: a lambda's
        default, a factory's argument)."""
        fn, info, caps = self.pick(self.late_candidates())
        for _ in range(3):
            args = [self.pick(self.floats()) for _ in range(info["arity"])]
            if self.valid(self.call(fn, info, [(a, 1.0) for a in args])[0]):
                break
        else:
            return
        expr, bound = self.call(fn, info, [(a, self.bound(a)) for a in args])
        if self.draw(st.booleans()) and self.valid(expr):
            self.mark_called(expr)
            self.assign(self.fresh_name(), *self.squash(expr, bound), True)
        by_value = [c for c in caps if c in info["by_value"]]
        a = self.pick(by_value if by_value and self.draw(st.booleans()) else caps)
        ba = self.bound(a)
        if (self.env[a]["fresh"] or self.env[a]["shape"] == "f") and self.draw(st.booleans()):
            op = self.pick(["*= 0.5", "+= 0.25", "-= 0.5"])
            self.line(f"{a} {op}")
            self.env[a]["bound"] = ba * 0.5 if op.startswith("*") else ba + abs(float(op.split()[1]))
        else:
            expr, bound = self.pick([(f"np.tanh({a} * 1.3)", 1.0), (f"{a} * 0.5 + 0.25", 0.5 * ba + 0.25),
                                     (f"np.sin({a}) + 0.5 * {a}", 1.0 + 0.5 * ba), (f"np.cos({a}) * 2.0", 2.0)])
            self.assign(a, *self.squash(expr, bound), True)
        expr, bound = self.call(fn, info, [(a, self.bound(a)) for a in args])
        if self.valid(expr):
            self.mark_called(expr)
            self.assign(self.fresh_name(), *self.squash(expr, bound), True)

    def ensure_called(self):
        """Most functions are called at least once (the others are dead code)."""
        for name, info in list(self.funcs.items()):
            if name not in self.called and self.draw(st.integers(0, 3)):
                self.call_statement(name, info)
        for name, infos in list(self.ftuples.items()):
            if name not in self.called and self.draw(st.integers(0, 3)):
                self.call_statement(f"{name}[0]", infos[0])

    # ------------------------------------------------------------------ statements

    def statement(self):
        kinds = ["expr"] * 6 + ["unpack", "aug", "pair"]
        if CHAINED_ASSIGNMENT:
            kinds += ["chain"]
        if self.functions:
            kinds += (["fn_lambda"] * 3 + ["fn_def"] * 2 + ["fn_hof"] * 2
                      + ["fn_tuple", "fn_factory", "fn_comprehension", "fn_forward", "fn_pair", "fn_fdefault"])
            if self.late_candidates():
                kinds += ["fn_late"] * 3
            if self.funcs:
                kinds += ["fn_rebind"]
        kind = self.pick(kinds)
        if kind.startswith("fn_"):
            self.fn_counts[kind] += 1
            getattr(self, kind)()
            return
        if kind == "unpack":
            first, second = self.expression(), self.expression()
            t1, t2 = self.fresh_name(), self.fresh_name()
            self.line(f"{t1}, {t2} = {first[0]}, {second[0]}")
            for t, (expr, bound, fresh, views) in ((t1, first), (t2, second)):
                for v in views:
                    self.env[v]["fresh"] = False
                self.env[t] = {"shape": self.shape_of(expr), "bound": bound, "fresh": False}
            return
        if kind == "chain":  # `t1 = t2 = e`: two names of one value (never updated in place then)
            expr, bound, _, views = self.expression()
            t1, t2 = self.target(), self.fresh_name()
            for v in views:
                self.env[v]["fresh"] = False
            shape = self.shape_of(expr)
            self.line(f"{t1} = {t2} = {expr}")
            for t in (t1, t2):
                self.env[t] = {"shape": shape, "bound": bound, "fresh": False}
            return
        if kind == "pair":
            a = self.pick(self.floats())
            t1, t2 = self.fresh_name(), self.fresh_name()
            self.line(f"{t1}, {t2} = _pair({a})")
            for t in (t1, t2):
                self.env[t] = {"shape": self.shape_of(f"_pair({a})[0]"), "bound": 1.0, "fresh": False}
            return
        if kind == "aug":
            targets = [n for n in self.floats() if (self.env[n]["fresh"] or self.env[n]["shape"] == "f")
                       and n not in self.pinned]
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
            kinds = ["binary"] * 3 + ["unary"] * 2 + ["reduction", "matmul", "index", "shape", "where", "int_scale"]
            if self.functions:
                kinds += ["call"] * 3 + ["comprehension"] * 3 + ["hof_call"]
            kind = self.pick(kinds)
            out = getattr(self, f"e_{kind}")()
            if out is not None and kind in ("call", "comprehension", "hof_call"):
                self.fn_counts[kind] += 1
            if out is not None and 0 not in _bshape(self.shape_of(out[0])):  # no empty arrays
                return out

    def scalar_ret(self):
        """A real scalar, nonlinear in one or two values of the program (often the first parameter)."""
        names = self.floats()
        terms = []
        for _ in range(self.draw(st.integers(1, 2))):
            a = self.pick(names + [self.params[0][0]] * len(names))
            terms.append(self.pick([f"np.sum({a} * {a})", f"np.sum(np.tanh({a}))", f"np.sum(np.sin({a})) * 0.5"]
                                   if _nd(self.env[a]["shape"]) else [f"{a} * {a}", f"np.tanh({a})", f"np.sin({a})"]))
        return " + ".join(terms)

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
        items = [self.pick(names) for _ in range(k)]
        if self.empty_tuples and self.draw(st.integers(0, 4)) == 0:  # an empty tuple among them (its zero
            # is `()`: it crashed codegen)
            # (also nested ones, of no leaf either: `((),)` crashed codegen after `()` was fixed)
            empty = self.draw(st.sampled_from(["()", "((),)", "((), ())"]))
            items.insert(self.draw(st.integers(0, k - 1)), empty)  # (not last: callers add `+ ...` to it)
        return ", ".join(items)


@st.composite
def programs(draw, first=None, scalar=False):
    """(source, params, seed).  ``first``: the shapes the first parameter may have (default: any
    of PARAM_SHAPES); ``scalar``: the program returns a real scalar (for second derivatives)."""
    g = Gen(draw)
    n_params = draw(st.integers(1, 3))
    for i in range(n_params):
        shape = draw(st.sampled_from(first if i == 0 and first else PARAM_SHAPES))
        name = "xyz"[i]
        g.params.append((name, shape))
        g.env[name] = {"shape": shape, "bound": INPUT_BOUND, "fresh": False}
        g.unread.add(name)
    if draw(st.booleans()):
        value = draw(st.integers(1, 2))
        g.params.append(("k", value))
        g.env["k"] = {"shape": "int", "value": value, "bound": float(value), "fresh": False}
        g.unread.add("k")
    arrays = []
    if MODULE_ARRAYS and draw(st.integers(0, 2)) == 0:
        for j in range(draw(st.integers(1, 2))):
            shape = draw(st.sampled_from([s for s in PARAM_SHAPES if s != "f"]))
            name = f"G{j + 1}"
            g.env[name] = {"shape": shape, "bound": 0.9, "fresh": False}
            g.pinned.add(name)  # read, never assigned (or updated in place) by the program
            arrays.append(f"{name} = np.linspace(-0.9, 0.8, {int(np.prod(shape))}).reshape({shape!r})\n")
            if draw(st.integers(0, 3)) == 0:  # read-only, owning its memory (reshape's is a view): changing_arrays
                arrays.append(f"{name} = {name}.copy()\n{name}.flags.writeable = False\n")  # makes it writeable again
    g.functions = draw(st.integers(0, 4)) > 0
    if g.functions:  # one construct with functions first, so that short programs have one too
        kind = g.pick(["fn_lambda", "fn_def", "fn_hof", "fn_tuple", "fn_factory", "fn_comprehension"])
        g.fn_counts[kind] += 1
        getattr(g, kind)()
    for _ in range(draw(st.integers(1, 8))):
        g.statement()
    if g.functions:
        g.ensure_called()
    note(f"functions as values: {dict(g.fn_counts)}")
    body = "\n".join(f"    {line}" for line in g.lines + [f"return {g.scalar_ret() if scalar else g.ret()}"])
    source = ("import numpy as np\n" + HELPERS + "".join(arrays) + "\n\ndef f("
              + ", ".join(n for n, _ in g.params) + "):\n" + body + "\n")
    source = reading_a_constant(draw, renamed(source, lookalike_names(draw, source)))
    source = shadowing_globals(draw, source)
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


@settings(max_examples=fuzz_examples(60, long=150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.data())
def test_random_program(program_dir, program, data):
    source, params, seed = program
    note(source)
    module = load_program(source, program_dir, "random")
    fn = module.f
    args = _arguments(params, seed)
    note(f"args = {args!r}")

    # (a) the pullback against central finite differences (at the values of the forward call:
    # the module-level arrays changed between the call and the pullback)
    check_grad(fn, args, seed=seed % 1000, between=changing_arrays(module, data))
    # (b) every stage's IR, interpreted, against direct execution and the generated code
    check_stages(fn, args, seed)
    # (c) forward mode: J v against central differences, <u, J v> == <J^T u, v> (u, v drawn)
    check_forward(fn, args, data)


def changing_arrays(module, data):
    """What changes the module-level arrays ``G1``, ``G2`` of a program (each in place, by a slice
    assignment or by rebinding its name, as drawn from ``data``) and returns what undoes it; None
    for a program without them."""
    names = [n for n in ("G1", "G2") if n in vars(module)]
    if not names:
        return None
    hows = [data.draw(st.sampled_from(["fill", "multiply", "slice", "rebind"]), label=f"change of {n}")
            for n in names]

    def change():
        undo = []
        for name, how in zip(names, hows):
            arr = getattr(module, name)
            new = np.linspace(1.7, -1.3, arr.size).reshape(arr.shape)
            if how == "rebind":
                setattr(module, name, new)
                undo.append(lambda name=name, arr=arr: setattr(module, name, arr))
                continue
            old, read_only = arr.copy(), not arr.flags.writeable
            arr.flags.writeable = True  # (a read-only array owning its memory may be made writeable again)
            if how == "multiply":
                arr *= -3.0
            elif how == "slice" and arr.ndim:
                arr[1:] = new[1:]
            else:
                arr[...] = new

            def restore(arr=arr, old=old, read_only=read_only):
                arr[...] = old
                arr.flags.writeable = not read_only
            undo.append(restore)
        return lambda: [u() for u in undo]

    return change


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
