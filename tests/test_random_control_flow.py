"""Random programs with control flow over the supported subset, written to .py
files and imported: ``if``/``elif``/``else`` (joins, early returns, loops
inside branches), conditional expressions, ``and``/``or``/``not``, chained
comparisons, ``for i in range(...)`` (bounds from an int parameter ``n``, from
shapes or constants, negative and stepped ranges, nested loops, branches inside
loops) and ``while`` loops with a bounded trip count; loops carry floats and
arrays (contractions and accumulators, kept bounded with ``np.tanh``) and read
``x[i % len(x)]`` and, where the index stays in bounds, ``x[i]`` (forward mode may
then iterate over the rows of ``x``).  The straight-line statements come from
``test_random_programs.Gen``.

Loops may leave early: ``if c: ... break`` / ``continue`` on a real or int
condition, in the body or in an ``if`` inside it (also ``if c: if d: break``,
with an ``else``), in ``for`` and ``while`` loops (a ``while`` counter then goes
up first thing in the body), in nested loops (leaving the inner one only).

Lists: literals ``acc = []`` / ``[a]`` / ``[a, b]`` (elements of one shape:
arrays, or numpy scalars), ``acc.append(e)`` in straight-line code, in a loop
as an accumulator (first thing in the body, at its end, or under an ``if``,
maybe with an ``else`` that appends too), read in the loop (``acc[-1]``,
``acc[i]`` where the index is valid on every iteration, ``acc[k % len(acc)]``)
and after it: ``len(acc)``, ``acc[k]`` (a constant or computed index valid for
the smallest length the list can have), ``np.stack`` / ``np.array`` /
``np.concatenate`` reduced along the list (``np.sum(np.stack(acc), axis=0)``,
``np.concatenate(acc)[:3]``, ...), or whole when the length is known; a list
that may be empty gets an element first (or is read under
``if len(acc) > 0:``, see LIST_READ_IN_BRANCH).  The generator tracks bounds on each
list's length through branches and loops (trip counts, ``break``).  Reads of
lists built at run time feed ``sink``, returned with the result (see
LIST_DEAD_USES).

For each program: (a) the pullback against central finite differences
(``conftest.check_grad``) and (b) every stage's IR, interpreted, against direct
execution and the generated code (``test_random_programs.check_stages``).

Finite differences are only right away from branch boundaries, so each program
is also written in an instrumented variant where every comparison on reals
(``if``/``while`` conditions, the conditions of ``break``/``continue``,
conditional expressions, ``np.where``, ``np.maximum``/``np.minimum``) records
its margin; a point where any margin evaluated is below ``MARGIN`` is rejected
(``assume``).  Conditions on ints (``n``, loop indices, counters, ``len(acc)``)
have no margin.  ``n`` is passed as a Python int (static: known when the
function is transformed, so trip counts and conditions on it are constants) or
as ``np.int64`` (dynamic).

Constructs astad gets wrong are left out by the switches below (each with a
reproducer), not skipped or marked xfail.

Loops over arrays and lists (``for a in x``, ``enumerate``, ``zip``, ``enumerate(zip(...))``),
``while`` loops with a data-dependent condition, and in-place updates (``y[i] += ...``, views,
``append``) in loop bodies: tests/test_random_loop_forms.py (an oracle that allows refusals).
"""

import copy
import math
import re
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

from conftest import check_grad, fuzz_examples, load_program
from forward_oracle import check_forward
from test_random_programs import (HELPERS, INPUT_BOUND, LIMIT, Gen, _arguments, _assert_equal, _bshape, _nd,
                                  _shape_of, check_stages, lookalike_names, renamed)

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
# Up to 2770329 (fixed in 1fda0df) it still failed with the value defined in
# an outer loop and read only by dead code in an inner one, when its
# derivative has a factor:
# the backward pass multiplies the (zero) cotangent by the factor, which the
# forward pass no longer computes (NameError in the generated backward code):
#     def f(x):
#         s = 0.0
#         for i in range(2):
#             v = x[i] * (i + 1.0) if x[0] > 0.3 else 0.5
#             for j in range(2):
#                 s = s + np.sum(x)
#                 w = v + x  # dead
#         return s
#     f(np.array([0.975, 0.902, 1.441, -0.972]))  # pullback: name 't19' is not defined
# False: loop bodies have no dead code: a value computed in a block
# inside a loop is read before the block ends (by an update of a carried name
# if nothing else), and no name is overwritten there before it is read.
DEAD_CODE_IN_LOOPS = True

# `acc = acc + [e]` for `acc.append(e)` (a quarter of the appends), in straight-line code, branches
# and loops with `break`/`continue`: a new list, the same elements.
# Fixed by list concatenation in the frontend; was: refused ("a list is used where a number or an
# array is expected"), though astad's refusals of `acc.append(e)` suggest it.
LIST_CONCATENATION = True

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

# (fixed in ffea03e; the switch stays as a regression check) astad bug up to
# 2770329: in a `while` loop with `break` or `continue`, the condition for
# the next iteration is evaluated on the values the names had before the `if`
# that holds the `break`/`continue`: what the body assigns after that `if` (or
# in its block, before `continue`) is not seen, so the loop runs too often
# (value and gradient wrong):
#     def f(x):
#         s = 0.0
#         k = 0
#         while k < 3:
#             if x > 0.0:
#                 break
#             s = s + 1.0
#             k += 1
#         return s * x
#     f(-1.0)  # astad: -4.0 (four trips), Python: -3.0
# (also `if x > 0.0: k = k + 1; continue` before `k = k + 1`: f(0.5) gives 2.0
# for x * k, not 1.5; and `while k < 4 and s < 2.0:` with `s` updated after
# the `if`.)
# False: a `while` loop with `break`/`continue` increments its counter first
# thing in the body and its condition is only `k < limit`.
WHILE_EXITS = True

# (fixed in bbef33f; the switch stays as a regression check) astad bug up to
# 2770329: an `if` inside a loop every branch of which goes on with the next
# iteration or leaves the loop without assigning anything (`if c: continue` as
# the last statement of the body; `if c: break` followed by `break`; `break` in
# both branches): the backward pass reads the condition, which the forward pass
# no longer computes (UnboundLocalError / NameError in the generated backward
# code):
#     def f(x, n):
#         s = 0.0
#         for i in range(n):
#             s = s + np.sum(x * x)
#             if s > 100.0:
#                 continue
#         return s
#     f(np.array([1.0, 0.5]), 3)  # pullback: cannot access local variable 't11'
# (also `if k == 1: (if x > 0.5: break) break` before `s = s + x` in a
# `for k in range(3)` loop, f(1.0).)
# False: the block of `if c: ... break` holds no other `break`/`continue` of
# the same loop, and a body with `continue` ends with an update of a name
# the loop carries.
EXIT_ON_EVERY_PATH = True

# (fixed in 064fe5b; the switch stays as a regression check) astad bug up to
# 2770329: a list built at run time (appended in a loop), or an array of
# run-time length made from it (`np.stack(acc)`, `np.concatenate(acc)[:3]`),
# read inside a branch that does not append to the list: the branch that does
# not read it needs a zero of its type, which codegen cannot make
# (InternalError: codegen: cannot materialise a zero of type list[float] /
# f64[?]).  A loop body with `break` or `continue` is such a branch too:
#     def f(x, n):
#         acc = []
#         for i in range(n):
#             acc.append(x * i)
#         t = 0.0
#         if x > 0.0:
#             t = acc[0]
#         return t
#     f(0.3, 3)
#
#     def f(x, y):
#         acc = []
#         for i in range(2):
#             acc.append(np.tanh(x * i))
#         v = np.concatenate(acc)[:3]
#         t = np.sum(v)
#         if y > 0.0:
#             t = t + np.sum(v * v)
#         return t
#     f(np.array([1.0, 0.5, 0.2]), 0.3)  # zero of type f64[?]
#
#     def f(x, n):
#         acc = [x]
#         for k in range(2):
#             acc.append(x * 2.0)
#         s = 0.0
#         for i in range(n):
#             s = s + np.sum(np.stack(acc))
#             if s > 100.0:
#                 break
#         return s
#     f(np.array([1.0, 0.5]), 3)
# The same error when such a list is appended to in a branch that returns
# (and not used otherwise):
#     def f(x):
#         acc = []
#         for i in range(3):
#             acc.append(x * i)
#         if x > 0.5:
#             acc.append(x)
#             return x
#         return x * 2.0
#     f(1.0)
# False: such a list is read only outside branches (not in the operands of
# `and`/`or`, nor in a loop with `break`/`continue` unless the loop appends to
# it); one that may be empty gets an element appended after its loop instead
# of a `len(acc) > 0` guard.  (Appends: LIST_APPEND_IN_BRANCH.)
LIST_READ_IN_BRANCH = True

# (fixed in 915878d and 98b1a60; the switch stays as a regression check) astad
# bug: a list built at run time used twice or
# more where no use gives it a cotangent: `len`, or a use whose result is dead
# (never reaches the output), an element or an `append`.  Its cotangent is
# then a sum of zeros, which codegen cannot make (InternalError: codegen:
# cannot materialise a zero of type list[float]):
#     def f(x):
#         acc = []
#         for i in range(3):
#             acc.append(x * i)
#         return x * len(acc) + len(acc)
#     f(0.5)
# (also `m = len(acc); w = acc[0]` or `m = len(acc); acc.append(y)` returning
# `y * m`.  Earlier any dead use after another use failed, in the interpreter
# of the "ad" stage (TypeError: 'NoneType' object is not iterable); that
# passes as of 2770329.)  These pass as of 915878d, but not a dead use in a
# branch (at 1fda0df):
#     def f(x):
#         acc = []
#         for i in range(2):
#             acc.append(x * 2.0)
#         v = acc[0]
#         if x[1] > 0.0:
#             if x[2] > 0.0:
#                 x = x * 0.5
#             if x[0] > 5.0:
#                 w = 1.0
#             else:
#                 v = v * 0.5  # dead
#         return x
#     f(np.array([-0.03, 0.8, 0.11]))  # cannot materialise a zero of type list[f64[3]]
# (a list literal indexed by a loop index, `acc[i]`, is one built at run time
# too.)
# False: every read of a list feeds `sink`, which is returned with the
# result, and is not `len` alone (`acc[len(acc) - 1]` is fine); conditions do
# not read lists; and one built at run time and read outside the loop that
# builds it is not appended to again, except just before another read.
LIST_DEAD_USES = True

# (fixed in 915878d and 1fda0df; the switch stays as a regression check) astad
# bug up to 2770329: an element of a list known element by element (a literal, or
# appended before the list goes through a loop) that is not a name but an
# expression.  Its value is computed where the element is first used, which
# may be inside a branch, so the forward code fails on the other path
# (UnboundLocalError), or transforming does:
#     def f(x):
#         acc = [x ** 2]
#         if x > 0.0:
#             s = 1.0
#         else:
#             for i in range(2):
#                 x = 0.5 * x
#             s = 2.0
#         return acc[0] * s
#     f(0.5)  # the forward code computes x ** 2 only in the `else` branch
#
#     def f(x, y):
#         acc = [x * 2.0]  # or acc = []; acc.append(x * 2.0)
#         if y < 0.0:
#             y = 1.0
#         elif acc[0] > 0.0:
#             return x
#         for k in range(2):
#             x = x * 0.7
#         return x
#     f(0.5, 0.2)  # pullback: cannot access local variable 't1'
#
#     def f(x, y):
#         acc = [y * 2.0]
#         a = acc[0]
#         b = acc[0] * 1.0
#         return x * (a + b)
#     f(0.5, 0.3)  # InternalError: structural pass: not linear in f: uses {}, unbound ['t1']
# False: such elements are names (`v = e; acc = [v, x]`, `acc.append(v)`).
LIST_ELEMENT_EXPRESSIONS = True

# (fixed in 98b1a60; the switch stays as a regression check) astad bug (at
# 1fda0df): a list built at run time appended to in a branch
# (an `if` block, or after `break`/`continue` in a loop body) where the result
# is never read: the backward pass makes the zero cotangent of the dropped
# list from the list itself, which the forward pass no longer computes
# (InternalError: codegen: cannot materialise a zero of type list[float], or
# NameError in the generated backward code):
#     def f(x):
#         acc = []
#         for j in range(2):
#             acc.append(x * j)
#         if x < 1.0:
#             acc.append(x)
#         else:
#             x = x * 3.0
#         return x
#     f(0.3)  # InternalError: codegen: cannot materialise a zero of type list[float]
#
#     def f(x):
#         s = x
#         for i in range(3):
#             acc = []
#             for j in range(2):
#                 acc.append(x * j)
#             if s > 1.0:
#                 break
#             acc.append(x)
#             s = s * 2.0
#         return s
#     f(0.3)  # pullback: name 'acc_5' is not defined
# False: a list built at run time is appended to in a branch only inside the
# loop that carries it (and a list carried by a loop appends only if the loop
# starts outside any branch the list was not made in).  (With LIST_DEAD_USES
# False too, what is appended is read later anyway: flip both to see it.)
LIST_APPEND_IN_BRANCH = True

# (fixed in 98b1a60; the switch stays as a regression check) astad bug
# (refused a program in the subset): `a += v` on an array after a
# nested early `return` (or `break`) in a branch, with a view of `a` taken
# after the `if`, is refused as if the view existed before the update
# (UnsupportedSyntaxError: `a += ...` changes the array in place, and a view of
# it (a slice, reshape or transpose) would change too):
#     def f(x, y):
#         v = np.tanh(x)
#         if y < 0.0:
#             y = 1.0
#         else:
#             if y > 0.5:
#                 return np.sum(x)
#             v += 0.25
#         return np.sum(v[0])
#     f(np.array([[0.5, -0.2], [0.1, 0.3]]), 0.3)
# (the same with `break` for `return` in a loop body.)
# False: arrays that exist when a `return`, `break` or `continue` is generated
# are not updated in place after it.
UPDATE_AFTER_EXIT = True

# (fixed; the switch stays as a regression check) astad bug up to b7a652f: a `while` loop whose condition
# holds when the loop starts, known when transforming (`k = 0; while k < 10:`), with a `return`
# inside, was taken for `while True:` (left only by its `return`): the `return` after the loop was
# lost, and a call that ran the loop to its end returned the placeholder 0.0 (value and derivatives):
#     def f(x):
#         k = 0
#         while k < 10:
#             x = x * 1.1 + 0.1
#             if x > 3.0:
#                 return x * x
#             k += 1
#         return x
#     f(0.5)  # astad: 0.0, Python: 2.89
# False: loops are left by `break` and `continue` only, not by `return`.
RETURN_IN_LOOPS = True

# Not generated (refused with an AstadError): appending to a list known element
# by element (not yet carried through a loop) in only some branches ("`acc` is
# a tuple in one branch and not in the other"); list elements of two types (a
# Python float and a numpy scalar: "the elements of a list that is built in a
# loop must have one type"), so scalar elements are always `np.sum(...)`;
# reading an empty list before any `append` to it in the source, even under
# `if len(acc) > 0:` ("concatenate_list: reading an element of a list nothing
# has been appended to"); an array of run-time length (`np.concatenate(acc)[-2:]`
# or `np.stack(acc)` of a list built at run time, even when the generator knows
# the length) where astad needs a known shape: joined with one of known shape in
# an `if` or `a if c else b` ("the same shape and dtype in both branches"),
# appended to a list of arrays of known shape ("append: appending f64[?,1] to a
# list of f64[3,1]"), so such arrays only feed `sink`.

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
      astad refuses them), and so is a loop index;
    - ``break``/``continue`` end an ``if`` block inside a loop; what that block
      assigned is joined into the names after the ``if`` and after the loop;
      a ``while`` loop's counter is incremented before any ``continue``;
    - lists (``self.lists``, apart from ``env``) hold elements of one shape
      (scalars always as ``np.sum(...)``), are appended to only in the loop
      level they were made at or in a loop directly inside it, and track
      bounds ``lo``/``hi`` on their length at the current point: an index,
      ``np.stack`` and the like need ``lo >= 1``, a whole-list array of known
      shape ``lo == hi``."""

    def __init__(self, draw):
        super().__init__(draw)
        self.depth = 0
        self.frames: list[dict] = []
        self.accumulators: set[str] = set()
        self.conds: dict[str, tuple] = {}
        self.early_return = False
        self.n_loops = 0
        self.lists: dict[str, dict] = {}
        # the branches around this point, as astad sees them: "plain" (a block of an `if`, an operand of
        # `and`/`or`), "return" (a block that returns, and the rest of the function after it), "leave" (the
        # body of a loop with `break`/`continue`, and what follows one in the body: the loop joins the lists
        # it carries)
        self.levels: list[dict] = []
        self.counts = Counter()  # constructs generated, for the statistics in `note`
        self.sink_used = False  # `sink`: what reads of run-time lists feed (LIST_DEAD_USES)

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
        *lhs, rhs = (aug.group(1), text) if aug else text.split(" = ")  # (`a = b = value`: two targets)
        self.count_reads(rhs)
        for f in self.frames:
            f["updated"].update(re.findall(r"\w+", " ".join(lhs)))
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

    def stmt(self, text, reads=""):
        """A line that is not an assignment (``acc.append(e)``); ``reads``: what it reads."""
        self.note_reads(reads)
        self.lines.append("    " * self.depth + text)

    # ------------------------------------------------------------ lists

    @property
    def branches(self):
        return len(self.levels)

    def enter(self, kind="plain", frame=None):
        level = {"kind": kind, "frame": frame}
        self.levels.append(level)
        return level

    def exit_level(self, level):
        del self.levels[next(i for i, e in enumerate(self.levels) if e is level)]

    def list_state(self):
        return {n: (v["lo"], v["hi"]) for n, v in self.lists.items()}

    def set_list_state(self, state):
        for n, (lo, hi) in state.items():
            if n in self.lists:
                self.lists[n]["lo"], self.lists[n]["hi"] = lo, hi

    def join_list_states(self, states):
        """After a join: a length bound that holds on every path."""
        for n, v in self.lists.items():
            got = [s[n] for s in states if n in s]
            if got:
                v["lo"], v["hi"] = min(lo for lo, _ in got), max(hi for _, hi in got)

    def forget_lists(self):
        for n in [n for n, v in self.lists.items() if v["depth"] > self.depth]:
            del self.lists[n]

    def runtime(self, name):
        """Is list ``name`` a run-time list for astad (carried by a loop, now or before)?"""
        return self.lists[name]["var"] or any(name in f["lists"] for f in self.frames)

    def list_readable(self, name, condition=False):
        v = self.lists[name]
        if condition and not LIST_DEAD_USES:
            return False
        if not self.runtime(name):
            return True
        return LIST_READ_IN_BRANCH or all(e["kind"] == "leave" and e["frame"]["acc_list"] == name
                                          for e in self.levels[v["branches"]:])

    def readable_lists(self, min_len=0, condition=False):
        return sorted(n for n, v in self.lists.items() if v["lo"] >= min_len and self.list_readable(n, condition))

    def mark_read(self, name):
        v = self.lists[name]
        v["used"] = True
        if self.runtime(name) and not (self.frames and name in self.frames[-1]["lists"]):
            v["read"] = True  # outside the loop that builds it

    def appendable(self, before_read=False):
        """Lists made at this loop level, or just outside the innermost loop.  astad
        refuses a list known element by element (not carried by a loop yet) that
        is appended to in only some branches.  ``before_read``: a read follows."""
        out = []
        for n, v in self.lists.items():
            var = v["var"] and LIST_APPEND_IN_BRANCH
            if v["fdepth"] == len(self.frames):
                ok = (var or self.branches == v["branches"]) and (before_read or LIST_DEAD_USES or not v["read"])
            elif v["fdepth"] == len(self.frames) - 1 and n in self.frames[-1]["lists"]:
                ok = var or self.frames[-1]["branches"] == v["branches"]
            else:
                ok = False
            if ok:
                out.append(n)
        return sorted(out)

    def list_shape(self, text):
        """The shape of ``text``, which may read lists (stand-ins: arrays with one row per element)."""
        env = dict(self.env)
        for n, v in self.lists.items():  # (long enough for any index, unless the length is known)
            env[n] = {"shape": (v["lo"] if v["lo"] == v["hi"] and v["lo"] else max(v["lo"], 1) + 64, *v["elem"])}
        return _shape_of(text, env)

    def element(self, elem, cap=LIMIT, named=False):
        """An expression of shape ``elem`` to put in a list (a numpy scalar, ``np.sum(...)``,
        for ``()``), and its bound, at most ``max(cap, 1)``; ``named``: a name (given
        the value first if need be)."""
        names = [n for n in self.floats() if self.env[n]["shape"] == elem and not _scalar(elem)]
        if names and self.draw(st.integers(0, 2)) == 0:
            expr = self.pick(names)
            bound = self.bound(expr)
            self.mark_views([expr])
        else:
            for _ in range(4):
                expr, bound, _, views = self.expression()
                es = _shape_of(expr, self.env)
                if _scalar(elem) or es == elem:
                    self.mark_views(views)
                    break
            else:
                a = self.pick(self.floats())
                expr, bound, es = f"np.ones({elem!r}) * np.tanh(np.sum({a}))", 1.0, elem
            if _scalar(elem) and not _scalar(es):
                expr = f"np.mean({expr})"
        if bound > max(cap, 1.0):
            expr, bound = f"np.tanh({expr})", 1.0
        if _scalar(elem):
            expr = f"np.sum({expr})"
        if named and not LIST_ELEMENT_EXPRESSIONS and expr not in self.env:
            t = self.fresh_name()
            self.line(f"{t} = {expr}")
            self.define(t, elem, bound)
            expr = t
        return expr, bound

    def new_list(self):
        """``acc = []``, ``[a]`` or ``[a, b]``, its elements all of one shape."""
        elem = self.pick(sorted({self.env[n]["shape"] for n in self.floats()}, key=str))
        elem = () if _scalar(elem) else elem
        items, bound = [], 1.0
        for _ in range(self.draw(st.integers(0, 2))):
            expr, b = self.element(elem, named=True)
            items.append(expr)
            bound = max(bound, b)
        self.counter += 1
        name = f"acc{self.counter}"
        self.line(f"{name} = [{', '.join(items)}]")
        self.lists[name] = {"elem": elem, "bound": bound, "lo": len(items), "hi": len(items), "var": False,
                            "fdepth": len(self.frames), "depth": self.depth, "branches": self.branches,
                            "used": False, "read": False, "seen": bool(items)}
        self.counts["list literal" if items else "empty list"] += 1
        return name

    def s_list_new(self):
        name = self.new_list()
        for _ in range(self.draw(st.integers(0, 2))):
            self.s_append(name)

    def s_append(self, name=None):
        name = name or self.pick(self.appendable())
        v = self.lists[name]
        expr, _ = self.element(v["elem"], v["bound"], named=not self.runtime(name))
        if LIST_CONCATENATION and self.draw(st.integers(0, 3)) == 0:  # the same list, made anew
            self.stmt(f"{name} = {name} + [{expr}]", expr)
            self.counts["list concatenation"] += 1
        else:
            self.stmt(f"{name}.append({expr})", expr)
        if v["fdepth"] == len(self.frames) and self.branches == v["branches"]:
            v["seen"] = True  # (astad types the elements of an empty list from an append on every path)
        v["lo"] += 1
        v["hi"] += 1
        if v["fdepth"] < len(self.frames):  # appended in the loop: counted for the length after it
            frame = self.frames[-1]
            frame["app_hi"][name] += 1
            if self.depth == frame["body_depth"] and not frame["exited"]:
                frame["app_lo"][name] += 1  # on every iteration
        self.counts["append in loop" if self.frames else "append"] += 1

    def s_cond_append(self, name):
        """``if c: acc.append(a)`` [``else: acc.append(b)``]."""
        cond = self.readable_condition()
        self.header(f"if {self.token(cond)}:", render(cond, False))
        lists = self.list_state()
        self.depth += 1
        level = self.enter()
        self.s_append(name)
        self.depth -= 1
        outs = [self.list_state()]
        self.set_list_state(lists)
        if self.draw(st.booleans()):
            self.header("else:")
            self.depth += 1
            self.s_append(name)
            self.depth -= 1
            outs.append(self.list_state())
        else:
            outs.append(lists)
        self.exit_level(level)
        self.set_list_state(lists)
        self.join_list_states(outs)
        self.counts["conditional append"] += 1

    def list_reads(self, name):
        """Reads of one element of list ``name``, valid here (it has an element)."""
        v = self.lists[name]
        lo = v["lo"]
        out = [f"{name}[-1]", f"{name}[0]", f"{name}[len({name}) - 1]", f"{name}[len({name}) // 2]",
               f"{name}[{self.draw(st.integers(-lo, lo - 1))}]"]
        ints = sorted(n for n, e in self.env.items() if e["shape"] == "int")
        out.append(f"{name}[{self.pick(ints)} % len({name})]")
        if self.frames and self.frames[-1]["range"] is not None:
            frame = self.frames[-1]
            base = frame["top_lists"].get(name)
            if base is None:  # the length is at least lo throughout
                ok = all(-lo <= i < lo for i in frame["range"])
            else:  # appended first thing in every iteration
                ok = all(-(base + t + 1) <= i < base + t + 1 for t, i in enumerate(frame["range"]))
            if ok:
                out += [f"{name}[{frame['index']}]"] * 4
        return out

    def list_value(self, name, index=False, sized=True):
        """A value computed from list ``name`` (at least one element here):
        ``(text, shape, bound, fresh, sized)``, ``sized``: an array whose length
        astad knows only at run time if the list is a run-time one."""
        v = self.lists[name]
        elem, b, lo, hi = v["elem"], v["bound"], v["lo"], v["hi"]
        size = int(np.prod(elem))
        forms = [(f"np.sum(np.stack({name}), axis=0)", b * hi, True, False),
                 (f"np.mean(np.stack({name}), axis=0)", b, True, False),
                 (f"np.sum(np.array({name}) * np.array({name}))", b * b * hi * size, True, False),
                 (f"np.stack({name}, axis=-1).sum(axis=-1)", b * hi, True, False),
                 (f"np.tanh(np.array({name})).sum(axis=0)", hi, True, False)]
        if elem:
            d0 = elem[0]
            forms += [(f"np.concatenate({name})[:{d0}]", b, False, True),
                      (f"np.concatenate({name})[-{d0}:]", b, False, True),
                      (f"np.sum(np.concatenate({name}), axis=0)", b * hi * d0, True, False),
                      (f"np.sum(np.concatenate({name}, axis=-1), axis=-1)", b * hi * elem[-1], True, False)]
        if lo == hi:  # the whole list as an array of known shape
            forms += [(f"np.stack({name})", b, True, True), (f"np.array({name})", b, True, True)] * 2
            if elem:
                forms += [(f"np.concatenate({name})", b, True, True), (f"np.stack({name}, axis=1)", b, True, True)]
        if not sized and self.runtime(name):  # (astad cannot join them with an array of known shape)
            forms = [f for f in forms if not f[3]]
        if index or self.draw(st.integers(0, 2)) == 0:
            forms = [(r, b, False, False) for r in self.list_reads(name)]
        text, bound, fresh, sized = self.pick(forms)
        for word in ("stack", "array", "concatenate"):
            if f"np.{word}({name}" in text:
                self.counts[f"np.{word}"] += 1
        if "[" in text.replace(f"np.concatenate({name})[", ""):
            self.counts["list index"] += 1
        return text, self.list_shape(text), bound, fresh, sized and self.runtime(name)

    def s_list_use(self, name=None, index=False):
        """Read a list: into a new name or a name the loop carries (and ``sink``);
        ``index``: one element."""
        name = name or self.pick(self.readable_lists())
        v = self.lists[name]
        if v["lo"] == 0:
            # (astad refuses to read a list before anything is appended to it in the source)
            if LIST_READ_IN_BRANCH and v["seen"] and self.draw(st.booleans()):
                return self.guarded_list_use(name)
            if name in self.appendable(before_read=True) and self.draw(st.integers(0, 3)) > 0:
                self.s_append(name)  # e.g. the last state, after the loop
        live = not LIST_DEAD_USES  # (also a list known element by element: an index not known
        # when transforming makes it a run-time list)
        len_ok = not live  # (`len` alone gives the list no cotangent)
        if v["lo"] == 0 and not len_ok:
            return self.s_reassign()  # (a statement all the same: it may be a block's only one)
        self.mark_read(name)
        if len_ok and (v["lo"] == 0 or (not index and self.draw(st.integers(0, 5)) == 0)):
            self.counts["len"] += 1
            t = self.fresh_name()
            self.line(f"{t} = len({name})")
            value = v["hi"] if math.isfinite(v["hi"]) else 1000
            self.env[t] = {"shape": "int", "value": value, "bound": float(value), "fresh": False}
            return
        self.use_value(*self.list_value(name, index), live=live)

    def feed_sink(self, text):
        self.line(f"sink = 0.5 * sink + 0.5 * np.tanh(np.sum({text}))")
        self.sink_used = True

    def guarded_list_use(self, name):
        """``t = e if len(acc) > 0 else 0`` or ``t = 0; if len(acc) > 0: t = e``."""
        v = self.lists[name]
        self.mark_read(name)
        v["lo"] = 1  # in the guarded branch
        text, shape, bound, fresh, _ = self.list_value(name, sized=False)
        v["lo"] = 0
        text, bound = self.squash(text, bound)
        zero = "0.0" if _scalar(shape) else f"np.zeros({shape!r})"
        t = self.fresh_name()
        if self.draw(st.booleans()):
            self.line(f"{t} = {text} if len({name}) > 0 else {zero}")
            self.define(t, shape, bound, fresh and not _scalar(shape))
            self.env[t]["mixed"] = _scalar(shape)
        else:
            self.line(f"{t} = {zero}")
            self.define(t, "f" if _scalar(shape) else shape, 0.0, not _scalar(shape))
            self.header(f"if len({name}) > 0:")
            before = copy.deepcopy(self.env)
            self.depth += 1
            self.line(f"{t} = {text}")
            self.define(t, shape, bound, fresh)
            self.depth -= 1
            self.env = self.merge(before, [self.env, before])
        if not LIST_DEAD_USES:
            self.feed_sink(t)
        self.counts["guarded list read"] += 1

    def use_value(self, text, shape, bound, fresh, sized=False, live=False):
        """Bind a value read from a list, or fold it into a carried name; ``live``:
        and feed it to ``sink``; ``sized`` (of run-time length): only that."""
        text, squashed = self.squash(text, bound)
        if squashed != bound:
            bound, fresh = squashed, True
        if (live and self.draw(st.integers(0, 2)) == 0) or sized:  # (see "Not generated")
            return self.feed_sink(text)
        names = [c for c in sorted(self.frames[-1]["carried"]) if self.writable(c)] if self.frames else []
        if names and not live and self.draw(st.booleans()):
            c = self.pick(names)
            cs = self.env[c]["shape"]
            inner = text if _broadcast_ok(shape, cs) else f"np.sum({text})" if _scalar(cs) else None
            if inner is not None:  # stays within c's bound (at least 1)
                rhs = f"0.5 * {c} + 0.5 * np.tanh({inner})"
                self.line(f"{c} = {rhs}")
                new = self.list_shape(rhs)
                self.env[c]["mixed"] = self.env[c].get("mixed", False) or new != cs
                self.env[c]["shape"] = _join_shape(cs, new)
                self.env[c]["fresh"] = False
                return
        t = self.fresh_name()
        self.line(f"{t} = {text}")
        self.define(t, shape, bound, fresh)
        if live:
            self.feed_sink(t)

    # ------------------------------------------------------------ break and continue

    def no_updates_in_place(self):
        if not UPDATE_AFTER_EXIT:
            for v in self.env.values():
                v["fresh"] = False

    def s_exit(self, nested=True):
        """``if c: [...] break`` / ``continue`` (maybe with an ``else``), or an
        ``if`` whose block holds one."""
        frame = self.frames[-1]
        self.no_updates_in_place()
        word = self.pick(["break", "continue"] if frame["continue_ok"] else ["break"])
        if RETURN_IN_LOOPS and self.draw(st.integers(0, 3 if frame["kind"] == "for" else 1)) == 0:
            word = "return"  # a scalar, as every `return` then (and the rest of the function is a branch)
            self.early_return = True
        at_body = self.depth == frame["body_depth"]
        if nested and self.draw(st.integers(0, 3)) == 0:
            return self.nested_exit()
        before, lists, level = self.open_if()
        frame["in_exit"] += 1
        for _ in range(self.draw(st.integers(0, 2)) if self.depth <= MAX_DEPTH else 0):
            self.statement()
        self.read_new_values(set(before))
        frame["in_exit"] -= 1
        self.lines.append("    " * self.depth + (word if word != "return" else
                                                  f"return {self.scalar_return()}{_SINK}"))
        frame["exits"].add(word)
        frame["exited"] = True
        frame["levels"].append(self.enter("leave", frame))  # for astad, the rest of the body is a branch
        frame["exit_envs"].append(copy.deepcopy(self.env))
        self.depth -= 1
        self.exit_level(level)
        self.forget_lists()
        outs = [copy.deepcopy(self.env)]  # does not go on after the `if`; joined anyway (conservative)
        self.next_branch(before)
        self.set_list_state(lists)
        if self.draw(st.integers(0, 2)) == 0:
            self.header("else:")
            outs.append(self.block())
        else:
            outs.append(before)
        self.env = self.merge(before, outs)
        self.counts[f"{word} in {frame['kind']}" + ("" if at_body else " (nested if)")] += 1

    def open_if(self):
        """``if c:`` on a readable condition, entered: the names and lists before it, and its level."""
        cond = self.readable_condition()
        self.header(f"if {self.token(cond)}:", render(cond, False))
        before = copy.deepcopy(self.env)
        lists = self.list_state()
        self.depth += 1
        return before, lists, self.enter()

    def exit_ok(self):
        frame = self.frames[-1]
        return frame["exits_ok"] and (EXIT_ON_EVERY_PATH or not frame["in_exit"])

    def nested_exit(self):
        """``if c: [...] if d: break [...]``."""
        before, lists, level = self.open_if()
        for _ in range(self.draw(st.integers(0, 1))):
            self.statement()
        self.s_exit(nested=False)
        for _ in range(self.draw(st.integers(0, 1))):
            self.statement()
        self.read_new_values(set(before))
        self.depth -= 1
        self.exit_level(level)
        self.forget_lists()
        outs, louts = [copy.deepcopy(self.env)], [self.list_state()]
        self.next_branch(before)
        self.env = self.merge(before, outs + [before])
        self.join_list_states(louts + [lists])

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
        values = self.frames[-1]["range"] or []
        if self.frames[-1]["kind"] == "for" and values and all(0 <= v < d0 for v in values):
            forms += [f"{a}[{index}]"] * 2  # a row (forward mode may read it by iterating over a: zipped_rows)
        form = self.pick(forms)
        if self.draw(st.booleans()):
            imax = self.env[index]["value"]
            return (*self.squash(f"{form} * ({index} + 1.0)", self.bound(a) * (imax + 1.0)), True, (a,))
        return form, self.bound(a), False, (a,)

    # ------------------------------------------------------------ conditions

    def scalar_term(self, lists=True):
        """A real scalar to compare: a scalar name, or a reduction or element of an
        array, or an element of a list."""
        names = self.readable_lists(1, condition=True) if lists else []
        if names and self.draw(st.integers(0, 3)) == 0:
            name = self.pick(names)
            self.mark_read(name)
            read = self.pick(self.list_reads(name))
            self.counts["list read in condition"] += 1
            return read if _scalar(self.lists[name]["elem"]) else f"np.sum({read})"
        a = self.pick(self.floats())
        shape = self.env[a]["shape"]
        if _scalar(shape):
            return a
        index = ", ".join("0" for _ in shape)
        return self.pick([f"np.sum({a})", f"np.mean({a})", f"{a}[{index}]", f"np.max({a})"])

    def real_comparison(self):
        kind = self.draw(st.integers(0, 5))
        if kind == 0:
            a = self.scalar_term(lists=False)
            lo, hi = self.pick([("-1.0", "0.2"), ("-0.5", "0.7"), ("0.0", "1.2"), ("-0.5", "0.5")])
            if self.draw(st.integers(0, 3)) == 0:  # Python evaluates `hi` only where `lo < a` holds: no
                self.counts["chain with a guarded bound"] += 1  # math domain error (astad's code raised one)
                hi = f"{lo} + 2.0 * math.sqrt({a} - {lo})"
            return ("chain", lo, a, hi)
        a = self.scalar_term()
        b = self.scalar_term() if kind >= 4 else None
        if b is None or b == a:
            b = self.pick(["0.0", "0.3", "-0.4", "1.0"])
        if self.draw(st.integers(0, 3)) == 0:  # `while np.abs(step) > tol`: abs(step) in the generated code
            self.counts["np.abs in condition"] += 1
            a = f"np.abs({a})"
        return ("cmp", a, self.pick(["<", "<=", ">", ">="]), b)

    def int_comparison(self):
        k = self.pick([n for n, v in self.env.items() if v["shape"] == "int"])
        forms = [f"{k} % 2 == 0", f"{k} > 1", f"{k} == 0", f"{k} < n - 1" if k != "n" else "n >= 2",
                 f"{k} % 3 != 1"]
        arrays = self.arrays()
        if arrays:
            forms.append(f"{self.pick(arrays)}.shape[0] > 3")
        lists = self.readable_lists(condition=True)
        if lists and self.draw(st.booleans()):
            name = self.pick(lists)
            self.mark_read(name)
            forms = [f"len({name}) > 1", f"len({name}) % 2 == 0"]
        return ("int", self.pick(forms))

    def condition(self, nested=False):
        kind = self.pick(["real"] * 4 + ["int"] * 2 + ([] if nested else ["and", "or", "not"]))
        if kind == "real":
            return self.real_comparison()
        if kind == "int":
            return self.int_comparison()
        level = self.enter()  # astad may evaluate an operand of `and`/`or` in a branch
        try:
            if kind == "not":
                return ("not", self.condition(True))
            return (kind, self.condition(True), self.condition(True))
        finally:
            self.exit_level(level)

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
        kinds = ["plain"] * 4 + ["reassign", "ternary", "list_new"]
        if self.frames:
            kinds += ["carried"] * 3
            if self.exit_ok():
                kinds += ["exit"] * 2
        if self.appendable():
            kinds += ["append"] * 2
        if self.readable_lists():
            kinds += ["list_use"] * 2
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
        self.mark_views([*views, b])  # (`b` may be a name: `name` is then another name of it)
        self.note_reads(render(cond, False))
        mixed = _shape_of(b, self.env) != shape  # e.g. a numpy scalar or a Python float
        self.line(f"{name} = {a} if {self.token(cond)} else {b}")
        self.define(name, shape, 1.0 if squash else max(ba, bb))  # (may change the shape of a name b reads)
        if mixed:
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
        level = self.enter()
        for _ in range(self.draw(st.integers(lo, hi))):
            self.statement()
        self.read_new_values(before)
        self.depth -= 1
        self.exit_level(level)
        self.forget_lists()
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
        lists = self.list_state()
        outs = [self.block()]
        louts = [self.list_state()]
        elifs = []
        while self.draw(st.integers(0, 2)) == 0:
            self.next_branch(before)
            self.set_list_state(lists)
            elifs.append(self.enter())  # an `elif` is inside the `else` of what comes before
            cond = self.readable_condition()
            self.header(f"elif {self.token(cond)}:", render(cond, False))
            outs.append(self.block())
            louts.append(self.list_state())
        self.next_branch(before)
        self.set_list_state(lists)
        if self.draw(st.booleans()):
            self.header("else:")
            outs.append(self.block())
            louts.append(self.list_state())
        else:
            outs.append(before)
            louts.append(lists)
        for level in elifs:
            self.exit_level(level)
        self.env = self.merge(before, outs)
        self.join_list_states(louts)

    def s_early_return(self):
        """``if c: ...; return r`` (an ``elif`` may return too; an ``else`` continues)."""
        self.early_return = True
        self.no_updates_in_place()
        before = copy.deepcopy(self.env)
        lists = self.list_state()
        for opener in ["if"] + (["elif"] if self.draw(st.integers(0, 2)) == 0 else []):
            self.next_branch(before)
            self.set_list_state(lists)
            if opener == "elif":
                self.enter()  # for good, as below
            cond = self.readable_condition()
            self.header(f"{opener} {self.token(cond)}:", render(cond, False))
            level = self.enter("return")
            self.block(0, 2)
            self.exit_level(level)
            self.depth += 1
            self.lines.append("    " * self.depth + f"return {self.scalar_return()}{_SINK}")
            self.depth -= 1
        self.next_branch(before)
        self.set_list_state(lists)
        self.enter("return")  # for astad the rest of the function is in a branch
        if self.draw(st.booleans()):  # the rest of the function continues this branch: its names stay
            self.header("else:")
            self.depth += 1
            for _ in range(self.draw(st.integers(1, 2))):
                self.statement()
            self.depth -= 1
            for v in self.lists.values():  # so do its lists
                v["depth"] = min(v["depth"], self.depth)

    def scalar_return(self):
        a = self.pick(self.floats())
        forms = (["{0} * {0}", "np.tanh({0})", "{0} - 1.0"] if _scalar(self.env[a]["shape"]) else
                 ["np.sum({0} * {0})", "np.sum(np.tanh({0}))", "np.mean({0}) * 2.0"])
        self.unread.discard(a)
        return self.pick(forms).format(a)

    # ------------------------------------------------------------ loops

    def start_loop(self, index, index_max, trips, kind="for", values=None):
        """Before a loop: maybe an accumulator and a list; what the loop carries; its
        frame.  ``trips``: how many times the body runs (at most, for ``while``);
        ``values``: the index's values."""
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
        acc_list = self.new_list() if self.draw(st.booleans()) else None
        carried = set(self.draw(st.lists(st.sampled_from(candidates), min_size=1, max_size=2, unique=True)))
        for n in carried | ({acc} if acc else set()):
            self.env[n]["bound"] = max(self.bound(n), 1.0)
            self.env[n]["mixed"] = self.env[n].get("mixed", False) or _scalar(self.env[n]["shape"])
        for n in self.env:
            if n != acc:
                self.env[n]["fresh"] = False
        frame = {"outer": set(self.env), "carried": carried | ({acc} if acc else set()), "reads": Counter(),
                 "updated": set(), "index": index, "acc": acc, "kind": kind, "range": values,
                 "trips": (trips, trips), "continue_ok": True, "exits": set(), "exited": False,
                 "exit_envs": [], "branches": self.branches, "acc_list": acc_list, "exits_ok": True, "in_exit": 0,
                 "levels": [],
                 # lists it may append to: (length bounds, carried by a loop before); appends per
                 # iteration: on every path (app_lo), at most (app_hi); lists appended first thing
                 "lists": {}, "app_lo": Counter(), "app_hi": Counter(), "top_lists": {}}
        for n, v in self.lists.items():
            if v["fdepth"] == len(self.frames) and (LIST_DEAD_USES or not v["read"]):
                frame["lists"][n] = (v["lo"], v["hi"], v["var"])
                v["hi"] = math.inf  # in the body
        if acc:
            self.accumulators.add(acc)
        if index is not None:
            self.env[index] = {"shape": "int", "value": index_max, "bound": float(index_max), "fresh": False}
        return frame

    def loop_body(self, frame, head=None, tail=None):
        before = copy.deepcopy({n: self.env[n] for n in frame["outer"]})
        self.frames.append(frame)
        self.depth += 1
        frame["body_depth"] = self.depth
        self.n_loops += 1
        frame["exits_ok"] = frame["exits_ok"] and self.draw(st.integers(0, 2)) > 0
        if frame["exits_ok"]:  # for astad the body is then in a branch, which carries the loop's list
            frame["levels"].append(self.enter("leave", frame))
        if head:
            self.lines.append("    " * self.depth + head)
        acc_list = frame["acc_list"]
        where = self.pick(["top", "end", "if"]) if acc_list else None
        if where == "top":  # first thing in the body: every iteration appends before any exit
            frame["top_lists"][acc_list] = self.lists[acc_list]["lo"]
            self.s_append(acc_list)
        if acc_list and acc_list in self.readable_lists(1) and self.draw(st.booleans()):
            self.s_list_use(acc_list, index=True)  # e.g. the last element, or acc[i]
        count = self.draw(st.integers(1, 3))
        exit_at = self.draw(st.integers(0, count)) if frame["exits_ok"] else -1
        for s in range(count):  # a `break`/`continue` before statement `exit_at`, if any
            if s == exit_at:
                self.s_exit()
            self.statement()
        if exit_at == count:
            self.s_exit()
        self.read_new_values(set(before))
        for c in sorted(frame["carried"] - frame["updated"] - {frame["acc"]}):  # so astad carries it too
            self.update_carried(c)
        if where == "end":
            self.s_append(acc_list)
        elif where == "if":
            self.s_cond_append(acc_list)
        if frame["acc"]:  # last: what reads it comes before an `acc += e` in place
            self.accumulate(frame["acc"])
        if "continue" in frame["exits"] and not EXIT_ON_EVERY_PATH:  # not `if c: continue` at the end
            self.update_carried(self.pick(sorted(c for c in frame["carried"] if self.writable(c))))
        if frame["exits_ok"]:
            for level in frame["levels"]:
                self.exit_level(level)
        if tail:
            self.lines.append("    " * self.depth + tail)
        self.depth -= 1
        self.forget_lists()
        self.frames.pop()
        if "return" in frame["exits"]:  # for astad the rest of the function (and of a loop around) is a branch
            self.enter("return")
            if self.frames:
                self.frames[-1]["exits"].add("return")
        self.accumulators.discard(frame["acc"])
        self.env = self.merge(before, [self.env] + frame["exit_envs"])
        self.end_lists(frame)
        if acc_list and acc_list in self.readable_lists() and self.draw(st.integers(0, 3)) > 0:
            self.s_list_use(acc_list)  # after the loop

    def end_lists(self, frame):
        """The lists' lengths after the loop."""
        low, high = frame["trips"]
        if {"break", "return"} & frame["exits"]:
            low = min(low, 1)
        for n, (lo, hi, var) in frame["lists"].items():
            if n in self.lists:
                v = self.lists[n]
                v["lo"] = lo + low * frame["app_lo"][n]
                v["hi"] = hi + high * frame["app_hi"][n]
                v["var"] = var or frame["app_hi"][n] > 0
                v["seen"] = v["seen"] or frame["app_hi"][n] > 0

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
        frame = self.start_loop(index, max(r, default=0), len(r), values=list(r))
        self.header(f"for {index} in {text}:")
        self.loop_body(frame)
        self.env.pop(index, None)  # merged away already

    def s_while(self):
        """``k = 0; while k < limit [and c]: ...; k += 1``: at most ``limit`` trips.  The
        counter goes up at the end of the body, or at its top (then ``continue`` may
        come later)."""
        n = self.env["n"]["value"]
        limits = [("n", n), ("n + 1", n + 1), ("3", 3)]
        nested = self.frames and not ZERO_TRIP_NESTED_LOOPS
        limit, trips = self.pick([(a, b) for a, b in limits if b > 0 or not nested])
        self.counter += 1
        k = f"k{self.counter}"
        self.lines.append("    " * self.depth + f"{k} = 0")
        top = self.draw(st.integers(0, 2)) > 0
        self.env[k] = {"shape": "int", "value": trips if top else max(trips - 1, 0), "bound": float(trips),
                       "fresh": False}
        frame = self.start_loop(None, 0, trips, kind="while")
        frame["continue_ok"] = top  # (else `continue` would skip the counter)
        frame["exits_ok"] = WHILE_EXITS or top
        test = ("int", f"{k} < {limit}")
        if not nested and (WHILE_EXITS or not top) and self.draw(st.booleans()):
            # (nested: a condition might stop it at once)
            self.frames.append(frame)  # the condition is evaluated in the body too
            level = self.enter()  # (an operand of `and`)
            cond = self.readable_condition()
            self.exit_level(level)
            self.frames.pop()
            test = ("and", test, cond) if self.draw(st.booleans()) else ("and", cond, test)
            frame["trips"] = (0, trips)
        self.note_reads(render(test, False), self.frames + [frame])
        self.lines.append("    " * self.depth + f"while {self.token(test)}:")
        step = self.pick([f"{k} = {k} + 1", f"{k} += 1"])
        self.loop_body(frame, head=step if top else None, tail=None if top else step)
        self.env[k]["value"] = trips

    # ------------------------------------------------------------ return

    def ret(self):
        for name in sorted(self.lists):  # lists not read yet feed the result
            if not self.lists[name]["used"] and name in self.readable_lists():
                self.s_list_use(name)
        return self.scalar_return() if self.early_return else super().ret()


_SINK = "__SINK__"  # in the `return`s: `, sink` if anything was fed to it


def _broadcast_ok(es, shape):
    try:
        return np.broadcast_shapes(_bshape(es), _bshape(shape)) == _bshape(shape)
    except ValueError:
        return False


@st.composite
def programs(draw, first=None, scalar=False):
    """(source, instrumented source, params, dynamic, seed).  ``first``: the shapes the first
    parameter may have (default: any of PARAM_SHAPES); ``scalar``: the program returns a real
    scalar (``sink`` added to it), for second derivatives."""
    g = ControlFlowGen(draw)
    dynamic = draw(st.booleans())
    for i in range(draw(st.integers(1, 3))):
        shape = draw(st.sampled_from(first if i == 0 and first else PARAM_SHAPES))
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
    if scalar:
        g.early_return = True  # (every return is then a scalar one)
    value = g.ret() if not scalar else " + ".join(g.ret() for _ in range(draw(st.integers(1, 3))))
    lines = g.lines + [f"return {value}{_SINK}"]
    sink = (" + sink" if scalar else ", sink") if g.sink_used else ""
    lines = (["sink = 0.0"] if g.sink_used else []) + [ln.replace(_SINK, sink) for ln in lines]
    note(", ".join(f"{k}: {v}" for k, v in sorted(g.counts.items())))
    signature = "def f(" + ", ".join(p for p, _ in g.params) + "):\n"

    def source(instrumented):
        body = []
        for ln in lines:
            for token, cond in g.conds.items():
                ln = ln.replace(token, render(cond, instrumented))
            body.append("    " + (_instrument_calls(ln) if instrumented else ln))
        return ("import math\nimport numpy as np\n" + HELPERS + (MARGIN_HELPERS if instrumented else "") + "\n\n"
                + signature + "\n".join(body) + "\n")

    renaming = lookalike_names(draw, source(False))
    return (renamed(source(False), renaming), renamed(source(True), renaming), g.params, dynamic,
            draw(st.integers(0, 2 ** 32 - 1)))


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("random_control_flow")


@settings(max_examples=fuzz_examples(10, long=40), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
@given(programs(), st.data())
def test_random_control_flow(program_dir, program, data):
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
    check_forward(fn, args, data)  # (c) J v vs central differences, <u, J v> == <J^T u, v>


def transformed_or_refused(program, directory, stem):
    """Load a drawn program into ``directory`` and make its reverse derivative at its arguments: True if made,
    False if astad refused it with its own error (an ``InternalError`` is raised)."""
    import astad

    source, _, params, dynamic, seed = program
    args = _arguments(params, seed)
    if dynamic:
        args[-1] = np.int64(args[-1])
    fn = load_program(source, directory, stem).f
    try:
        astad.reverse(fn).transform(*args)
    except astad.errors.InternalError:
        raise
    except astad.errors.AstadError:
        return False
    return True
