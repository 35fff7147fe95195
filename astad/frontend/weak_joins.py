"""A number that is a Python float on one path and a numpy float64 on another, met by a float32.

``acc = 0.0; for ...: acc = acc + x64[i]`` leaves ``acc`` a Python float when the loop runs no
iteration and a numpy float64 otherwise; ``y = float(a) if c else x64[0]`` and ``max(x64[0], 0.25)`` likewise.  The IR types
the join a numpy float64 (:meth:`Conditionals.join_type`), which both are to numpy's promotion
against float64, integers and bools, so the everyday loop is accepted.  Against a float32 or
float16 they differ (NEP 50: a Python float is "weak", ``acc * x32`` is float32; ``np.float64(0.0)
* x32`` float64), and the generated code, typed float64, would compute in float64 (its
Python-float loops) where numpy computes in float32.  This pass follows each such value (and what
is computed from it with Python numbers only, which may still be either) through the core IR and
refuses the first operation that meets a float16 or float32 with it, naming the join."""

from __future__ import annotations

from ..blocks import prim_rhss
from ..errors import AstadTypeError
from ..rules.table import TABLE
from ..ir import App, Atom, Block, Const, Copy, Function, If, Lam, ListT, Loop, MakeTuple, Num, Prim, Unpack, Var
from ..ir.walk import ops_of

_NARROW = frozenset({"float16", "float32"})
_WIDE = frozenset({"float64", "int64"})
_PICKS = frozenset({"py_max", "py_min"})  # Python's max/min of numbers: the one it picks, as it is
_CALLED = _PICKS | {"call"}


def check_weak_joins(fn: Function) -> None:
    """Refuse (at its line) an operation of ``fn`` that meets a float16 or float32 with a value that is
    a Python float on one path and a numpy float64 on another (see the module's docstring).  Primitives
    alone and none of them a pick or a call (straight-line code, mostly): nothing to follow, no walk
    (``prim_rhss`` and ``ops_of``: each computed once per block, shared with ``keep_unread_raising``)."""
    if prim_rhss(fn.body) is not None and _CALLED.isdisjoint(ops_of(fn.body)):
        return
    _Walk().block(fn.body)


def _strong_float64(t: object) -> bool:
    """A numpy float64 or int64 scalar: the type of a join of a Python float or int with one (``j = 0; for
    ...: j = j + k64[i]``: a Python int where no iteration runs, ``j * x32`` then float32, not float64)."""
    return type(t) is Num and not t.py and not t.shape and t.dtype in _WIDE  # type: ignore[attr-defined]


def _weak_of_weak(rhs: Prim) -> bool:
    """Whether ``rhs`` of Python numbers may give a Python number (``acc * 2.0``, ``abs(acc)``), so that of a
    value that may be either it is still either; numpy's functions give a numpy float64 of either
    (``np.sin(acc)``, ``np.sqrt(acc)``: the same value and dtype on both paths)."""
    entry = TABLE.get(rhs.op)
    if entry is None:
        return True
    types = [_python(a.type) if type(a.type) is Num and not a.type.shape else a.type for a in rhs.args]
    try:
        out = entry.infer(types, dict(rhs.params))
    except Exception:  # (a rule that refuses the Python numbers: keep following the value, as before)
        return True
    return type(out) is not Num or out.py


def _python(t: Num) -> Num:
    """``t`` as a Python number's type (the path where the join is one)."""
    return Num(t.shape, t.dtype, py=True)


def _differs(rhs: Prim, joined: dict) -> bool:
    """Whether ``rhs`` gives another type where its values that may be either are Python numbers
    (``acc * x32``: float32, not float64; ``x32[j]``, ``y32[0] = acc``: float32 either way)."""
    entry = TABLE.get(rhs.op)
    if entry is None:
        return True
    strong = [a.type for a in rhs.args]
    weak = [_python(a.type) if type(a) is Var and a.name in joined else a.type for a in rhs.args]
    try:
        s, w = entry.infer(strong, dict(rhs.params)), entry.infer(weak, dict(rhs.params))
    except Exception:  # (a rule that refuses the Python number: refused as the join)
        return True
    return type(s) is not type(w) or (type(s) is Num and (s.shape, s.dtype, s.py) != (w.shape, w.dtype, w.py))  # type: ignore[union-attr]


def _narrow(t: object) -> bool:
    if type(t) is ListT:
        t = t.elem  # type: ignore[attr-defined]
    return type(t) is Num and t.dtype in _NARROW  # type: ignore[attr-defined]


class _Walk:
    def __init__(self) -> None:
        self.joined: dict[str, object] = {}  # a variable that may be either -> the join's location
        self.tuples: dict[str, dict[int, object]] = {}  # a tuple variable -> its items that may be either
        self.seen: set[tuple[int, tuple[bool, ...]]] = set()  # the functions of their own walked, by their params

    def weak(self, a: Atom) -> bool:
        """Whether ``a`` may be a Python float (one typed so, or a join that may be one)."""
        return (type(a) is Var and a.name in self.joined) or (isinstance(a, (Var, Const)) and type(a.type) is Num
                                                               and a.type.py and not a.type.shape)

    def where(self, a: Atom) -> object:
        return self.joined.get(a.name) if type(a) is Var else None

    def block(self, block: Block) -> None:
        for b in block.binds:
            rhs = b.rhs
            cls = type(rhs)
            if cls is Prim:
                if self.joined or rhs.op in _CALLED:  # (nothing to follow: the everyday case, one test a binding)
                    self.prim(b, rhs)
            elif cls is If:
                self.block(rhs.then)
                self.block(rhs.orelse)
                items = list(zip(self.items(rhs.then), self.items(rhs.orelse)))
                for i, t in enumerate(b.targets):
                    if i < len(items) and _strong_float64(t.type) and any(self.weak(a) for a in items[i]):
                        self.joined[t.name] = next((self.where(a) for a in items[i] if self.where(a)), b.loc)
            elif cls is Loop:
                self.loop(b, rhs)
            elif cls is Copy:
                if self.weak(rhs.atom) and _strong_float64(b.targets[0].type):
                    self.joined[b.targets[0].name] = self.where(rhs.atom) or b.loc
            elif cls is MakeTuple:
                marks = {i: self.where(a) or b.loc for i, a in enumerate(rhs.items) if type(a) is Var and a.name in self.joined}
                if marks:
                    self.tuples[b.targets[0].name] = marks
            elif cls is Unpack:
                marks = self.tuples.get(rhs.tup.name, {}) if type(rhs.tup) is Var else {}
                for i, t in enumerate(b.targets):
                    if i in marks:
                        self.joined[t.name] = marks[i]
            elif cls is Lam:
                self.block(rhs.body)
            elif cls is App:
                lam_args = [a for a in rhs.args if self.weak(a) and type(a) is Var and a.name in self.joined]
                if lam_args and any(_narrow(a.type) for a in rhs.args):
                    self.refuse(b, lam_args[0])

    def items(self, block: Block) -> tuple[Atom, ...]:
        """The atoms a branch or loop body ends with (the tuple it makes)."""
        for b in reversed(block.binds):
            if type(b.rhs) is MakeTuple and b.targets and type(block.result) is Var and b.targets[0].name == block.result.name:
                return b.rhs.items
        return ()

    def loop(self, b, rhs: Loop) -> None:
        for _ in range(len(rhs.carried) + 1):  # to a fixpoint: each pass may mark one more carried value
            before = len(self.joined)
            for p, init in zip(rhs.carried, rhs.init):
                if _strong_float64(p.type) and self.weak(init) and p.name not in self.joined:
                    self.joined[p.name] = self.where(init) or b.loc
            self.block(rhs.body)
            for p, end in zip(rhs.carried, self.items(rhs.body)):
                if _strong_float64(p.type) and self.weak(end) and p.name not in self.joined:
                    self.joined[p.name] = self.where(end) or b.loc
            if len(self.joined) == before:
                break
        for p, t in zip(rhs.carried, b.targets):
            if p.name in self.joined and _strong_float64(t.type):
                self.joined[t.name] = self.joined[p.name]

    def prim(self, b, rhs: Prim) -> None:
        either = [a for a in rhs.args if type(a) is Var and a.name in self.joined]
        if rhs.op in _PICKS and _strong_float64(b.targets[0].type) and any(self.weak(a) for a in rhs.args):
            self.joined[b.targets[0].name] = b.loc  # max(x64[0], 0.25) is one of them as it is: a join too
        if not either:
            if rhs.op == "call":
                self.call(rhs, ())
            return
        if any(_narrow(a.type) for a in rhs.args) and _differs(rhs, self.joined):
            self.refuse(b, either[0])
        if rhs.op == "call":
            self.call(rhs, tuple(type(a) is Var and a.name in self.joined for a in rhs.args))
        t = b.targets[0].type if len(b.targets) == 1 else None
        if _strong_float64(t) and all(self.weak(a) for a in rhs.args if isinstance(a.type, Num)) and _weak_of_weak(rhs):
            self.joined[b.targets[0].name] = self.where(either[0])  # (with Python numbers only: still either)

    def call(self, rhs: Prim, marks: tuple[bool, ...]) -> None:
        """A function of its own (astad.frontend.replay): its parameters that may be either, walked once."""
        key = rhs.param("fn")
        fn = getattr(key, "fn", None)
        if fn is None or (id(fn), marks) in self.seen:
            return
        self.seen.add((id(fn), marks))
        inner = _Walk()
        inner.seen = self.seen
        for p, a, m in zip(fn.params, rhs.args, marks or (False,) * len(fn.params)):
            if m:
                inner.joined[p.name] = self.where(a)
        inner.block(fn.body)

    def refuse(self, b, a: Var) -> None:
        join = self.joined.get(a.name)
        at = f" (joined at line {join.line})" if getattr(join, "line", None) else ""
        py, np_, zero = ("int", "int64", "np.int64(0)") if getattr(a.type, "dtype", "") == "int64" else \
            ("float", "float64", "np.float64(0.0)")
        raise AstadTypeError(
            f"a number that is a Python {py} on one path and a numpy {np_} on another{at} meets a float16 or "
            f"float32 here: numpy computes with the Python {py} at the other operand's precision and with the "
            f"{np_} at {np_}'s, so no one dtype is this value's", b.loc,
            f"one kind of number on every path: start a sum as {zero} (or {py}(...) of the numpy value), "
            "or convert the float32 first (.astype(np.float64))")
