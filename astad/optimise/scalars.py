"""The scalar fast path: which loops run on Python floats in generated code.

A loop that reads a float64 vector element by element (``x[i]``) runs on
numpy scalars: ``x[i]`` is an ``np.float64``, whose arithmetic and ``np.sin``
cost several times what a Python float and ``math.sin`` cost.  For a loop at
the top of the forward block this pass decides (:func:`plan`) that the
generated code instead

- reads each such vector from a list made once before the loop (``xs =
  x.tolist()``, exact: float64 elements become the same Python floats);
- prints ``np.sin(t)`` of a float scalar as ``math.sin(t)`` (``np.abs`` as ``abs``);
- records one tape list per recorded variable (``t12_tape.append(t12)``),
  read back by ``zip(reversed(range(n)), reversed(t12_tape), ...)`` (the
  index of a loop of known bounds is its range, not a tape), and records
  nothing the backward pass computes again for less (``t7 = x * x`` of a
  recorded ``x``: one multiplication rather than an append);
- and, in the loop's backward pass, accumulates the cotangent of such a vector
  in a list of floats (``x_ct = [0.0] * n; x_ct[i] += v``), made an array once
  after the loop; a numpy float it reads from outside (the output's cotangent, ``np.float64(1.0)``
  where the output is an ``np.float64``) it reads as a Python float made once before the loop.

**What may differ, and how each difference is handled.**  A value the array
path holds as an ``np.float64`` may now be a Python float (the pass calls it
*demoted*).  For ``+ - *``, negation, comparisons and ``abs`` a Python float
gives the same IEEE result as numpy (overflow gives inf silently in both).
``math`` functions agree with numpy's to an ulp or so, but they *raise* where
numpy returns inf or nan with a warning (``math.log(0.0)``, ``math.sin(inf)``,
``math.exp(1000.0)``), and so do ``/`` (by zero) and ``**`` (overflow) on
Python floats.  The choice here is a guard, not a smaller set of operations
(sin and cos, the common case, raise at inf): a loop in which such an
operation reads a demoted value is printed twice, inside
``try: ... except (ArithmeticError, ValueError):``, the fast loop first and
the array path's loop as the fallback, which starts again from the loop's
initial values (so only loops whose carried values are scalars, or lists the
loop makes itself, qualify, and none with effects: a ``print`` in the body
would print twice).  The backward fallback reads the demoted values of the tape
as numpy scalars (``np.array(t12_tape)``), as the array path had them.
Everything else keeps numpy's semantics by refusal: a demoted value may flow
only into the operations above, an ``if``'s test, the tape and the loop's
carried values (a demoted result leaves the loop as ``np.float64(s)``); ``**``
only with a constant integral exponent (a Python float to a fractional power
is complex where numpy gives nan); every operand of such an operation a
float64, integer or bool scalar (numpy promotes ``float32 * np.float64`` to
float64 but ``float32 * float`` stays float32).  Only float64 vectors are
read as lists (``tolist`` turns ints into Python ints, which never overflow,
and float32 into float64), never one the loop writes (it is carried) or a 0-d
or 2-d array (``x[i]`` is then not a number), only at the top level of the
forward block (its tape a residual of its own), nested loops not at all.
Any other loop keeps the array path.  Elsewhere, only ``np.abs(x)`` of a float
read by nothing but comparisons that only tests read (an ``if``'s, a ``while``
loop's condition) becomes ``abs(x)`` (:func:`tested_abs`: ``while np.abs(step) >
tol``, in forward mode's code too).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from ..ir import (Atom, Bind, Block, Const, If, Loop, LoopBack, MakeTuple, Num, Plus, Prim, ReverseProgram, Var,
                  Zero, nested_blocks, trip_count, use_counts)
from ..names import Namer
from .. import rules
from ..blocks import result_items

#: numpy functions of one float printed as ``math``'s (``abs`` as the builtin)
MATH = {"sin": "math.sin", "cos": "math.cos", "tan": "math.tan", "exp": "math.exp", "log": "math.log",
        "sqrt": "math.sqrt", "tanh": "math.tanh", "sinh": "math.sinh", "cosh": "math.cosh", "expm1": "math.expm1",
        "log1p": "math.log1p", "log2": "math.log2", "log10": "math.log10", "arcsin": "math.asin",
        "arccos": "math.acos", "arctan": "math.atan", "abs": "abs"}
#: of those, the ones that never raise on a float
_NEVER_RAISE = {"tanh", "arctan", "abs"}
#: operations a demoted value may flow into, with the same result on a Python float as on an np.float64
_SAME = {"add", "sub", "mul", "neg", "lt", "le", "gt", "ge", "eq", "ne", "div", "pow", *MATH}
#: of those, the ones that may raise on Python floats (numpy warns)
_RAISING = {"div", "pow"} | (set(MATH) - _NEVER_RAISE)
#: numpy functions of a float whose result is a numpy scalar whether it reads a Python float or not
_NUMPY_RESULT = {"log_domain", "reciprocal", "power"}
#: what is computed again rather than recorded
_CHEAP = {"add", "sub", "mul", "neg", "lt", "le", "gt", "ge", "eq", "ne"}
_COMPARISONS = {"lt", "le", "gt", "ge", "eq", "ne"}
_SCALAR_DTYPES = ("float64", "int64", "int32", "bool")
#: what a guarded loop catches: what Python's float arithmetic and ``math`` raise where numpy warns
CAUGHT = ("ArithmeticError", "ValueError")


@dataclass
class FastLoop:
    """How one loop (forward or backward) is printed on the fast path."""

    lists: dict[str, str] = field(default_factory=dict)  # vector read element by element -> its list's name
    elements: dict[str, str] = field(default_factory=dict)  # ``t = x[i]`` -> the list ``t`` is read from
    calls: dict[str, str] = field(default_factory=dict)  # target of a numpy function of a float -> math's name
    demoted: set[str] = field(default_factory=set)  # what may be a Python float where the array path has numpy's
    guarded: bool = False  # printed twice, the array path as the fallback
    tapes: dict[str, str] = field(default_factory=dict)  # recorded variable -> its tape list's name
    accumulators: dict[str, int] = field(default_factory=dict)  # backward: cotangent list -> its length
    index: tuple[str, tuple[int, ...]] | None = None  # a for loop's index and known bounds: no tape for it
    recompute: tuple[Bind, ...] = ()  # recorded values computed again in the backward pass, not recorded
    numpy: set[str] = field(default_factory=set)  # backward fallback: recorded floats read back as numpy scalars
    scatters: dict[str, str] = field(default_factory=dict)  # backward: ``acc[i] += v``'s result -> the list
    floats: dict[str, str] = field(default_factory=dict)  # backward: a numpy float the loop reads -> its float's name


@dataclass
class ScalarPlan:
    loops: dict[int, FastLoop] = field(default_factory=dict)  # id() of a Loop or LoopBack -> its plan
    tapes: dict[str, tuple[str, ...]] = field(default_factory=dict)  # a tape residual -> its lists' names
    recomputed: set[str] = field(default_factory=set)  # recorded values computed again, not recorded
    calls: dict[str, str] = field(default_factory=dict)  # outside loops: ``abs(t)`` only an if's test compares


class _Refused(Exception):
    """The loop keeps the array path."""


def plan(prog: ReverseProgram, residuals: Sequence[Var] = ()) -> ScalarPlan:
    """The loops of ``prog`` printed on the fast path (see the module docstring); ``residuals``:
    the forward values its backward block reads (a value recorded may be computed again from them)."""
    out = ScalarPlan()
    if not any(isinstance(b.rhs, Loop) for b in prog.forward.binds):
        return out
    out.calls = tested_abs(prog.forward)
    taken = set(Namer.of(prog).taken)
    read = {v.name for v in residuals}
    backs = {b.rhs.tape.name: b for b in prog.backward.binds if isinstance(b.rhs, LoopBack)}
    tape_reads = use_counts(prog.backward)
    for b in prog.forward.binds:
        if not isinstance(b.rhs, Loop):
            continue
        loop = b.rhs
        back = backs.get(loop.tape.name) if loop.tape is not None else None
        if loop.tape is not None and (back is None or tape_reads[loop.tape.name] != 1 or not loop.save):
            continue
        try:
            fwd = _forward(loop, taken, read)
            bwd = _fast_backward(back.rhs, fwd, prog.backward, taken) if back is not None else None  # type: ignore
            if bwd is not None and bwd.guarded and bwd.demoted & _in_branches(loop):
                raise _Refused  # the fallback's np.array(tape) of floats and Nones would hold Python floats
        except _Refused:
            continue
        if not (fwd.lists or fwd.calls or (bwd is not None and (bwd.accumulators or bwd.calls))):
            continue
        out.loops[id(loop)] = fwd
        if back is not None and bwd is not None and loop.tape is not None:
            out.loops[id(back.rhs)] = bwd
            out.tapes[loop.tape.name] = tuple(fwd.tapes[v.name] for v in loop.save if v.name in fwd.tapes)
            out.recomputed |= {r.targets[0].name for r in fwd.recompute}
    return out


def tested_abs(block: Block) -> dict[str, str]:
    """``t = np.abs(x)`` of a float64 scalar, anywhere in ``block``, read only by comparisons
    whose results only tests read (an ``if``'s, or a ``while`` loop's condition: ``while
    np.abs(step) > tol``): ``abs(x)``, a float compared as the numpy scalar would be (the same
    value: ``abs`` clears the sign bit, as ``np.abs``), its bool tested as numpy's would be.
    The other operand of each comparison must be compared alike: a float64 or bool scalar, an
    int of at most 2**53 (``float > int`` is exact in Python, numpy rounds the int to a float)."""
    uses = use_counts(block)
    binds = _all_binds(block)
    tests = Counter(b.rhs.cond.name for b in binds if isinstance(b.rhs, If) and isinstance(b.rhs.cond, Var))
    for b in binds:
        loop = b.rhs
        if isinstance(loop, Loop) and loop.index is None and loop.carried:
            k = len(loop.carried) - 1  # the condition: carried last, read by nothing but the loop's test
            items = result_items(loop.body)
            if uses[loop.carried[k].name] == 0 and uses[b.targets[k].name] == 0 and items is not None:
                tests.update(a.name for a in (loop.init[k], items[k]) if isinstance(a, Var))
    compared: Counter = Counter()
    for b in binds:
        if isinstance(b.rhs, Prim) and b.rhs.op in _COMPARISONS and tests[b.targets[0].name] == uses[b.targets[0].name] \
                and all(_compared_alike(a) for a in b.rhs.args):
            compared.update(a.name for a in b.rhs.args if isinstance(a, Var))
    return {b.targets[0].name: "abs" for b in binds if isinstance(b.rhs, Prim) and b.rhs.op == "abs"
            and _float_scalar(b.rhs.args[0]) and compared[b.targets[0].name] == uses[b.targets[0].name] > 0}


def _compared_alike(a: Atom) -> bool:
    """A scalar that numpy and Python compare with a float the same way (not float32: ``float >
    float32`` compares in float32; not an int beyond 2**53, which numpy rounds)."""
    if not _operand(a) or not isinstance(a.type, Num):
        return False
    if a.type.dtype.startswith("int"):
        return isinstance(a, Const) and isinstance(a.value, int) and abs(a.value) <= 2**53
    return True


def _all_binds(block: Block) -> list[Bind]:
    out: list[Bind] = []
    for b in block.binds:
        out.append(b)
        for inner in nested_blocks(b.rhs):
            out += _all_binds(inner)
    return out


def _forward(loop: Loop, taken: set[str], residuals: set[str]) -> FastLoop:
    fast = FastLoop()
    _plain_body(loop.body)
    if any(not _scalar(p) for p in loop.carried):
        raise _Refused
    inside = _bound(loop.body) | {v.name for v in loop.inputs}
    for p in _prims(loop.body):
        x = p.args[0] if p.args else None
        if p.op == "getitem" and isinstance(x, Var) and x.name not in inside and _vector(x) and _element(p):
            fast.lists[x.name] = _name(f"{x.name}_list", taken)
    own = loop.tape.name if loop.tape is not None else None  # the tape's own name is not printed: free
    fast.recompute = _recomputed(loop, residuals)
    again = {b.targets[0].name for b in fast.recompute}
    if loop.index is not None and trip_count(loop) is not None and len(again) + 1 < len(loop.save):
        fast.index = (loop.index.name, tuple(_known(a) for a in loop.bounds))  # read back as a range
    for v in loop.save:
        if v.name not in again and (fast.index is None or v.name != fast.index[0]):
            fast.tapes[v.name] = _name(f"{v.name}_tape", taken - {own})
    taken |= set(fast.lists.values()) | set(fast.tapes.values())
    _demote(loop.body, loop.carried, fast, getitems=True)
    if loop.index is None and any(p.name in fast.demoted and isinstance(a.type, Num) and a.type.py
                                  for p, a in zip(loop.carried, loop.init)):
        raise _Refused  # a while loop that may run no iteration leaves its Python number (codegen's _out)
    return fast


def _backward(back: LoopBack, fwd: FastLoop, block: Block, floats: dict[str, str] | None = None) -> FastLoop:
    fast = FastLoop(tapes=fwd.tapes, recompute=fwd.recompute, index=fwd.index, floats=dict(floats or {}))
    _plain_body(back.body)
    items = _result(back.body)
    zeros = {b.targets[0].name for b in block.binds if isinstance(b.rhs, Prim) and b.rhs.op == "zeros"}
    uses = use_counts(back.body)
    for k, (p, init) in enumerate(zip(back.params, back.init)):
        if _scalar(p):
            continue
        chain = _accumulation(back.body, p, items[k], uses)
        is_zero = isinstance(init, Zero) or (isinstance(init, Var) and init.name in zeros)
        if chain is None or not is_zero or not _vector(p) or p.type.shape[0] is None:  # type: ignore[union-attr]
            raise _Refused
        fast.accumulators[p.name] = p.type.shape[0]  # type: ignore[union-attr]
        for name in chain:
            fast.scatters[name] = p.name
    fast.demoted = {v.name for v in back.saved if v.name in fwd.demoted} | set(fast.floats)
    _demote(Block((*fwd.recompute, *back.body.binds), back.body.result), back.params, fast, getitems=False)
    return fast


def _fast_backward(back: LoopBack, fwd: FastLoop, block: Block, taken: set[str]) -> FastLoop:
    """:func:`_backward`, the numpy floats it reads from outside (the output's cotangent, an
    ``np.float64`` where the output is one: grad's ``np.float64(1.0)``) read as Python floats
    (``out_ct_float = float(out_ct)`` before the fast loop; the fallback reads the numpy float), if
    the loop stays on the fast path so; else as they are."""
    inside = _bound(back.body) | {v.name for v in back.params} | {v.name for v in back.saved} \
        | {r.targets[0].name for r in fwd.recompute}
    free = {a.name: a for b in _all_binds(back.body) for a in _reads(b.rhs) if a.name not in inside}
    floats = {n: _name(f"{n}_float", taken) for n, a in free.items()
              if _float_scalar(a) and not a.type.py}  # type: ignore[union-attr]
    if floats:
        try:
            fast = _backward(back, fwd, block, floats)
        except _Refused:
            pass
        else:
            taken |= set(floats.values())
            return fast
    return _backward(back, fwd, block)


def _known(a: Atom) -> int:
    return int(a.value if isinstance(a, Const) else a.type.value)  # type: ignore[union-attr]


def _recomputed(loop: Loop, residuals: set[str]) -> tuple[Bind, ...]:
    """The recorded values the backward pass computes again, for less than recording them costs
    (``x * x`` or ``a > delta`` of a recorded ``x`` or ``a`` and a residual ``delta``: one operation,
    not an append), from other recorded values, constants and residuals.  Computed at the top of
    the backward loop's body whichever branch recorded them: these operations never raise."""
    saved = {v.name for v in loop.save}
    ready = set(residuals) | (saved - _in_branches(loop))  # a value recorded in a branch may be None
    out = []
    for b in _binds_in_order(loop.body):
        if not b.targets:  # (a keep: an unread statement that may raise, which records nothing)
            continue
        rhs, target = b.rhs, b.targets[0]
        if target.name in saved and len(b.targets) == 1 and isinstance(rhs, Prim) and rhs.op in _CHEAP \
                and (_float_scalar(target) or rhs.op in _COMPARISONS) and not rhs.params \
                and all(_operand(a) and not _python_int(a) for a in rhs.args) \
                and all(a.name in ready if isinstance(a, Var) or _array_constant(a) else isinstance(a, Const)
                        for a in rhs.args):
            out.append(b)
            ready.add(target.name)
    if len(out) == len(saved):
        return ()
    return tuple(out)


def _array_constant(a: Atom) -> bool:
    """A constant array of the user's (a 0-d one here): the backward pass reads it only from its
    residuals (see ``optimise.residuals``), never as a global (it may have changed since)."""
    return isinstance(a, Const) and a.name is not None and isinstance(a.value, np.ndarray)


def _in_branches(loop: Loop) -> set[str]:
    """What the loop's body binds inside its ``if``s (on one path only)."""
    return _bound(loop.body) - {t.name for b in loop.body.binds for t in b.targets}


def _binds_in_order(block: Block) -> list[Bind]:
    """The bindings of a loop body, those of its branches included, in the order they run."""
    out: list[Bind] = []
    for b in block.binds:
        out.append(b)
        if isinstance(b.rhs, If):
            out += _binds_in_order(b.rhs.then) + _binds_in_order(b.rhs.orelse)
    return out


def _accumulation(body: Block, p: Var, last: Atom, uses: dict) -> list[str] | None:
    """The targets of ``acc[i] += v`` statements chained from ``p`` to the body's result ``last``."""
    chain: list[str] = []
    cur = p.name
    for b in body.binds:
        rhs = b.rhs
        if isinstance(rhs, Prim) and rhs.op == "scatter_add" and isinstance(rhs.args[0], Var) and rhs.args[0].name == cur:
            if uses[cur] != 1 or not _element_scatter(rhs):
                return None
            cur = b.targets[0].name
            chain.append(cur)
    if not chain or not (isinstance(last, Var) and last.name == cur and uses[cur] == 1):
        return None
    return chain


def _demote(body: Block, carried: tuple[Var, ...], fast: FastLoop, getitems: bool) -> None:
    """Which values may be Python floats (until nothing changes: a demoted result carried to the next
    iteration demotes its variable), which numpy calls become ``math``'s, whether the loop needs its guard."""
    items = _result(body)
    while True:
        before = set(fast.demoted)
        _walk(body, fast, getitems)
        for p, a in zip(carried, items):
            if isinstance(a, Var) and a.name in fast.demoted:
                fast.demoted.add(p.name)
        if fast.demoted == before:
            return


def _walk(block: Block, fast: FastLoop, getitems: bool) -> None:
    d = fast.demoted
    for b in block.binds:
        rhs = b.rhs
        reads = [a for a in _reads(rhs) if a.name in d]
        if isinstance(rhs, If):
            _walk(rhs.then, fast, getitems)
            _walk(rhs.orelse, fast, getitems)
            for t, x, y in zip(b.targets, _result(rhs.then), _result(rhs.orelse)):
                if any(isinstance(a, Var) and a.name in d for a in (x, y)):
                    d.add(t.name)
            continue
        if isinstance(rhs, MakeTuple):
            continue  # a body's result (checked by _plain_body)
        if isinstance(rhs, Plus):
            if reads:
                if not all(_operand(a) for a in rhs.items):
                    raise _Refused
                d.add(b.targets[0].name)
            continue
        if not isinstance(rhs, Prim):
            if reads:
                raise _Refused
            continue
        if rhs.op == "keep":
            continue  # (a value nothing else reads, computed as Python does: a Python float as well)
        target = b.targets[0]
        if getitems and rhs.op == "getitem" and isinstance(rhs.args[0], Var) and rhs.args[0].name in fast.lists \
                and _element(rhs):
            d.add(target.name)
            fast.elements[target.name] = fast.lists[rhs.args[0].name]
            continue
        if rhs.op == "scatter_add" and target.name in fast.scatters:
            if not _operand(rhs.args[1]):
                raise _Refused
            continue
        if rhs.op in _NUMPY_RESULT and all(_operand(a) for a in rhs.args) and not rhs.params:
            continue  # a numpy scalar again, whatever it reads
        rewritten = rhs.op in MATH and len(rhs.args) == 1 and _float_scalar(rhs.args[0]) and _float_scalar(target)
        if not (reads or rewritten):
            continue
        if rhs.op not in _SAME or not all(_operand(a) for a in rhs.args) or rhs.params:
            raise _Refused
        if rhs.op == "pow" and not _integral(rhs.args[1]):
            raise _Refused
        if rhs.op in _COMPARISONS and any(_python_int(a) and not _exact_in_float(a) for a in rhs.args):
            raise _Refused  # numpy compares 2**53 + 1 as a float64 (== 2.0**53), Python exactly
        if rewritten:
            fast.calls[target.name] = MATH[rhs.op]
        if rhs.op in _RAISING or any(_python_int(a) for a in rhs.args):
            fast.guarded = True
        if isinstance(target.type, Num) and target.type.dtype.startswith("int"):
            raise _Refused  # (``count + (a > 0)``: a Python int where numpy's would be np.int64)
        if isinstance(target.type, Num) and target.type.dtype == "bool" and rhs.op not in _COMPARISONS:
            raise _Refused  # ``(a > 0) + (b > 0)``: numpy's bools add as ``or`` (True), Python's as ints (2)
        d.add(target.name)  # a comparison's Python bool too: an if's test, the tape and carried values read it


# --------------------------------------------------------------------------- small tests


def _plain_body(body: Block) -> None:
    """No nested loops, functions or effects: the body can be run again from its start."""
    for b in body.binds:
        if isinstance(b.rhs, If):
            _plain_body(b.rhs.then)
            _plain_body(b.rhs.orelse)
        elif isinstance(b.rhs, Prim):
            if rules.TABLE[b.rhs.op].effect and b.rhs.op != "keep":  # (keep reads a value: run again, no matter)
                raise _Refused
        elif not isinstance(b.rhs, (MakeTuple, Plus)):
            raise _Refused
    if _result(body) is None:
        raise _Refused


def _result(block: Block) -> tuple[Atom, ...]:
    from ..blocks import result_items
    items = result_items(block)
    if items is None:
        raise _Refused
    return items


def _prims(block: Block) -> list[Prim]:
    out: list[Prim] = []
    for b in block.binds:
        if isinstance(b.rhs, Prim):
            out.append(b.rhs)
        elif isinstance(b.rhs, If):
            out += _prims(b.rhs.then) + _prims(b.rhs.orelse)
    return out


def _bound(block: Block) -> set[str]:
    out: set[str] = set()
    for b in block.binds:
        out.update(t.name for t in b.targets)
        if isinstance(b.rhs, If):
            out |= _bound(b.rhs.then) | _bound(b.rhs.orelse)
    return out


def _reads(rhs: object) -> list[Var]:
    if isinstance(rhs, Prim):
        return [a for a in rhs.args if isinstance(a, Var)]
    if isinstance(rhs, (Plus, MakeTuple)):
        return [a for a in rhs.items if isinstance(a, Var)]
    if isinstance(rhs, If):
        return [rhs.cond] if isinstance(rhs.cond, Var) else []
    return []


def _scalar(v: Atom) -> bool:
    return isinstance(v.type, Num) and v.type.shape == ()


def _float_scalar(v: Atom) -> bool:
    return isinstance(v.type, Num) and v.type.shape == () and v.type.dtype == "float64"


def _operand(a: Atom) -> bool:
    """A scalar whose type leaves numpy's promotion unchanged whether the other operand is a Python float or not."""
    return isinstance(a.type, Num) and a.type.shape == () and a.type.dtype in _SCALAR_DTYPES


def _python_int(a: Atom) -> bool:
    return isinstance(a.type, Num) and a.type.py and a.type.dtype.startswith("int")


def _exact_in_float(a: Atom) -> bool:
    """An int constant a float64 holds exactly: compared with a float, Python and numpy agree."""
    return isinstance(a, Const) and isinstance(a.value, int) and abs(a.value) <= 2**53


def _integral(a: Atom) -> bool:
    return isinstance(a, Const) and isinstance(a.value, (int, float)) and not isinstance(a.value, bool) \
        and float(a.value).is_integer() and abs(a.value) < 2**31


def _vector(v: Atom) -> bool:
    t = v.type
    return isinstance(t, Num) and t.ndim == 1 and t.dtype == "float64" and not t.py


def _element(p: Prim) -> bool:
    """``x[i]``: one int index of a vector."""
    return p.param("index") == (("arg", 1),) and len(p.args) == 2 and isinstance(p.args[1].type, Num) \
        and p.args[1].type.shape == () and p.args[1].type.dtype.startswith("int")


def _element_scatter(p: Prim) -> bool:
    """``acc[i] += v``: one int index, a float64 scalar cotangent."""
    return p.param("index") == (("arg", 1),) and len(p.args) == 4 and _float_scalar(p.args[1]) \
        and isinstance(p.args[3].type, Num) and p.args[3].type.shape == () and p.args[3].type.dtype.startswith("int")


def _name(base: str, taken: set[str]) -> str:
    if base in taken:
        raise _Refused
    return base
