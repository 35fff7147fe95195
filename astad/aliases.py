"""Which values may share memory: the alias analysis behind in-place updates.

numpy views (``y[1:]``, ``y.T``, ``y.reshape(...)``, ``for row in y``) share
memory with their base, and a list is one object however many names, tuples or
lists hold it.  The IR is functional, so an in-place update (``x += v``,
``xs.append(v)``) reads correctly only when nothing that can still be read sees
the object it changes.  The frontend asks this module before it accepts one.

Every value gets the set of *roots* it may share memory with:

- ``A:name`` -- the storage of an array allocated by the binding ``name``
  (an operation whose result is always a new array);
- ``L:name`` -- the identity of a list made by the function;
- ``A:caller``, ``L:caller`` -- the caller's arrays and lists: arguments,
  module constants, defaults;
- ``UNKNOWN`` -- anything the analysis cannot place: it may share memory with
  everything;
- ``F:name`` -- a function value's parameter: whatever a call passes (an
  update of it changes the caller's object, so it is refused like an argument);
- ``P:name`` -- a loop's carried variable ``name``: what it holds at the start
  of an iteration, resolved when the loop's body is known (see below).

A view has the roots of its base, a list the roots of its elements besides
its own identity, a join (``if``, loop) the union of what flows into it.  An
update of ``x`` is accepted when its own roots (``A:`` for an array, ``L:`` for
a list) are all made by the function and no other value that can still be read
(a name in any running scope, what the closures hold) has one of them.

Loops: a carried variable's roots depend on the values the body gives it, which
are known only after the body is lowered.  The body is lowered with one
placeholder per carried variable; checks that mention a placeholder are kept
and checked again when the loop ends, with each placeholder replaced by what
flows into it.  An array the body allocates is a new object in each iteration:
in those checks, what the previous iteration allocated is named apart (``'``).
Conservative everywhere: an operation missing from :data:`KIND` is UNKNOWN.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np

from .ir import Const, Var
from .rules.math_functions import DIFFERENTIABLE as MATH_DIFFERENTIABLE, DISCRETE as MATH_DISCRETE, op_name as math_op
from .values import PyDict, PyTuple, Ref

CALLER = "A:caller"  # the caller's arrays (arguments, module constants, defaults)
CALLER_LIST = "L:caller"  # the caller's lists
UNKNOWN = "UNKNOWN"

Roots = frozenset

#: how each primitive's result relates to its arguments' memory:
#: "fresh" a new object (or an immutable scalar), "view" may share the first
#: argument's memory (numpy may return a view, or the argument itself),
#: "getitem" a view unless every index is an integer (then a scalar copy) or
#: it indexes by an integer array or a mask (then a copy); "setitem" (``y[i] = v``)
#: is a "view": the updated array is ``y``'s memory,
#: "list" a new list holding the arguments, "append" the list argument with
#: one more element (the same list object; ``list_set``: with one element replaced), "element" an element of the list,
#: "either" one of its arguments itself (Python's ``max(a, b)``).
KIND: dict[str, str] = {
    **dict.fromkeys((
        "abs", "add", "and_", "copy", "arange", "clip", "concatenate", "cos", "diag_embed", "div", "dot", "eq", "exp",
        "eye", "floordiv", "full", "ge", "gt", "le", "len", "list_len", "log", "log_domain", "lt", "matmul",
        "max", "maximum", "mean", "min", "minimum", "mod", "mul", "ne", "neg", "not_", "invert", "ones", "ones_like",
        "or_", "outer", "pow", "power", "prod", "prod_vjp", "masked_sum", "scatter", "scatter_add", "select", "shape", "sign",
        "sin", "size", "sqrt", "stack", "stack_list", "concatenate_list", "sub", "sum", "sum_initial", "prod_initial",
        "tan", "tanh",
        "to_float", "tril", "triu", "where", "zeros", "zeros_like", "dim", "last_writes",
        "fmod", "floor", "ceil", "trunc", "rint", "isnan",
        "py_abs", "py_round", "py_round_digits", "index_of_max", "index_of_min", "print", "raise", "assert", "real_power", "keep",
        "var", "std", "nanmax", "nanmin", "trace", "trace_embed", "astype", "astype_discrete", "item", "argmax", "argmin",
        "all", "any", "count_nonzero", "cumsum", "cumprod", "diff", "sort", "argsort", "linear_scan", "shift_along",
        "permute"), "fresh"),
    # rules/elementwise_more.py, and rules/math_functions.py (Python scalars: nothing can change them)
    **dict.fromkeys(("sinh", "cosh", "arcsinh", "arccosh", "arctanh", "arcsin", "arccos", "arctan", "arctan2", "hypot",
                     "log1p", "expm1", "log2", "log10", "exp2", "logaddexp", "logaddexp2", "cbrt", "reciprocal", "sinc",
                     "deg2rad", "rad2deg", "fabs", "copysign", "float_power", "positive", "conjugate", "nan_to_num",
                     "round", "fix", "heaviside", "isinf", "isfinite"), "fresh"),
    **{math_op(n): "fresh" for n in [*MATH_DIFFERENTIABLE, *MATH_DISCRETE]},
    **dict.fromkeys(("broadcast_to", "diag", "expand_dims", "ravel", "reshape", "reshape_like", "sum_to", "sum_to_dims",
                     "transpose", "or_zeros_like", "list_of_length", "unstack", "split_like", "list_fill",
                     "convert_float", "convert_discrete", "setitem", "add_at"), "view"),  # np.float64(x) of a float64 array is x
    # ``sum(xs, start)`` of an empty list is ``start`` itself
    **dict.fromkeys(("py_max", "py_min", "py_sum", "py_sum_rows"), "either"),  # (sum of no rows: the start itself)
    **dict.fromkeys(("tensordot", "inner", "vdot", "kron", "take", "take_along_axis", "repeat", "tile", "roll", "pad",
                     "linspace", "tri", "take_transpose", "add_along_axis"), "fresh"),
    **dict.fromkeys(("einsum", "flip", "squeeze", "unpad_edge"), "view"),  # np.einsum('ii->i', x) is a view of x
    # np.linalg: every result a new array (or a numpy scalar)
    **dict.fromkeys(("inv", "solve", "det", "slogdet_sign", "slogdet_logabsdet", "pinv", "norm", "cholesky", "eigvalsh",
                     "eigh_vectors", "qr_q", "qr_r", "svdvals", "svd_u", "svd_vh",
                     "adjugate", "adjugate_tangent", "inv_or_nan"), "fresh"),
    # a call of a function of its own (astad.ad.calls): made one only where its result is an array it made
    **dict.fromkeys(("call", "call_forward", "call_backward"), "fresh"),
    "getitem": "getitem",
    "list": "list",
    **dict.fromkeys(("list_copy", "list_slice"), "list_copy"),
    **dict.fromkeys(("append", "append_in_place", "list_set", "list_set_in_place"), "append"),
    **dict.fromkeys(("list_get", "list_pop"), "element"),
    **dict.fromkeys(("list_init", "list_popped", "list_onehot", "list_scatter_add", "list_zeros_like", "list_unslice"),
                    "view"),
}

#: operations that give a 0-d array (mutable, unlike a numpy scalar) for a scalar result (np.tensordot of
#: two vectors; astype, np.roll and np.tile of a 0-d array)
ZERO_D_ARRAYS = {"where", "select", "zeros", "ones", "full", "zeros_like", "ones_like", "copy", "tensordot", "astype",
                 "astype_discrete", "roll", "tile", "pad"}


def _kind_filter(drop: str, placeholder: str) -> Callable[[frozenset], frozenset]:
    def only(roots: frozenset) -> frozenset:
        out = set()
        for r in roots:
            if r.startswith("P:"):
                out.add(placeholder + r[2:])  # the part of a carried value of this kind
            elif not r.startswith((drop, "PA:", "PL:")) or r.startswith(placeholder):
                out.add(r)
        return frozenset(out)

    return only


#: the roots an in-place update of an array is about (its memory), and those
#: an update of a list is about (which list object it is)
storage = _kind_filter("L:", "PA:")
identity = _kind_filter("A:", "PL:")


_MISSING = object()


class _NotedDict(dict):
    """A dict that notes in an undo log what each write replaces (:meth:`Aliases.snapshot`)."""

    def __init__(self, items: dict, log: list[tuple]) -> None:
        super().__init__(items)
        self.log = log

    def __setitem__(self, key: Any, value: Any) -> None:
        self.log.append((self, key, self.get(key, _MISSING)))
        dict.__setitem__(self, key, value)

    def update(self, other: Any = (), **kw: Any) -> None:  # type: ignore[override]
        for k, v in dict(other, **kw).items():
            self[k] = v


class _NotedSet(set):
    """A set that notes in an undo log each element it gains."""

    def __init__(self, items: Iterable[Any], log: list[tuple]) -> None:
        super().__init__(items)
        self.log = log

    def add(self, item: Any) -> None:
        if item not in self:
            self.log.append((self, item, _MISSING))
            set.add(self, item)

    def __ior__(self, other: Any) -> "_NotedSet":  # type: ignore[override,misc]
        for item in other:
            self.add(item)
        return self


def _undo(log: list[tuple] | None, n: int) -> None:
    """Undo the changes noted in ``log`` after its first ``n`` entries, latest first."""
    while log is not None and len(log) > n:
        container, key, old = log.pop()
        if type(container) is _NotedSet:
            set.discard(container, key)
        elif old is _MISSING:
            dict.__delitem__(container, key)
        else:
            dict.__setitem__(container, key, old)


@dataclass
class _Loop:
    made: set[str] = field(default_factory=set)  # roots allocated while lowering the body
    #: per carried slot, the roots of what an exit that goes on to the next iteration (the body's
    #: end, ``continue``) passes on; ``None`` until one is seen.  What ``break`` or ``return``
    #: passes reaches the loop's results only: no later iteration runs the body with it.
    going_on: list[frozenset] | None = None


@dataclass
class _Check:
    target: frozenset  # the updated value's own roots
    others: frozenset  # the roots of everything else that can be read
    fail: Callable[[str], Exception]
    about: Callable[[frozenset], frozenset]  # the target's roots the update changes (storage, identity)


class Aliases:
    """The roots of the values of one lowering, and the checks waiting for loops to end."""

    def __init__(self) -> None:
        self.of_var: dict[str, frozenset] = {}
        self.of_list: dict[int, tuple[Any, frozenset]] = {}  # id(PyTuple list) -> (the list, its identity roots)
        self.loops: list[_Loop] = []
        self.pending: list[_Check] = []
        self.subst: dict[str, frozenset] = {}  # placeholder -> what flows into it (all iterations merged)
        self.lists = 0
        self.functions: dict[str, tuple[list[str], frozenset, frozenset]] = {}
        self.bodies: list[set[str]] = []  # roots allocated while lowering each function value's body
        self.updates = 0  # in-place updates checked (a call whose lowering checks one is not replayed)
        self.log: list[tuple] | None = None  # the undo log, from the first snapshot on

    # ----------------------------------------------------------------- state

    def snapshot(self) -> tuple[int, int]:
        """A point :meth:`restore` goes back to.  From the first one on, what is changed is noted in an
        undo log (``of_var``, ``subst`` and the open loops' ``made`` become :class:`_Noted` containers),
        so a snapshot copies nothing: a recursion unrolled takes one per level."""
        log = self.log
        if log is None:
            log = self.log = []
            self.of_var, self.subst = _NotedDict(self.of_var, log), _NotedDict(self.subst, log)
        for lp in self.loops:
            if type(lp.made) is not _NotedSet:
                lp.made = _NotedSet(lp.made, log)
        return len(log), len(self.pending)

    def restore(self, snap: tuple[int, int]) -> None:
        n_log, n = snap
        _undo(self.log, n_log)
        del self.pending[n:]

    # ----------------------------------------------------------------- making values

    def made(self, name: str, roots: Iterable[str]) -> None:
        self.of_var[name] = frozenset(roots)

    def fresh(self, name: str, prefix: str = "A:") -> frozenset:
        root = prefix + name
        for lp in self.loops:
            lp.made.add(root)
        for body in self.bodies:
            body.add(root)
        return frozenset((root,))

    def prim(self, var: Any, op: str, args: list, params: dict, immutable: bool) -> None:
        """The roots of ``var = op(args)``."""
        kind = KIND.get(op)
        scalar_result = getattr(var.type, "shape", None) == ()
        if immutable or (kind == "fresh" and scalar_result and op not in ZERO_D_ARRAYS):
            roots: frozenset = frozenset()  # a Python or numpy scalar, which nothing can change
        elif kind == "fresh":  # (self.fresh, inline: the most common, at every binding)
            root = "A:" + var.name
            if self.loops or self.bodies:
                for lp in self.loops:
                    lp.made.add(root)
                for body in self.bodies:
                    body.add(root)
            roots = frozenset((root,))
        elif kind == "getitem":
            scalar = scalar_result and all(
                isinstance(i, (int, np.integer)) or (isinstance(i, tuple) and i[:1] == ("arg",))
                for i in params.get("index", ()))
            copied = any(isinstance(i, tuple) and i[:1] in (("array",), ("mask",)) for i in params.get("index", ()))
            # a numpy scalar (``x[-2]`` of a vector), which nothing can change (``v += 1`` rebinds ``v``), as a
            # fresh scalar's; an array gathered by an integer array or a mask is a new one
            roots = frozenset() if scalar else self.fresh(var.name) if copied else self.roots(args[0])
        elif kind == "view":
            roots = self.roots(args[0])
        elif kind == "either":
            roots = frozenset().union(*[self.roots(a) for a in args])
        elif kind == "list":
            roots = self.fresh(var.name, "L:").union(*[self.roots(a) for a in args])
        elif kind == "list_copy":  # a new list object holding the same elements (which may be lists: then shared)
            held = self.roots(args[0])
            elem = getattr(args[0].type, "elem", None)
            roots = self.fresh(var.name, "L:") | (held if elem is None or type(elem).__name__ == "ListT" else storage(held))
        elif kind == "append":
            roots = self.roots(args[0]) | self.roots(args[1])
        elif kind == "element":  # an element of a list is not the list (unless it is a list itself)
            roots = self.roots(args[0])
            if type(var.type).__name__ != "ListT":
                roots = storage(roots)
        else:
            roots = frozenset((UNKNOWN,))
        self.of_var[var.name] = roots

    def same(self, new: Any, old: Any) -> None:
        """``new`` is ``old`` under another name."""
        self.of_var[new.name] = self.roots(old)

    def new_list(self, value: Any, identity: frozenset | None = None) -> None:
        """A list known element by element that the function made (``[]``, ``[a, b]``);
        ``identity``: the list object it is (after an append), else a new one."""
        if identity is None:
            self.lists += 1
            identity = self.fresh(f"list{self.lists}", "L:")
        self.of_list[id(value)] = (value, identity)

    def converted(self, var: Any, value: Any) -> None:
        """``var`` is the run-time list made of the list ``value`` known element by element: the same object."""
        self.of_var[var.name] = self.roots(value)

    def enter_body(self) -> None:
        """A function value's body is lowered from here (:meth:`exit_body` ends it)."""
        self.bodies.append(set())

    def exit_body(self) -> frozenset:
        return frozenset(self.bodies.pop())

    def function(self, f: Any, params: Any, value: Any, made: frozenset = frozenset()) -> None:
        """A function value (a ``lam``): what its result shares memory with, in terms of its
        parameters; ``made``: the roots its body allocates (new memory at each call)."""
        self.functions[f.name] = ([p.name for p in params], self.roots(value), made)

    def call(self, y: Any, f: Any, args: list) -> None:
        """``y = f(args)`` for a function value ``f``: its parameters are the arguments, and
        what its body allocates is allocated again by this call (two calls share nothing made inside)."""
        names, roots, made = self.functions.get(f.name, ([], frozenset((UNKNOWN,)), frozenset()))
        subst = {"F:" + n: self.roots(a) for n, a in zip(names, args)}
        for r in roots & made:
            prefix = r[:r.index(":") + 1]
            subst[r] = self.fresh(f"{r[len(prefix):]}@{y.name}", prefix)
        self.of_var[y.name] = _apply(roots, subst)

    def caller_list(self, value: Any) -> None:
        self.of_list[id(value)] = (value, frozenset((CALLER_LIST,)))

    def list_identity(self, value: Any) -> frozenset:
        found = self.of_list.get(id(value))
        return found[1] if found is not None and found[0] is value else frozenset((UNKNOWN,))

    def joined(self, result: Any, a: Any, b: Any) -> None:
        """``result`` is ``a`` on one path and ``b`` on the other (an ``if``)."""
        if isinstance(result, PyTuple):
            if result.is_list:
                self.new_list(result, self.identity_of(a) | self.identity_of(b))
            for i, r in enumerate(result.items):
                ai = a.items[i] if isinstance(a, PyTuple) and i < len(a.items) else a
                bi = b.items[i] if isinstance(b, PyTuple) and i < len(b.items) else b
                self.joined(r, ai, bi)
        elif isinstance(result, Var):
            self.of_var[result.name] = self.roots(a) | self.roots(b)

    def identity_of(self, value: Any) -> frozenset:
        if isinstance(value, PyTuple):
            return self.list_identity(value) if value.is_list else frozenset()
        return identity(self.roots(value))

    # ----------------------------------------------------------------- reading

    def roots(self, value: Any) -> frozenset:
        """Everything ``value`` may share memory with (through its elements too)."""
        if isinstance(value, Var):
            return self.of_var.get(value.name, frozenset((UNKNOWN,)))
        if isinstance(value, Const):
            return frozenset((CALLER,)) if isinstance(value.value, np.ndarray) else frozenset()
        if isinstance(value, PyTuple):
            own = self.list_identity(value) if value.is_list else frozenset()
            return own.union(*[self.roots(v) for v in value.items])
        if isinstance(value, PyDict):
            return frozenset().union(*[self.roots(v) for v in value.items])
        if isinstance(value, Ref):
            return self.roots(value.self_value) if value.self_value is not None else frozenset()
        return frozenset()

    # ----------------------------------------------------------------- loops

    def enter_loop(self) -> None:
        self.loops.append(_Loop())

    def carried(self, param: Any, init: Any) -> None:
        """A loop's carried variable: its initial value, or what the body passes on."""
        self.of_var[param.name] = self.roots(init) | {"P:" + param.name}

    def leaving(self, stops: bool, state: list) -> None:
        """The body is left here with ``state`` (one atom per carried slot); ``stops``:
        by ``break`` or ``return``, after which the body does not run again."""
        lp = self.loops[-1]
        if stops:
            return
        roots = [self.roots(a) for a in state]
        lp.going_on = roots if lp.going_on is None else [a | b for a, b in zip(lp.going_on, roots)]

    def exit_loop(self, params: list, outs: list, finals: list) -> None:
        """The body is lowered: resolve its placeholders, check again what waited
        for them, and give the loop's results their roots.  The checks made in the
        body see, at the start of an iteration, what the previous one passed on."""
        lp = self.loops.pop()
        flows = {"P:" + p.name: self.roots(o) for p, o in zip(params, outs)}
        merged = _close(flows, lambda r: r)
        going_on = lp.going_on if lp.going_on is not None and len(lp.going_on) == len(params) else None
        passed = flows if going_on is None else {"P:" + p.name: rs for p, rs in zip(params, going_on)}
        previous = _close(passed, lambda r: r + "'" if r in lp.made else r)
        self.subst.update(merged)
        waiting = self.pending
        self.pending = []
        for check in waiting:
            target, others = _apply(check.target, previous), _apply(check.others, previous)
            self.check(target, others, check.fail, check.about)
        for p, f in zip(params, finals):
            self.of_var[f.name] = _apply(self.of_var[p.name], merged)
        for lp_outer in self.loops:
            lp_outer.made |= lp.made

    # ----------------------------------------------------------------- updates

    def check(self, target: frozenset, others: frozenset, fail: Callable[[str], Exception],
              about: Callable[[frozenset], frozenset]) -> None:
        """Raise ``fail(why)`` unless updating what has roots ``target`` changes
        nothing in ``others``; keep the check for later if a loop's placeholder is in it."""
        target, others = _apply(target, self.subst), _apply(others, self.subst)
        target = about(target)
        if UNKNOWN in target:
            raise fail("astad cannot tell what else shares its memory")
        if CALLER in target or CALLER_LIST in target or any(r.startswith("F:") for r in target):
            raise fail("it is (or shares memory with) an argument, a default or a module constant, which would "
                       "change for the caller too")
        if UNKNOWN in others or target & others:
            raise fail("")
        if any(r.startswith(("P:", "PA:", "PL:")) for r in target | others):
            self.pending.append(_Check(target, others, fail, about))

    def update_array(self, x: Any, others: list[tuple[str, Any]], fail: Callable[[str], Exception]) -> None:
        self._update(self.roots(x), others, fail, storage)

    def update_list(self, xs: Any, others: list[tuple[str, Any]], fail: Callable[[str], Exception]) -> None:
        self._update(self.identity_of(xs), others, fail, identity)

    def _update(self, target: frozenset, others: list[tuple[str, Any]], fail: Callable[[str], Exception],
                about: Callable[[frozenset], frozenset]) -> None:
        self.updates += 1
        resolved = about(_apply(target, self.subst))

        def why(reason: str) -> Exception:
            if reason:
                return fail(reason)
            for label, v in others:  # say which value it would change
                r = _apply(self.roots(v), self.subst)
                if UNKNOWN in r or resolved & r:
                    return fail(label)
            return fail("another value that can still be read shares its memory")

        everything = frozenset().union(*[self.roots(v) for _, v in others])
        self.check(target, everything, why, about)


def _apply(roots: frozenset, subst: dict[str, frozenset]) -> frozenset:
    if not any(r in subst for r in roots):
        return roots
    out: set[str] = set()
    for r in roots:
        out |= subst.get(r, {r})
    return frozenset(out)


def _close(flows: dict[str, frozenset], rename: Callable[[str], str]) -> dict[str, frozenset]:
    """Each placeholder (and its storage and identity parts) as everything that
    flows into it, through the other placeholders of the same loop (a least
    fixpoint), the body's allocations renamed."""
    names = {p[2:] for p in flows}
    parts = {"P:": lambda rs: rs, "PA:": storage, "PL:": identity}

    def refers(r: str) -> tuple[str, str] | None:
        for prefix in parts:
            if r.startswith(prefix) and r[len(prefix):] in names:
                return prefix, r[len(prefix):]
        return None

    res = {p[2:]: {rename(r) for r in rs if refers(r) is None} for p, rs in flows.items()}
    changed = True
    while changed:
        changed = False
        for p, rs in flows.items():
            for r in rs:
                ref = refers(r)
                if ref is not None:
                    new = parts[ref[0]](frozenset(res[ref[1]])) - res[p[2:]]
                    if new:
                        res[p[2:]] |= new
                        changed = True
    out: dict[str, frozenset] = {}
    for name, rs in res.items():
        for prefix, part in parts.items():
            out[prefix + name] = part(frozenset(rs))
    return out
