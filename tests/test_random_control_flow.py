"""Random programs with control flow over the supported subset, written to .py
files and imported: ``if``/``elif``/``else`` (joins, early returns, loops
inside branches), conditional expressions, ``and``/``or``/``not``, chained
comparisons, ``for i in range(...)`` (bounds from an int parameter ``n``, from
shapes or constants, negative and stepped ranges, nested loops, branches inside
loops) and ``while`` loops with a bounded trip count; loops carry floats and
arrays (contractions and accumulators, kept bounded with ``np.tanh``) and read
``x[i % len(x)]``.  The straight-line statements come from
``test_random_programs.Gen``.

For each program: (a) the pullback against central finite differences
(``conftest.check_grad``) and (b) every stage's IR, interpreted, against direct
execution and the generated code (``test_random_programs.check_stages``).

Finite differences are only right away from branch boundaries, so each program
is also written in an instrumented variant where every comparison on reals
(``if``/``while`` conditions, conditional expressions, ``np.where``,
``np.maximum``/``np.minimum``) records its margin; a point where any margin
evaluated is below ``MARGIN`` is rejected (``assume``).  Conditions on ints
(``n``, loop indices, counters) have no margin.  ``n`` is passed as a Python
int (static: known when the function is transformed, so trip counts and
conditions on it are constants) or as ``np.int64`` (dynamic).

Constructs astad gets wrong are left out by the switches below (each with a
reproducer), not skipped or marked xfail.
"""

import copy
import math
import re
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

from conftest import check_grad, load_program
from test_random_programs import (HELPERS, INPUT_BOUND, Gen, _arguments, _assert_equal, _bshape, _nd,
                                  _shape_of, check_stages)

PARAM_SHAPES = ["f", "f", (), (3,), (4,), (2, 3), (3, 1)]
MARGIN = 1e-3  # smallest |a - b| allowed for a comparison of reals evaluated at the test point
MAX_LOOP_DEPTH = 2
MAX_DEPTH = 3

# Switches that leave out what astad gets wrong, each with a reproducer; flip
# one to True (False for INVARIANT_READ_ONCE) to generate the construct again.

# astad bug up to 223042d, fixed in a8df207 (optimise._scatter_adds dropped the
# sums it had looked through when it found no scatter to rewrite): a
# loop-invariant value read twice in a loop body, none of the reads indexed,
# lost its cotangent (NameError in the generated backward code):
#     def f(x, w):
#         for i in range(2):
#             x = x * w + w
#         return x
# True: a value defined outside a loop and not updated by it is read at most
# once per loop body (its nested blocks included).
INVARIANT_READ_ONCE = False

# (fixed; the switch stays as a regression check) a loop nested in another loop that runs zero times in some
# iteration of the outer one: the outer loop's tape saves the inner body's
# temporaries, unbound then (UnboundLocalError in the generated forward code):
#     def f(x, n):
#         for i in range(2):
#             for j in range(n):
#                 x = x * np.cos(x)
#         return x
#     f(0.5, 0)
# False: nested loops run at least once.
ZERO_TRIP_NESTED_LOOPS = True

# (fixed; the switch stays as a regression check) a value defined by an `if` (or `a if c else b`) outside a loop and
# read only by dead code inside it: the backward pass starts its (zero)
# cotangent accumulator with np.zeros_like(v), but the forward pass no longer
# computes v (NameError in the generated backward code):
#     def f(x, z):
#         v = x if z > 0.0 else -x
#         for i in range(2):
#             t = np.sin(v)  # dead
#             x = x * z
#         return x
#     f(np.ones(2), -0.2)
# False: loop bodies have no dead code: a value computed in a block
# inside a loop is read before the block ends (by an update of a carried name
# if nothing else), and no name is overwritten there before it is read.
DEAD_CODE_IN_LOOPS = True

# (fixed; the switch stays as a regression check) a float parameter whose value is joined (by an `if` or a loop) with
# a numpy scalar, then given to np.maximum/np.minimum/np.where: its cotangent
# comes back as a 0-d array, not a float, e.g.
#     def f(y, z):
#         if y < 0.0:
#             y = np.sum(z)
#         return np.minimum(0.3, y)
#     f(1.45, np.array([0.9, 0.2]))  # pullback(1.0)[0] is array(0.)
# False: a name that may hold a Python float or a numpy scalar ("mixed") is
# not given to those functions.
MIXED_SCALARS_INTO_WHERE = True
_WHERE_LIKE = re.compile(r"np\.(maximum|minimum|where)\(")

MARGIN_HELPERS = '''

_MARGINS = []


def _m(a, b):
    d = a - b
    _MARGINS.append(float(np.min(np.abs(d))))
    return d


def _mx(a, b):
    _m(a, b)
    return a
'''

_NAME = re.compile(r"\b[A-Za-z_]\w*\b")
_SHAPE_READ = re.compile(r"len\(\w+\)|\b\w+\.shape\b")  # shapes only: no cotangent


def _scalar(shape):
    return shape == "f" or shape == ()


def _same_shape(a, b):
    return a == b or (_scalar(a) and _scalar(b))


def _join_shape(a, b):
    return a if a == b else ()


# ---------------------------------------------------------------------------- conditions
# A condition is a small tree, rendered plainly or with margins recorded:
#   ("cmp", a, op, b)  ("chain", lo, a, hi)  ("int", text)  ("and"|"or", l, r)  ("not", c)

_FLIP = {"<": ">", "<=": ">=", ">": ">", ">=": ">="}


def render(cond, instrumented):
    kind = cond[0]
    if kind == "int":
        return cond[1]
    if kind == "cmp":
        _, a, op, b = cond
        if not instrumented:
            return f"{a} {op} {b}"
        lhs, rhs = (a, b) if op in (">", ">=") else (b, a)
        return f"_m({lhs}, {rhs}) {_FLIP[op]} 0.0"
    if kind == "chain":
        _, lo, a, hi = cond
        return f"_m({a}, {lo}) > 0.0 and _m({hi}, {a}) > 0.0" if instrumented else f"{lo} < {a} < {hi}"
    if kind == "not":
        return f"not ({render(cond[1], instrumented)})"
    left, right = (render(c, instrumented) for c in cond[1:])
    return f"({left}) {kind} ({right})"


def _instrument_calls(line):
    line = re.sub(r"np\.where\((\w+) > 0\.1,", r"np.where(_m(\1, 0.1) > 0.0,", line)

    def minmax(m):
        a, b = m.group(2), m.group(3)
        return m.group(0) if a == b else f"np.{m.group(1)}(_mx({a}, {b}), {b})"

    return re.sub(r"np\.(maximum|minimum)\((-?[\w.]+), (-?[\w.]+)\)", minmax, line)


# ---------------------------------------------------------------------------- the generator

class ControlFlowGen(Gen):
    """``Gen`` with blocks.  A loop frame records the names defined outside the
    loop (``outer``), those it updates (``carried``, chosen when it starts) and
    how often the others are read in its body.  Rules that keep programs valid
    and values bounded:

    - inside a block, a name that exists before it is reassigned only with a
      value of the same shape (a join); inside a loop, only if every enclosing
      loop carries it, and never beyond its bound at loop entry, made at least
      1 (``np.tanh`` otherwise): the bound then holds for any trip count;
    - an accumulator created just before a loop gets exactly one
      ``acc = acc + e`` (|e| <= 1) per iteration and no other update, so its
      bound is the trip count (plus one);
    - arrays defined outside a loop are not updated in place inside it;
    - names defined inside a block are forgotten after it (Python keeps some,
      astad refuses them), and so is a loop index."""

    def __init__(self, draw):
        super().__init__(draw)
        self.depth = 0
        self.frames: list[dict] = []
        self.accumulators: set[str] = set()
        self.conds: dict[str, tuple] = {}
        self.early_return = False
        self.n_loops = 0

    # ------------------------------------------------------------ bookkeeping

    def floats(self):
        return [n for n in super().floats() if self.readable(n)]

    def invariant(self, frame, name):
        return name in frame["outer"] and name not in frame["carried"]

    def readable(self, name):
        return not INVARIANT_READ_ONCE or all(f["reads"][name] == 0 for f in self.frames if self.invariant(f, name))

    def _reads(self, text):
        text = _SHAPE_READ.sub("", text)
        return [m for m in _NAME.findall(text) if m in self.env and self.env[m]["shape"] != "int"]

    def reads_ok(self, text):
        new = Counter(self._reads(text))
        return not INVARIANT_READ_ONCE or all(
            f["reads"][n] + c <= 1 for f in self.frames for n, c in new.items() if self.invariant(f, n))

    def count_reads(self, text, frames=None):
        # astad refuses `a += ...` once anything indexed `a` (even an element read, a copy)
        self.mark_views(re.findall(r"\b(\w+)\[", text))
        for name in self._reads(text):
            for f in self.frames if frames is None else frames:
                if self.invariant(f, name):
                    f["reads"][name] += 1

    def writable(self, name):
        return (self.env[name]["shape"] != "int" and name not in self.accumulators
                and all(name not in f["outer"] or name in f["carried"] for f in self.frames))

    def capped(self, name):
        """Inside a loop that carries ``name``: reassigning it must not raise its bound."""
        return bool(self.frames) and name in self.frames[-1]["outer"]

    def line(self, text):
        aug = re.match(r"^(\w+) [-+*/]= (.*)$", text)
        lhs, rhs = (aug.group(1), text) if aug else text.split(" = ", 1)
        self.count_reads(rhs)
        for f in self.frames:
            f["updated"].update(re.findall(r"\w+", lhs))
        super().line(text)
        self.lines[-1] = "    " * self.depth + self.lines[-1]

    def note_reads(self, text, frames=None):
        """For text ``Gen.line`` does not see (conditions)."""
        self.count_reads(text, frames)
        self.unread.difference_update(self._reads(text))

    def header(self, text, reads=""):
        """A line that opens a block (``if ...:``, ``else:``); ``reads``: what it reads."""
        self.note_reads(reads)
        self.lines.append("    " * self.depth + text)

    def no_dead_code(self):
        return bool(self.frames) and not DEAD_CODE_IN_LOOPS

    def define(self, name, shape, bound, fresh=False):
        old = self.env.get(name)
        mixed = False
        if old is not None and self.depth:  # a value of this name from before may flow here (a join)
            mixed = old.get("mixed", False) or old["shape"] != shape
            shape = _join_shape(old["shape"], shape)
            bound = old["bound"] if self.capped(name) else bound
        self.env[name] = {"shape": shape, "bound": bound, "fresh": fresh and not _scalar(shape), "mixed": mixed}

    def snapshot(self):
        return (len(self.lines), copy.deepcopy(self.env), set(self.unread), set(self.assigned), self.counter,
                [(Counter(f["reads"]), set(f["updated"])) for f in self.frames])

    def restore(self, snap):
        n_lines, self.env, self.unread, self.assigned, self.counter, frames = snap
        del self.lines[n_lines:]
        for f, (reads, updated) in zip(self.frames, frames):
            f["reads"], f["updated"] = reads, updated

    def valid_after(self, snap):
        """Did the statement just generated by ``Gen.statement`` keep the rules?"""
        for name, old in snap[1].items():
            new = self.env.get(name)
            if new is None or new == old:
                continue
            if self.depth and not (self.writable(name) and _same_shape(new["shape"], old["shape"])):
                return False
            if self.capped(name) and new["bound"] > old["bound"]:
                return False
        return not INVARIANT_READ_ONCE or all(
            c <= 1 for f in self.frames for n, c in f["reads"].items() if self.invariant(f, n))

    def target(self):
        return self.fresh_name() if self.depth else super().target()

    def mark_views(self, views):
        for v in views:
            if v in self.env:
                self.env[v]["fresh"] = False

    # ------------------------------------------------------------ expressions

    def expression(self):
        for _ in range(8):
            out = None
            if self.frames and self.draw(st.integers(0, 3)) == 0:
                out = self.e_loop_read()
            if out is None:
                out = super().expression()
            if self.reads_ok(out[0]) and self.where_ok(out[0]):
                return out
        # every candidate broke a rule: use a name the loop updates
        name = self.pick([n for n in self.floats() if not self.frames or not self.invariant(self.frames[-1], n)])
        return f"np.sin({name})", 1.0, True, ()

    def where_ok(self, text):
        return MIXED_SCALARS_INTO_WHERE or not _WHERE_LIKE.search(text) or not any(
            self.env[n].get("mixed") for n in _NAME.findall(text) if n in self.env)

    def e_loop_read(self):
        """Reads that depend on the loop index: ``a[i % len(a)]`` and the like."""
        index = self.frames[-1]["index"]
        arrays = self.arrays()
        if index is None or not arrays:
            return None
        a = self.pick(arrays)
        d0 = self.env[a]["shape"][0]
        forms = [f"{a}[{index} % len({a})]", f"{a}[({index} + 1) % {a}.shape[0]]", f"{a}[-1 - {index} % {d0}]"]
        if d0 >= 2:
            forms.append(f"{a}[{index} % 2]")
        form = self.pick(forms)
        if self.draw(st.booleans()):
            imax = self.env[index]["value"]
            return (*self.squash(f"{form} * ({index} + 1.0)", self.bound(a) * (imax + 1.0)), True, (a,))
        return form, self.bound(a), False, (a,)

    # ------------------------------------------------------------ conditions

    def scalar_term(self):
        """A real scalar to compare: a scalar name, or a reduction or element of an array."""
        a = self.pick(self.floats())
        shape = self.env[a]["shape"]
        if _scalar(shape):
            return a
        index = ", ".join("0" for _ in shape)
        return self.pick([f"np.sum({a})", f"np.mean({a})", f"{a}[{index}]", f"np.max({a})"])

    def real_comparison(self):
        a = self.scalar_term()
        kind = self.draw(st.integers(0, 5))
        if kind == 0:
            lo, hi = self.pick([("-1.0", "0.2"), ("-0.5", "0.7"), ("0.0", "1.2"), ("-0.5", "0.5")])
            return ("chain", lo, a, hi)
        b = self.scalar_term() if kind >= 4 else None
        if b is None or b == a:
            b = self.pick(["0.0", "0.3", "-0.4", "1.0"])
        return ("cmp", a, self.pick(["<", "<=", ">", ">="]), b)

    def int_comparison(self):
        k = self.pick([n for n, v in self.env.items() if v["shape"] == "int"])
        forms = [f"{k} % 2 == 0", f"{k} > 1", f"{k} == 0", f"{k} < n - 1" if k != "n" else "n >= 2",
                 f"{k} % 3 != 1"]
        arrays = self.arrays()
        if arrays:
            forms.append(f"{self.pick(arrays)}.shape[0] > 3")
        return ("int", self.pick(forms))

    def condition(self, nested=False):
        kind = self.pick(["real"] * 4 + ["int"] * 2 + ([] if nested else ["and", "or", "not"]))
        if kind == "real":
            return self.real_comparison()
        if kind == "int":
            return self.int_comparison()
        if kind == "not":
            return ("not", self.condition(True))
        return (kind, self.condition(True), self.condition(True))

    def readable_condition(self):
        for _ in range(8):
            cond = self.condition()
            if self.reads_ok(render(cond, False)):
                return cond
        return self.int_comparison()

    def token(self, cond):
        """A placeholder for ``cond`` in a line, rendered plainly or instrumented at the end."""
        token = f"__C{len(self.conds)}__"
        self.conds[token] = cond
        return token

    # ------------------------------------------------------------ statements

    def statement(self):
        kinds = ["plain"] * 4 + ["reassign", "ternary"]
        if self.frames:
            kinds += ["carried"] * 3
        if self.depth < MAX_DEPTH:
            kinds += ["if"] * 2
            if len(self.frames) < MAX_LOOP_DEPTH:
                kinds += ["for"] * 2 + ["while"]
            if not self.frames:
                kinds += ["early_return"]
        kind = self.pick(kinds)
        if kind in ("if", "for", "while", "early_return") and self.draw(st.integers(0, self.depth)) > 0:
            kind = "plain"  # fewer blocks deeper down
        if kind == "plain":  # Gen's statements, undone if one breaks a rule here
            for _ in range(4):
                snap = self.snapshot()
                super().statement()
                if self.valid_after(snap):
                    return
                self.restore(snap)
            kind = "reassign"
        getattr(self, f"s_{kind}")()

    def choose_target(self, shape, bound):
        """A name for a value of ``shape`` and ``bound``: an existing one that may be
        reassigned here, or a fresh one; and whether to squash the value."""
        if not self.depth:
            return self.target(), False
        names = [n for n in self.floats() if self.writable(n) and _same_shape(self.env[n]["shape"], shape)
                 and not (self.no_dead_code() and n in self.unread)]
        if names and self.draw(st.booleans()):
            name = self.pick(names)
            return name, self.capped(name) and bound > self.bound(name)
        return self.fresh_name(), False

    def s_reassign(self):
        expr, bound, fresh, views = self.expression()
        shape = _shape_of(expr, self.env)
        name, squash = self.choose_target(shape, bound)
        if squash:
            expr, bound = f"np.tanh({expr})", 1.0
        self.mark_views(views)
        self.line(f"{name} = {expr}")
        self.define(name, shape, bound, fresh)

    def s_ternary(self):
        cond = self.readable_condition()
        a, ba, _, views = self.expression()
        shape = _shape_of(a, self.env)
        others = [n for n in self.floats() if self.env[n]["shape"] == shape and n != a]
        if others and self.draw(st.booleans()):
            b = self.pick(others)
            bb = self.bound(b)
        elif _scalar(shape):
            b = self.pick(["0.5", "-1.0"])
            bb = abs(float(b))
        else:
            b, bb = f"-({a})", ba
        if not self.reads_ok(f"{a} {b} {render(cond, False)}"):
            return self.s_reassign()
        name, squash = self.choose_target(shape, max(ba, bb))
        if squash:
            a, b = f"np.tanh({a})", f"np.tanh({b})"
        self.mark_views(views)
        self.note_reads(render(cond, False))
        self.line(f"{name} = {a} if {self.token(cond)} else {b}")
        self.define(name, shape, 1.0 if squash else max(ba, bb))
        if _shape_of(b, self.env) != shape:  # e.g. a numpy scalar or a Python float
            self.env[name]["mixed"] = True

    def s_carried(self):
        """Update a name the innermost loop carries."""
        names = sorted(n for n in self.frames[-1]["carried"] if self.writable(n))
        if not names:
            return self.s_reassign()
        self.update_carried(self.pick(names))

    def update_carried(self, c):
        """``c`` moves towards a new value without leaving its bound (at least 1)."""
        shape, cap = self.env[c]["shape"], self.bound(c)
        for _ in range(4):
            expr, bound, _, views = self.expression()
            es = _shape_of(expr, self.env)
            if _broadcast_ok(es, shape):
                break
        else:
            expr, bound, views, es = f"np.cos({c})", 1.0, (), shape
        self.mark_views(views)
        form = self.draw(st.integers(0, 3))
        if form == 0 and _same_shape(es, shape) and not (self.no_dead_code() and c in self.unread):
            rhs = expr if bound <= cap else f"np.tanh({expr})"
            text = f"{c} = {rhs}"
        elif form == 1:
            rhs = f"{c} * np.cos({expr})"
            text = f"{c} = {rhs}"
        elif form == 2 and shape == "f" and _scalar(es):
            rhs = f"{c} + 0.5 * (np.tanh({expr}) - {c})"
            text = f"{c} += 0.5 * (np.tanh({expr}) - {c})"
        else:
            rhs = f"0.5 * {c} + 0.5 * np.tanh({expr})"
            text = f"{c} = {rhs}"
        self.line(text)
        new = _shape_of(rhs, self.env)
        self.env[c]["mixed"] = self.env[c].get("mixed", False) or new != shape
        self.env[c]["shape"] = _join_shape(shape, new)
        self.env[c]["fresh"] = False

    def block(self, lo=1, hi=3):
        """The statements of one branch; the names as they are at its end."""
        before = set(self.env)
        self.depth += 1
        for _ in range(self.draw(st.integers(lo, hi))):
            self.statement()
        self.read_new_values(before)
        self.depth -= 1
        return copy.deepcopy(self.env)

    def read_new_values(self, before):
        """In a loop, without dead code: fold the values this block computed and
        nothing read into a carried name."""
        if not self.no_dead_code():
            return
        dead = sorted(n for n in self.unread if n in self.env and n not in before and self.env[n]["shape"] != "int")
        if not dead:
            return
        c = self.pick(sorted(n for n in self.frames[-1]["carried"] if self.writable(n)))
        total = " + ".join(f"np.sum({n})" for n in dead)
        self.line(f"{c} = 0.5 * {c} + 0.5 * np.tanh({total})")
        new = _shape_of(f"{c} + 0.5", self.env)
        self.env[c]["mixed"] = self.env[c].get("mixed", False) or new != self.env[c]["shape"]
        self.env[c]["shape"] = _join_shape(self.env[c]["shape"], new)
        self.env[c]["fresh"] = False

    def merge(self, before, outs):
        """The names after a join of ``outs`` (new names are forgotten)."""
        env = {}
        for name, old in before.items():
            entry = dict(old)
            for out in outs:
                v = out[name]
                assert _same_shape(v["shape"], old["shape"]), (name, v, old)
                entry["mixed"] = entry.get("mixed", False) or v.get("mixed", False) or entry["shape"] != v["shape"]
                entry["shape"] = _join_shape(entry["shape"], v["shape"])
                entry["bound"] = max(entry["bound"], v["bound"])
                entry["fresh"] = entry["fresh"] and v["fresh"]
            env[name] = entry
        self.unread &= set(env)
        return env

    def next_branch(self, before):
        """Start the next branch from the names before the ``if``.  astad refuses
        ``a += ...`` after a view of ``a`` taken in an earlier branch too."""
        for name, entry in before.items():
            entry["fresh"] = entry["fresh"] and self.env[name]["fresh"]
        self.env = copy.deepcopy(before)

    def s_if(self):
        cond = self.readable_condition()
        self.header(f"if {self.token(cond)}:", render(cond, False))
        before = copy.deepcopy(self.env)
        outs = [self.block()]
        while self.draw(st.integers(0, 2)) == 0:
            self.next_branch(before)
            cond = self.readable_condition()
            self.header(f"elif {self.token(cond)}:", render(cond, False))
            outs.append(self.block())
        self.next_branch(before)
        if self.draw(st.booleans()):
            self.header("else:")
            outs.append(self.block())
        else:
            outs.append(before)
        self.env = self.merge(before, outs)

    def s_early_return(self):
        """``if c: ...; return r`` (an ``elif`` may return too; an ``else`` continues)."""
        self.early_return = True
        before = copy.deepcopy(self.env)
        for opener in ["if"] + (["elif"] if self.draw(st.integers(0, 2)) == 0 else []):
            self.next_branch(before)
            cond = self.readable_condition()
            self.header(f"{opener} {self.token(cond)}:", render(cond, False))
            self.block(0, 2)
            self.depth += 1
            self.lines.append("    " * self.depth + f"return {self.scalar_return()}")
            self.depth -= 1
        self.next_branch(before)
        if self.draw(st.booleans()):  # the rest of the function continues this branch: its names stay
            self.header("else:")
            self.depth += 1
            for _ in range(self.draw(st.integers(1, 2))):
                self.statement()
            self.depth -= 1

    def scalar_return(self):
        a = self.pick(self.floats())
        forms = (["{0} * {0}", "np.tanh({0})", "{0} - 1.0"] if _scalar(self.env[a]["shape"]) else
                 ["np.sum({0} * {0})", "np.sum(np.tanh({0}))", "np.mean({0}) * 2.0"])
        self.unread.discard(a)
        return self.pick(forms).format(a)

    # ------------------------------------------------------------ loops

    def start_loop(self, index, index_max, trips):
        """Before a loop: maybe an accumulator; what the loop carries; its frame."""
        candidates = sorted(n for n in super().floats() if self.writable(n))
        if not candidates:  # something for the loop to carry besides an accumulator
            name = self.fresh_name()
            self.line(f"{name} = 0.0")
            self.define(name, "f", 1.0)
            candidates = [name]
        acc = None
        if self.draw(st.booleans()):
            shape = self.pick(sorted({self.env[n]["shape"] for n in self.floats()}, key=str))
            like = self.pick([n for n in self.floats() if self.env[n]["shape"] == shape])
            acc = self.fresh_name()
            if shape == "f" or self.draw(st.integers(0, 2)) == 0:
                self.line(f"{acc} = 0.0")
                self.define(acc, "f", trips + 1.0)
            else:
                self.line(f"{acc} = " + self.pick([f"np.zeros_like({like})", f"{like} * 0.0"]))
                self.define(acc, shape, trips + 1.0, fresh=True)
        carried = set(self.draw(st.lists(st.sampled_from(candidates), min_size=1, max_size=2, unique=True)))
        for n in carried | ({acc} if acc else set()):
            self.env[n]["bound"] = max(self.bound(n), 1.0)
            self.env[n]["mixed"] = self.env[n].get("mixed", False) or _scalar(self.env[n]["shape"])
        for n in self.env:
            if n != acc:
                self.env[n]["fresh"] = False
        frame = {"outer": set(self.env), "carried": carried | ({acc} if acc else set()), "reads": Counter(),
                 "updated": set(), "index": index, "acc": acc}
        if acc:
            self.accumulators.add(acc)
        if index is not None:
            self.env[index] = {"shape": "int", "value": index_max, "bound": float(index_max), "fresh": False}
        return frame

    def loop_body(self, frame, tail=None):
        before = copy.deepcopy({n: self.env[n] for n in frame["outer"]})
        self.frames.append(frame)
        self.depth += 1
        self.n_loops += 1
        for _ in range(self.draw(st.integers(1, 3))):
            self.statement()
        self.read_new_values(set(before))
        for c in sorted(frame["carried"] - frame["updated"] - {frame["acc"]}):  # so astad carries it too
            self.update_carried(c)
        if frame["acc"]:
            self.accumulate(frame["acc"])
        if tail:
            self.lines.append("    " * self.depth + tail)
        self.depth -= 1
        self.frames.pop()
        self.accumulators.discard(frame["acc"])
        self.env = self.merge(before, [self.env])

    def accumulate(self, acc):
        shape = self.env[acc]["shape"]
        for _ in range(4):
            expr, bound, _, views = self.expression()
            if _broadcast_ok(_shape_of(expr, self.env), shape):
                break
        else:
            expr, bound, views = f"np.cos({acc})", 1.0, ()
        self.mark_views(views)
        if bound > 1.0:
            expr = f"np.tanh({expr})"
        if self.env[acc]["fresh"] or (shape == "f" and self.draw(st.booleans())):
            self.line(f"{acc} += {expr}")
        else:
            self.line(f"{acc} = {acc} + {expr}")
        self.env[acc]["fresh"] = False if shape == "f" else self.env[acc]["fresh"]

    def s_for(self):
        index = "ijl"[len(self.frames)]
        n = self.env["n"]["value"]
        forms = ["range(n)", "range(2, n + 3)", "range(n - 1, -1, -1)", "range(0, n + 2, 2)", "range(3)",
                 "range(1, 3)"]
        arrays = [a for a in super().floats() if _nd(self.env[a]["shape"]) >= 1]
        if arrays:
            a = self.pick(arrays)
            forms += [f"range(len({a}))", f"range({a}.shape[0])"]
        names = {"n": n, "range": range, "len": len, **{a: np.empty(self.env[a]["shape"]) for a in arrays}}
        if self.frames and not ZERO_TRIP_NESTED_LOOPS:
            forms = [f for f in forms if len(eval(f, names))]  # noqa: S307 - our own text
        text = self.pick(forms)
        r = eval(text, names)  # noqa: S307
        frame = self.start_loop(index, max(r, default=0), len(r))
        self.header(f"for {index} in {text}:")
        self.loop_body(frame)
        self.env.pop(index, None)  # merged away already

    def s_while(self):
        """``k = 0; while k < limit [and c]: ...; k += 1``: at most ``limit`` trips."""
        n = self.env["n"]["value"]
        limits = [("n", n), ("n + 1", n + 1), ("3", 3)]
        nested = self.frames and not ZERO_TRIP_NESTED_LOOPS
        limit, trips = self.pick([(a, b) for a, b in limits if b > 0 or not nested])
        self.counter += 1
        k = f"k{self.counter}"
        self.lines.append("    " * self.depth + f"{k} = 0")
        self.env[k] = {"shape": "int", "value": max(trips - 1, 0), "bound": float(trips), "fresh": False}
        frame = self.start_loop(None, 0, trips)
        test = ("int", f"{k} < {limit}")
        if not nested and self.draw(st.booleans()):  # (nested: a condition might stop it at once)
            self.frames.append(frame)  # the condition is evaluated in the body too
            cond = self.readable_condition()
            self.frames.pop()
            test = ("and", test, cond) if self.draw(st.booleans()) else ("and", cond, test)
        self.note_reads(render(test, False), self.frames + [frame])
        self.lines.append("    " * self.depth + f"while {self.token(test)}:")
        self.loop_body(frame, tail=self.pick([f"{k} = {k} + 1", f"{k} += 1"]))
        self.env[k]["value"] = trips

    # ------------------------------------------------------------ return

    def ret(self):
        return self.scalar_return() if self.early_return else super().ret()


def _broadcast_ok(es, shape):
    try:
        return np.broadcast_shapes(_bshape(es), _bshape(shape)) == _bshape(shape)
    except ValueError:
        return False


@st.composite
def programs(draw):
    g = ControlFlowGen(draw)
    dynamic = draw(st.booleans())
    for i in range(draw(st.integers(1, 3))):
        shape = draw(st.sampled_from(PARAM_SHAPES))
        name = "xyz"[i]
        g.params.append((name, shape))
        g.define(name, shape, INPUT_BOUND)
        g.unread.add(name)
    n = draw(st.integers(0, 4))
    g.params.append(("n", n))
    g.env["n"] = {"shape": "int", "value": n, "bound": float(n), "fresh": False}
    for _ in range(draw(st.integers(1, 4))):
        g.statement()
    if not g.n_loops:
        g.pick([g.s_for, g.s_while])()
        if draw(st.booleans()):
            g.statement()
    value = g.ret()
    lines = g.lines + [f"return {value}"]
    signature = "def f(" + ", ".join(p for p, _ in g.params) + "):\n"

    def source(instrumented):
        body = []
        for ln in lines:
            for token, cond in g.conds.items():
                ln = ln.replace(token, render(cond, instrumented))
            body.append("    " + (_instrument_calls(ln) if instrumented else ln))
        return ("import numpy as np\n" + HELPERS + (MARGIN_HELPERS if instrumented else "") + "\n\n" + signature
                + "\n".join(body) + "\n")

    return source(False), source(True), g.params, dynamic, draw(st.integers(0, 2 ** 32 - 1))


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("random_control_flow")


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
@given(programs())
def test_random_control_flow(program_dir, program):
    source, instrumented, params, dynamic, seed = program
    note(source)
    args = _arguments(params, seed)
    if dynamic:
        args[-1] = np.int64(args[-1])  # n unknown when transformed: dynamic trip counts and conditions
    note(f"args = {args!r}")

    margins = load_program(instrumented, program_dir, "margins")
    want = margins.f(*args)
    assume(min(margins._MARGINS, default=math.inf) > MARGIN)  # no comparison near its boundary
    fn = load_program(source, program_dir, "control_flow").f
    _assert_equal(fn(*args), want, "instrumented program")

    check_grad(fn, args, seed=seed % 1000)  # (a)
    check_stages(fn, args, seed)  # (b)
