"""Random programs with the loop forms tests/test_random_control_flow.py does not draw: iteration
over arrays and lists (``for a in x``, ``for i, a in enumerate(x)``, ``for a, b in zip(x, z)``,
``for i, (a, b) in enumerate(zip(x, w))``, ``enumerate(x, 1)``, ``reversed(x)``, ``reversed(range(4))``,
over arguments, over a made array that the body updates, over a list argument of arrays and over a
list built at run time), ``while`` loops with a counter
and with a data-dependent (bounded) condition, ``break``/``continue``/``return`` under conditions,
nested loops, ``if``/``elif``/``else`` assigning different names in its branches, and in-place
updates in loop bodies: ``y[i] = ...``, ``y[i] += ...``, ``np.add.at(y, [i, j], ...)``, ``y += ...`` on arrays, on slices and
through views (``v = y[1:]; v[0] *= ...``), and ``append`` to lists (of floats, and of arrays the
body goes on updating in place).

The oracle is ``conftest.check_correct_or_refused`` (the value, the arguments left as plain Python
leaves them, the pullback against central finite differences in float64 and the IR interpreter at
every stage, or astad's own refusal) and forward mode (``forward_oracle.check_forward``: ``J v``
against central differences, ``<u, J v> == <J^T u, v>``).  Every comparison on reals is written
twice: plainly, and in an instrumented copy of the program that records its margin; a point where a
margin is below ``MARGIN`` is rejected (finite differences are only right away from branch
boundaries).  ``ASTAD_FUZZ_EXAMPLES=N`` (or ``pytest --fuzz-examples N``) runs N examples.

Found: a loop over an array (or a list) whose body updates it in place (``for i, a in enumerate(y):
y[(i + 1) % 4] += a``, ``for a in lst: lst.append(...)``) read the elements as they were when the
loop started (value and derivatives wrong); refused now (tests/test_iterated_in_place.py).  Lists'
elements assigned to (``lst[k] = ...``, ``lst[i % len(lst)] += ...`` on a list built at run time,
``pair[k] = ...``, ``grid[k][j] = ...``, ``rows[k][j] += ...`` on lists known element by element,
with an index known when transforming or a loop's).  Function values called (``acc = acc + op(...)``,
``op(u)``) and rebound (``op = lambda t: ...``, ``op = np.tanh``): in a loop, the rebinding was lost
(the next iteration and the code after the loop called the function bound before the loop: a wrong
value); refused now (tests/test_higher_adversarial_8.py).  Loops over a generator or ``map(...)`` (read
before each iteration: refused where the body rebinds what it reads).  Loops
with an ``else`` block (run where the loop ends without ``break``).  Drawn
rarely, as astad refuses them today: updates through views (``v = y[1:]; v[0] *= ...``, ``for row in Y: row += ...``); also
refused: ``break``/``continue``/``return`` in a loop over a list known element by element, reading a
list before any ``append`` to it in the source, a loop variable read after its loop.

Found: a list that holds itself (``pair.append(pair)``, ``xs[0] = xs``) then assigned to
(``pair[0] = ...``) was read through its element as it was before (``pair[2][0]``: a wrong value);
refused now (tests/test_list_item_assignment.py)."""

import copy
import os
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

from conftest import Refused, check_correct_or_refused, fuzz_examples, load_program, user_stack
from forward_oracle import check_forward

N = 4  # len(x), len(w), len(y); len(z) == 3; xs: three arrays of shape (2,)
MARGIN = 1e-3
# What astad refuses today is drawn rarely (`== 3`, `== 17`: hypothesis favours the smallest integers).
TALLY: Counter = Counter()

MARGIN_HELPERS = """

_MARGINS = []


def _m(a, b):
    d = a - b
    _MARGINS.append(float(np.min(np.abs(d))))
    return d
"""


def render(cond, instrumented):
    """A condition: ("cmp", a, op, b) on reals, ("int", text) on ints, ("and"|"or", l, r)."""
    kind = cond[0]
    if kind == "int":
        return cond[1]
    if kind == "cmp":
        _, a, op, b = cond
        return f"_m({a}, {b}) {op} 0.0" if instrumented else f"{a} {op} {b}"
    return f"({render(cond[1], instrumented)}) {kind} ({render(cond[2], instrumented)})"


class Loop:
    def __init__(self, index, valid, floats, arrays, kind):
        self.index = index  # the int name of the iteration (or None)
        self.valid = valid  # 0 <= index < len(z) (3) or N: index is in bounds for which arrays
        self.floats = floats  # real scalars the header binds
        self.arrays = arrays  # arrays the header binds (rows of xs)
        self.kind = kind


class LoopGen:
    def __init__(self, draw):
        self.draw = draw
        self.lines = []  # (indent, text or condition template)
        self.indent = 1
        self.loops: list[Loop] = []
        self.scopes = [[]]  # local float names defined per block
        self.fresh = 0
        self.counts = Counter()
        self.views = False
        self.arrs = False  # the list `arrs` of arrays exists
        self.extras: list[str] = []  # more terms the result may read

    def name(self, stem):
        self.fresh += 1
        return f"{stem}{self.fresh}"

    def emit(self, text):
        self.lines.append((self.indent, text))

    def emit_cond(self, head, cond, tail=":"):
        self.lines.append((self.indent, (head, cond, tail)))

    def pick(self, options):
        return self.draw(st.sampled_from(options))

    # ------------------------------------------------------------ expressions

    def floats(self):
        names = ["acc", "c", "u", "r"] + [n for scope in self.scopes for n in scope]
        for loop in self.loops:
            names += loop.floats
        return names

    def index(self, length=N):
        """An index expression in bounds for an array of ``length``."""
        options = [str(self.draw(st.integers(-length, length - 1)))]
        for loop in self.loops:
            if loop.index is None:
                continue
            options.append(f"{loop.index} % {length}")
            if loop.valid >= length:
                options += [loop.index, loop.index, f"-1 - {loop.index}"]
            if 0 < loop.valid < length:
                options.append(f"{loop.index} + 1")
        return self.pick(options)

    def term(self):
        options = self.floats()
        options += [f"x[{self.index()}]", f"y[{self.index()}]", f"w[{self.index()}]", f"z[{self.index(3)}]"]
        for loop in self.loops:
            for a in loop.arrays:
                options += [f"np.sum({a})", f"{a}[{self.draw(st.integers(0, 1))}]"]
        return self.pick(options)

    def scalar(self):
        a, b = self.term(), self.term()
        return self.pick([a, f"np.sin({a})", f"{a} * {b}", f"0.5 * {a} + {b}", f"np.tanh({a} * {b})",
                          f"np.cos({a}) * {b}", f"{a} ** 2"])

    def bounded(self):
        a, b = self.term(), self.term()
        return self.pick([f"np.sin({a})", f"np.tanh({a} * {b})", f"np.cos({a})", f"0.5 + 0.25 * np.sin({a})"])

    def array(self):
        s = self.bounded()
        return self.pick([f"{s} * w", f"x * {s}", f"np.sin(y) * {s}", "y * w * 0.5", "np.tanh(x * y)"])

    def condition(self):
        ints = [loop.index for loop in self.loops if loop.index is not None]
        if ints and self.draw(st.integers(0, 3)) == 0:
            i = self.pick(ints)
            return ("int", self.pick([f"{i} == 1", f"{i} % 2 == 0", f"{i} > 1", f"{i} < 2"]))
        cond = ("cmp", self.scalar(), self.pick(["<", ">", ">=", "<="]), self.pick(["0.0", "0.3", "-0.4", "1.0"]))
        if self.draw(st.integers(0, 4)) == 0:
            cond = (self.pick(["and", "or"]), cond, ("cmp", self.term(), self.pick(["<", ">"]), "0.2"))
        return cond

    # ------------------------------------------------------------ statements

    def block(self, lo=1, hi=3, exits=True):
        self.scopes.append([])
        self.indent += 1
        for _ in range(self.draw(st.integers(lo, hi))):
            self.statement(exits)
        self.indent -= 1
        self.scopes.pop()

    def statement(self, exits=True):
        kinds = ["acc", "acc", "item", "item", "array", "temp", "if", "swap", "rows"]
        kinds += ["list_item", "pair_item", "fn_call"]
        if not self.loops or self.draw(st.booleans()):
            kinds += ["fn_rebind", "fn_rebind"]  # in a loop refused today (another function in a later iteration)
        if self.loops:
            kinds += ["append", "append", "append_array", "nested", "nested"] + (
                ["break", "continue", "return"] if exits else [])
            if self.draw(st.integers(0, 5)) == 3:
                kinds.append("view")  # refused today (an update through a view): rarely
        else:
            kinds += ["loop", "loop", "loop"]
        kind = self.pick(kinds)
        self.counts[kind] += 1
        getattr(self, "s_" + kind)()

    def s_acc(self):
        op = self.pick(["acc = acc + {}", "acc += {}", "acc -= {}", "acc = acc * {b}", "acc *= {b}"])
        self.emit(op.format(self.scalar(), b=self.bounded()))

    def s_item(self):
        target = f"y[{self.index()}]"
        op = self.pick(["{} = {s}", "{} += {s}", "{} -= {s}", "{} *= {b}", "np.add.at(y, [{i}, {j}], {s})"])
        self.emit(op.format(target, s=self.scalar(), b=self.bounded(), i=self.index(), j=self.index()))

    def s_array(self):
        self.emit(self.pick([f"y += {self.array()}", f"y *= {self.bounded()}", f"y[1:] += x[:-1] * {self.bounded()}",
                             f"y[::2] -= {self.bounded()}", f"y = y + {self.array()}"]))

    def s_temp(self):
        t = self.name("t")
        self.emit(f"{t} = {self.scalar()}")
        self.scopes[-1].append(t)

    def s_view(self):
        v = self.name("v")
        self.emit(f"{v} = {self.pick(['y[1:]', 'y[::-1]', 'y[:3]', 'y[::2]'])}")
        self.emit(self.pick([f"{v}[0] *= {self.bounded()}", f"{v}[-1] += {self.scalar()}", f"{v} += {self.bounded()}",
                             f"{v}[1] = {self.scalar()}"]))
        if self.draw(st.booleans()):
            self.emit(f"acc = acc + np.sum({v} * {v})")

    def s_swap(self):
        self.emit(self.pick([f"u, r = r, np.tanh(u * {self.term()})", f"u, r = r + {self.bounded()}, u * 0.5",
                             "u, r = r, u"]))

    def s_rows(self):
        i = self.index(3)
        self.emit(self.pick([f"Y[{i}] += {self.bounded()}", f"Y[{i}, 0] *= {self.bounded()}",
                             f"Y[:, 1] -= {self.bounded()}", f"Y[{i}] = Y[{i}] * {self.bounded()}",
                             f"Y = Y + {self.bounded()}"]))

    def s_list_item(self):
        """An element of ``lst`` (a list of numbers appended to, at run time) assigned to."""
        self.emit_cond("if ", ("int", "len(lst) > 0"))
        self.indent += 1
        k = self.pick(["-1", "0", "len(lst) - 1"] + [f"{loop.index} % len(lst)" for loop in self.loops
                                                     if loop.index is not None])
        self.emit(self.pick([f"lst[{k}] += {self.scalar()}", f"lst[{k}] = lst[{k}] * {self.bounded()}",
                             f"lst[{k}] *= {self.bounded()}", f"lst[{k}] = {self.scalar()}"]))
        self.indent -= 1

    def s_pair_item(self):
        """An element of ``pair`` (a list of two numbers), of ``grid`` (a list of two lists) or of
        ``rows`` (a list of two arrays) assigned to: an index known when transforming, or a loop's."""
        ints = [loop.index for loop in self.loops if loop.index is not None]
        k = self.pick(["0", "1", "-1", "-2"] + [f"{i} % 2" for i in ints])
        j = self.pick(["0", "1", "-1"] + [f"{i} % 2" for i in ints])
        forms = [f"pair[{k}] = {self.scalar()}", f"pair[{k}] += {self.scalar()}",
                 f"pair[{k}] = pair[{k}] * {self.bounded()}", f"rows[{k}] = rows[{k}] * {self.bounded()}"]
        if not self.loops or self.draw(st.integers(0, 5)) == 3:  # a loop carries a list as one built at run time:
            # an element of one of its elements, or a list of lists, is refused there (rarely)
            forms += [f"grid[{k}][{j}] = {self.scalar()}", f"grid[{j}][{k}] *= {self.bounded()}",
                      f"rows[{k}][{j}] = {self.scalar()}", f"rows[{k}][{j}] += {self.scalar()}"]
        self.emit(self.pick(forms))

    def s_fn_call(self):
        self.emit(f"acc = acc + op({self.scalar()})")

    def s_fn_rebind(self):
        """``op``, a function value, bound to another function (in a loop: the next iteration and the
        code after the loop call the new one)."""
        self.emit(self.pick([f"op = lambda t: t * {self.bounded()}", "op = np.tanh",
                             "op = lambda t: np.cos(t) + c"]))

    def s_append(self):
        self.counts["lst"] += 1
        self.append(self.scalar())

    def append(self, value):
        """``lst.append(value)``; in a loop over ``lst`` (which Python runs over what is appended
        too: refused by astad) only while the list is short, so that plain Python ends."""
        if any(loop.kind in ("list", "shadow_lst", "zip_lst") for loop in self.loops):
            self.counts["append to the list iterated"] += 1
            self.emit_cond("if ", ("int", "len(lst) < 6"))
            self.indent += 1
            self.emit(f"lst.append({value})")
            self.indent -= 1
        else:
            self.emit(f"lst.append({value})")

    def s_append_array(self):
        self.arrs = True
        self.emit(self.pick(["arrs.append(y)", "arrs.append(y * 1.0)", "arrs.append(y.copy())"]))

    def s_if(self):
        self.emit_cond("if ", self.condition())
        self.branch_block()
        while self.draw(st.integers(0, 2)) == 0:
            self.emit_cond("elif ", self.condition())
            self.branch_block()
        if self.draw(st.booleans()):
            self.emit("else:")
            self.branch_block()

    def branch_block(self):
        """A block; sometimes one that assigns a name of its own (a different one in each branch)."""
        if self.draw(st.booleans()):
            p = self.name("p")
            self.indent += 1
            self.emit(f"{p} = {self.scalar()}")
            self.pick([lambda: self.emit(f"acc = acc + {p}"), lambda: self.emit(f"y[{self.index()}] = {p}"),
                       lambda: self.append(p)])()
            self.indent -= 1
            return
        self.block(1, 2)

    def s_break(self):
        self.leave("break")

    def s_continue(self):
        self.leave("continue")

    def s_return(self):
        self.leave(f"return {self.result()}")

    def leave(self, what):
        self.emit_cond("if ", self.condition())
        self.indent += 1
        self.scopes.append([])
        if self.draw(st.booleans()):
            self.statement(exits=False)
        self.emit(what)
        self.scopes.pop()
        self.indent -= 1

    def s_nested(self):
        if len(self.loops) >= 2:
            return self.s_acc()
        self.s_loop()

    def s_loop(self):
        kind = self.pick(["range", "range_n", "elements", "enumerate", "zip", "enumerate_zip", "rows", "made",
                          "while", "while_data", "list", "shadow", "while_open", "list_range", "lazy"]
                         + ["rows_of_made"] * (self.draw(st.integers(0, 5)) == 3))  # refused today: rarely
        self.counts["loop " + kind] += 1
        start = len(self.lines)
        i = self.name("i")
        a, b = self.name("a"), self.name("b")
        if kind == "range":
            heads = ['range(4)', 'range(len(x))', 'range(1, 4)', 'range(3, -1, -1)', 'reversed(range(4))',
                     'reversed(range(1, n))', 'reversed(range(n - 1, -1, -2))', 'reversed(range(3, n - 1, -1))',
                     'reversed(range(n, 4, 3))']  # (steps of either sign, in 0..3; empty for some n)
            self.emit(f"for {i} in {self.pick(heads)}:")
            loop = Loop(i, N, [], [], kind)
        elif kind == "range_n":
            self.emit(f"for {i} in range(n):")
            loop = Loop(i, N, [], [], kind)
        elif kind == "elements":
            seq = self.pick(["x", "w", "z", "x[1:]", "w[::-1]", "y", "reversed(x)", "y[::-1]", "reversed(y)"])
            self.emit(f"for {a} in {seq}:")
            loop = Loop(None, 0, [a], [], kind)
        elif kind == "enumerate":
            seq = self.pick(["x", "w", "z", "y", "x[::2]", "x", "w", "z", "y", "x, 1", "y, 1", "w, start=2",
                              "reversed(x)", "reversed(y), 2"])
            self.emit(f"for {i}, {a} in enumerate({seq}):")
            loop = Loop(i, 0 if "," in seq else 3 if seq in ("z", "x[::2]") else N, [a], [], kind)
        elif kind == "zip":
            s1, s2 = self.pick([("x", "w"), ("x", "z"), ("z", "w"), ("y", "x"), ("w", "y[1:]"), ("x", "x[1:]"),
                                ("y", "y[1:]"), ("lst", "x")])
            self.emit(f"for {a}, {b} in zip({s1}, {s2}):")
            loop = Loop(None, 0, [a, b], [], "zip_lst" if s1 == "lst" else kind)
        elif kind == "enumerate_zip":
            s1, s2 = self.pick([("x", "w"), ("x", "z"), ("y", "w"), ("z", "y")])
            self.emit(f"for {i}, ({a}, {b}) in enumerate(zip({s1}, {s2})):")
            loop = Loop(i, 3 if "z" in (s1, s2) else N, [a, b], [], kind)
        elif kind == "lazy":  # a generator or map(...), read before each iteration (accepted where the body
            # changes nothing it reads: `op`, `u`, `c`, `y`, refused otherwise)
            form = self.pick(["for {a} in map(op, x):", "for {a} in (t * u for t in w):", "for {a} in map(np.sin, y):",
                              "for {i}, {a} in enumerate(c * t for t in z):", "for {a}, {b} in zip(map(op, w), x):"])
            self.emit(form.format(a=a, b=b, i=i))
            loop = Loop(i if "{i}" in form else None, 3 if "{i}" in form else 0, [a, b] if "{b}" in form else [a], [], kind)
        elif kind == "rows":
            form = self.pick(["for {a} in xs:", "for {i}, {a} in enumerate(xs):", "for {a}, {b} in zip(xs, x):",
                              "for {a} in reversed(xs):"])
            self.emit(form.format(a=a, b=b, i=i))
            loop = Loop(i if "{i}" in form else None, 3, [b] if "{b}" in form else [], [a], kind)
        elif kind == "list":
            form = self.pick(["for {a} in lst:", "for {i}, {a} in enumerate(lst):",
                              "for {i}, {a} in enumerate(reversed(lst)):"])
            self.emit(form.format(a=a, i=i))
            loop = Loop(i if "{i}" in form else None, 0, [a], [], kind)
        elif kind == "rows_of_made":  # rows of a 2-d array: views, updated in place
            form = self.pick(["for {a} in Y:", "for {i}, {a} in enumerate(Y):"])
            self.emit(form.format(a=a, i=i))
            self.indent += 1
            self.emit(self.pick([f"{a} += {self.bounded()}", f"{a}[0] *= {self.bounded()}", f"{a}[1] = {self.scalar()}",
                                 f"acc = acc + np.sum({a} * {a})"]))
            self.indent -= 1
            loop = Loop(i if "{i}" in form else None, 3, [], [a], kind)
        elif kind == "shadow":  # the loop rebinds a name that exists before it (read after it)
            seq = self.pick(['x', 'z', 'lst', 'w[:n]'])
            self.emit(f"for c in {seq}:")
            loop = Loop(None, 0, [], [], "shadow_lst" if seq == "lst" else kind)
        elif kind == "list_range":
            self.emit(f"for {i} in range(len(lst)):")
            self.indent += 1
            self.emit(self.pick([f"lst[{i}] = lst[{i}] * {self.bounded()}", f"lst[{i}] += {self.scalar()}",
                                 f"acc = acc + lst[{i}] * lst[-1 - {i}]"]))
            self.indent -= 1
            loop = Loop(i, 0, [], [], kind)
        elif kind == "while_open":  # no counter: a real that grows by at least 0.3 a trip
            t = self.name("q")
            self.emit(f"{t} = c")
            self.emit_cond("while ", ("cmp", t, "<", self.pick(["1.0", "2.0"])))
            self.indent += 1
            self.emit(f"{t} = {t} + 0.3 + {self.pick(['x[0]', 'w[1]', 'y[2]', 'acc', 'u'])} ** 2")
            self.indent -= 1
            loop = Loop(None, 0, [t], [], kind)
        elif kind == "made":
            self.emit(f"for {i}, {a} in enumerate(y):")
            loop = Loop(i, N, [a], [], kind)
        elif kind == "while":
            k = self.name("k")
            self.emit(f"{k} = {self.pick(['0', '1'])}")
            self.emit_cond("while ", ("int", f"{k} < {self.pick(['4', 'n'])}"))
            self.indent += 1
            self.emit(f"{i} = {k}")
            self.emit(f"{k} += 1")
            self.indent -= 1
            loop = Loop(i, N, [], [], kind)
        else:  # while_data: a real that grows each trip, and a counter that bounds the trips
            k, t = self.name("k"), self.name("q")
            self.emit(f"{k} = 0")
            self.emit(f"{t} = c")
            self.emit_cond("while ", ("and", ("cmp", t, "<", self.pick(["1.0", "2.0"])), ("int", f"{k} < 6")))
            self.indent += 1
            self.emit(f"{i} = {k} % 4")
            self.emit(f"{k} += 1")
            self.emit(f"{t} = {t} + 0.3 + {self.pick(['x', 'w', 'y'])}[{i}] ** 2")
            self.indent -= 1
            loop = Loop(i, N, [t], [], kind)
        self.loops.append(loop)
        self.indent += 1
        head = self.lines[start][1]
        if head.startswith("for ") and "y" in head.split(" in ", 1)[1] and self.draw(st.booleans()):
            self.counts["update of the array iterated"] += 1  # refused: the loop reads its elements as it goes
            self.pick([self.s_item, self.s_array])()
        self.indent -= 1
        self.block(1, 4)
        self.loops.pop()
        if self.draw(st.integers(0, 3)) == 3:  # for/while ... else: runs where the loop ended without `break`
            self.counts["loop else"] += 1
            self.emit("else:")
            self.block(1, 2, exits=False)

    # ------------------------------------------------------------ the program

    def result(self):
        parts = ["acc", self.pick(["np.sum(y * w)", "np.sum(y ** 2)", "y[0] * c"]), "op(u)"]
        for extra in ["c * len(lst)", "u * r", "np.sum(Y * Y)", "c", "pair[0] * pair[1]", "grid[0][1] * grid[1][0]",
                      "np.sum(rows[0] * rows[1])", "sum(lst)"] + self.extras:
            if self.draw(st.booleans()):
                parts.append(extra)
        return " + ".join(parts)

    def source(self, instrumented):
        out = []
        for indent, item in self.lines:
            if isinstance(item, tuple):
                head, cond, tail = item
                item = head + render(cond, instrumented) + tail
            out.append("    " * indent + item)
        return "\n".join(out)


@st.composite
def programs(draw):
    g = LoopGen(draw)
    g.emit(draw(st.sampled_from(["y = x * 1.0", "y = np.zeros(4)", "y = x.copy()", "y = np.sin(x) + w"])))
    g.emit(draw(st.sampled_from(["acc = 0.0", "acc = 0.0", "acc = 0", "acc = c"])))
    g.emit("u, r = c, 0.5")
    g.emit("Y = np.outer(x[:3], w[:2])")
    g.emit("lst = []")
    g.emit("arrs = []")
    g.emit("pair = [c, 0.5 * c]")
    g.emit("grid = [[c, 0.25], [x[0], c * c]]")
    g.emit("rows = [x * 1.0, w * c]")
    g.emit("op = lambda t: np.sin(t) * c")
    if draw(st.integers(0, 5)) == 0:  # a list that holds itself: an update of it is seen through its element
        g.counts["list holding itself"] += 1
        g.emit("pair.append(pair)")
        g.emit(draw(st.sampled_from(["pair[0] = c * c", "pair[1] += c", "pair[-2] = pair[0] * 0.5", "pair.append(c)",
                                     "acc = acc + pair[2][1]"])))
        g.extras.append("pair[2][0] * pair[2][1]")
    for _ in range(draw(st.integers(1, 3))):
        g.s_loop()
        if draw(st.integers(0, 2)) == 0:
            g.statement()
    tail = [f"    return {g.result()}"]
    if g.arrs:
        tail.insert(0, "    for e in arrs:\n        acc = acc + np.sum(e * x[:len(e)])")
    if draw(st.integers(0, 2)) == 0:  # a list of arrays stacked, empty when n == 0 (numpy: shape (0,), not (0, 4))
        tail.insert(0, "    rows = []\n    for k in range(n):\n        rows.append(x * k + w)\n"
                       "    acc = acc + np.sum(np.sum(np.array(rows), axis=0) * x)")
    header = "import numpy as np\n\n\ndef f(x, w, z, xs, c, n):\n"
    plain = header + g.source(False) + "\n" + "\n".join(tail) + "\n"
    instrumented = "import numpy as np\n" + MARGIN_HELPERS + "\n\ndef f(x, w, z, xs, c, n):\n" + \
        g.source(True) + "\n" + "\n".join(tail) + "\n"
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    x, w, z = (np.round(rng.uniform(-1.5, 1.5, k), 3) for k in (N, N, 3))
    xs = [np.round(rng.uniform(-1.0, 1.0, 2), 3) for _ in range(3)]
    c = float(np.round(rng.uniform(-1.0, 1.0), 3))
    n = draw(st.sampled_from([0, 1, 3, 4, np.int64(2), np.int64(4)]))
    return plain, instrumented, [x, w, z, xs, c, n], g.counts


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("loop_forms")


_FEW = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                                  HealthCheck.data_too_large])


@settings(max_examples=fuzz_examples(10, long=12), **_FEW)
@given(programs(), st.data())
def test_random_loop_forms(program_dir, program, data):
    plain, instrumented, args, counts = program
    note(plain)
    note(f"args = {args!r}")
    probe = load_program(instrumented, program_dir, "loop_forms_m")
    try:
        with np.errstate(all="ignore"):
            value = probe.f(*copy.deepcopy(args))
    except Exception:  # noqa: BLE001 - plain Python cannot run it (an empty list, shapes)
        assume(False)
    assume(np.all(np.isfinite(value)) and np.all(np.abs(value) < 1e6))
    assume(min(probe._MARGINS, default=1.0) >= MARGIN)
    fn = load_program(plain, program_dir, "loop_forms").f
    try:
        check_correct_or_refused(fn, args, seed=0)
        reverse_refused = False
        TALLY["accepted"] += 1
        TALLY.update("accepted " + k for k in counts)
    except Refused as e:
        note(f"refused: {e}")
        if os.environ.get("ASTAD_LOOP_FORMS_LOG"):  # what is refused, for a long fuzzing run
            with open(os.environ["ASTAD_LOOP_FORMS_LOG"], "a") as log:
                log.write(f"{plain}\n# refused: {e}\n\n")
        reverse_refused = True
        TALLY["refused"] += 1
        TALLY.update("refused " + k for k in counts)
    try:
        with user_stack():
            check_forward(fn, args, data, reverse=not reverse_refused)
    except Refused as e:
        assert reverse_refused, f"reverse mode accepts the program, forward mode refuses it: {e}"


def test_tallies_show_both_outcomes():
    """Refusing everything passes the oracle: most of these programs must be accepted."""
    print(f"\nloop forms: {dict(sorted(TALLY.items()))}")
    if TALLY["accepted"] + TALLY["refused"] < 10:
        pytest.skip("run with the random test of this module")
    assert TALLY["accepted"] > 0, TALLY
