"""Lowering subscripts: ``x[i, a:b]`` on arrays (one ``getitem``, a slice
of a slice composed into one index), lists, tuples and dicts.
"""

from __future__ import annotations

import functools
from typing import Any

import libcst as cst
import numpy as np

from .. import rules
from ..aliases import KIND
from ..errors import UnsupportedSyntaxError
from ..values import PyDict, PyTuple
from ..ir import Atom, Const, ListT, Num, Prim, TupleT, Var
from .scopes import Value, is_list_value
from .syntax import adds_at
from .core import LowererCore


class Indexing(LowererCore):
    """Subscripts of arrays, lists, tuples and dicts."""

    def expr_Subscript(self, node: cst.Subscript) -> Value:
        base = self.expr(node.value)
        if isinstance(base, PyTuple):
            return self.tuple_subscript(base, node)
        if isinstance(base, PyDict):
            return self.dict_subscript(base, node)
        x = self.atom(base, node.value)
        if isinstance(x.type, ListT):
            if len(node.slice) != 1:
                raise self.type_error("a list takes a single integer index or a slice", node, "xs[i], xs[a:b]")
            s = node.slice[0].slice
            if isinstance(s, cst.Slice):  # xs[a:b:c]: a new list (bounds known when transforming)
                bounds = [None if e is None else self.static(self.expr(e), e, "slice bound of a list")
                          for e in (s.lower, s.upper, s.step)]
                return self.emit("list_slice", [x], {k: v for k, v in zip(("lower", "upper", "step"), bounds)
                                                     if v is not None})
            i = self.atom(self.expr(s.value), node)
            return self.emit("list_get", [x, i])
        index: list[Any] = []
        args: list[Atom] = [x]
        parts = self.index_parts(node)
        for s in parts:
            index.append(self.index_item(s, args, len(parts) == 1))
        if len(args) == 1:
            composed = self.compose_index(x, tuple(index))
            if composed is not None:
                args, index = [composed[0]], list(composed[1])
        return self.emit("getitem", args, {"index": tuple(index)})

    def assign_item(self, target: cst.Subscript, value: Value, op: str | None = None, symbol: str = "") -> None:
        """``y[index] = v`` (``op``: ``y[index] += v`` and the like, numpy's ``y[index] = y[index] + v``)
        on an array the function made: the name is bound to ``setitem(y, v, *ix)``, a functional update
        that is right only when nothing else that can be read shares ``y``'s memory (:mod:`astad.aliases`).
        On a list (``xs[i] = v``) and through lists and tuples (``ys[0][1] = v``): :meth:`assign_nested`."""
        subs = [target]
        while isinstance(subs[-1].value, cst.Subscript):
            subs.append(subs[-1].value)  # type: ignore[arg-type]
        if not isinstance(subs[-1].value, cst.Name):
            raise self.syntax_error("only an element of an array or a list named by a variable can be assigned to",
                                    "name the array first: y = ...; y[i] = v", target)
        name = subs[-1].value.value
        base = self.expr(subs[-1].value)
        if len(subs) > 1 or is_list_value(base) or isinstance(base, PyTuple):
            return self.assign_nested(name, base, subs[::-1], value, op, symbol)
        if isinstance(base, PyDict) or not (isinstance(base, Var) and isinstance(base.type, Num) and base.type.shape):
            what = "a dict" if isinstance(base, PyDict) else "this value"
            raise self.syntax_error(f"assigning to an element of {what} is not supported; only arrays and lists are "
                                    "updated", "build a new one", target)
        y = self.updated_array(base, name, target, value, op, symbol, self.readable_besides(name))
        self.scope.env[name] = self.name_result(y, name)

    def updated_array(self, y: Var, name: str, target: cst.Subscript, value: Value, op: str | None, symbol: str,
                      others: list[tuple[str, Value]]) -> Var:
        """The array ``y`` (named ``name`` in messages) after ``target = value``, checked against ``others``."""
        loc = self.loc(target)

        def fail(why: str) -> Exception:
            return UnsupportedSyntaxError(f"`{name}[...] {symbol}= ...` changes the array in place, and {why}", loc,
                                          self.view_hint(y, name, symbol, why) or
                                          f"update a copy: {name} = {name}.copy() first, then {name}[...] {symbol}= ...")

        self.aliases.update_array(y, others, fail)
        args: list[Atom] = [y]
        parts = self.index_parts(target)
        index = tuple(self.index_item(s, args, len(parts) == 1) for s in parts)
        v = self.atom(value, target)
        self.node = target
        if op is not None:
            v = self.emit(op, [self.emit("getitem", args, {"index": index}), v])
        return self.emit("setitem", [y, v, *args[1:]], {"index": rules.shift_index(index, 1)})

    def view_hint(self, y: Atom, name: str, symbol: str, why: str) -> str | None:
        """What to write where an update of ``name`` (value ``y``) is refused because the array it is a
        view of (``v = y[1:]``, ``for row in Y``) shares its memory: an update of that array itself, by
        index (a copy of the view, the generic hint, would leave it unchanged); None where it is not so."""
        x = y
        for _ in range(8):  # a view of a view ...: up to the array a name holds
            bind = next((b for b in reversed(self.binds) if b.targets == (x,)), None)
            if bind is None or not isinstance(bind.rhs, Prim) or KIND.get(bind.rhs.op) not in ("getitem", "view") \
                    or not isinstance(bind.rhs.args[0], Var):
                return None
            x = bind.rhs.args[0]
            base = next((k for k, v in self.scope.env.items() if k != name and v == x), None)
            if base is not None:
                if not why.startswith(f"`{base}` "):
                    return None
                rows = any(v == x for _, v in self.iterated)
                return (f"update `{base}` itself through an index: `{base}[...] {symbol}= ...` at the elements "
                        f"`{name}` views" + (f" (over its rows: `for i in range(len({base})):` and "
                                             f"`{base}[i] {symbol}= ...`)" if rows else "") +
                        f"; a copy of `{name}` would leave `{base}` unchanged")
        return None

    def assign_nested(self, name: str, base: Value, subs: list[cst.Subscript], value: Value, op: str | None,
                      symbol: str) -> None:
        """``xs[i] = v`` on a list, and ``ys[0][1] = v`` through lists and tuples known element by
        element (``subs``: the subscripts from the name outwards): the object the last subscript
        changes (a list, or an array) must be seen by nothing else that can still be read (another
        name, another element of the lists on the way, a function, the caller), as for ``append``;
        the lists on the way are rebuilt around the changed element (each keeps its identity)."""
        label = cst.Module([]).code_for_node(subs[-1])
        containers, picks, others = [base], [], self.readable_besides(name)
        for s in subs[:-1]:
            c = containers[-1]
            i = self.static_pick(c, s, label)
            others += [(f"another element of `{cst.Module([]).code_for_node(s.value)}` holds it", item)
                       for k, item in enumerate(c.items) if k != i]  # type: ignore[union-attr]
            containers.append(c.items[i])  # type: ignore[union-attr]
            picks.append(i)
        c, last = containers[-1], subs[-1]
        if isinstance(c, Var) and isinstance(c.type, Num) and c.type.shape:
            new: Value = self.updated_array(c, cst.Module([]).code_for_node(last.value), last, value, op, symbol,
                                            others)
        elif is_list_value(c):
            new = self.updated_list(c, last, label, value, op, symbol, others)
        else:
            what = ("a tuple (tuples cannot be changed)" if isinstance(c, PyTuple) else
                    "a dict" if isinstance(c, PyDict) else "this value")
            raise self.type_error(f"assigning to an element of {what} is not supported; arrays and lists are "
                                  "updated", last, "build a new one: t = t[:i] + (v,) + t[i + 1:]"
                                  if isinstance(c, PyTuple) else "build a new one")
        for c, i in zip(reversed(containers[:-1]), reversed(picks)):
            assert isinstance(c, PyTuple)
            rebuilt = PyTuple(c.items[:i] + (new,) + c.items[i + 1:], c.is_list, c.fields, c.cls)
            if c.is_list:
                self.aliases.new_list(rebuilt, self.aliases.list_identity(c))
            new = rebuilt
        self.scope.env[name] = self.name_result(new, name) if isinstance(new, Var) else new

    def static_pick(self, c: Value, s: cst.Subscript, label: str) -> int:
        """The element of ``c`` that ``s`` (``c[k]`` on the way to an assignment ``label``) picks: ``c``
        a list or tuple known element by element, ``k`` an int known when transforming."""
        if isinstance(c, PyTuple) and len(s.slice) == 1 and isinstance(s.slice[0].slice, cst.Index):
            k = self.static(self.expr(s.slice[0].slice.value), s, "index")
            if isinstance(k, int) and not isinstance(k, bool) and -len(c.items) <= k < len(c.items):
                return k % len(c.items)
            raise self.type_error(f"index {k!r} is out of range for a list or tuple of {len(c.items)}", s)
        if isinstance(c, Var) and isinstance(c.type, ListT):
            hint = "take the element out, update a copy and put it back: row = ys[i].copy(); row[j] = v; ys[i] = row"
            why = "a list built at run time may hold one object twice, which the update would change"
        elif isinstance(c, Var) and isinstance(c.type, Num) and c.type.shape:
            hint, why = "one index per axis: y[i, j] = v", "it writes through a view of the array"
        else:
            hint, why = "name the element first", "astad updates an element of a list or tuple known element by element"
        raise self.syntax_error(f"`{label} = ...` is not supported here: {why}", hint, s)

    def updated_list(self, c: Value, target: cst.Subscript, label: str, value: Value, op: str | None, symbol: str,
                     others: list[tuple[str, Value]]) -> Value:
        """The list ``c`` after ``target = value`` (``xs[i] = v``, ``xs[i] += v``): a list known element by
        element with that element replaced (an int index known when transforming), else ``list_set``."""
        loc = self.loc(target)
        hint = "build a new list: xs = xs[:i] + [v] + xs[i + 1:]"

        def fail(why: str) -> Exception:
            return UnsupportedSyntaxError(f"`{label} {symbol}= ...` changes the list in place, and {why}", loc, hint)

        if len(target.slice) != 1 or not isinstance(target.slice[0].slice, cst.Index):
            raise self.syntax_error("a list's element is assigned by one integer index (not a slice)", hint, target)
        self.aliases.update_list(c, others + self.held_by_itself(c), fail)
        index_node = target.slice[0].slice.value
        i = self.atom(self.expr(index_node), index_node)
        if not (isinstance(i.type, Num) and i.type.shape == () and np.dtype(i.type.dtype).kind in "iu"):
            raise self.type_error(f"list indices must be integers, not {i.type}", index_node, "xs[i] with an int i")
        known = i.value if isinstance(i, Const) and i.name is None else i.type.value
        if isinstance(c, PyTuple) and isinstance(known, (int, np.integer)) and not isinstance(known, bool):
            k = int(known)
            if not -len(c.items) <= k < len(c.items):
                raise self.type_error(f"list assignment index {k} is out of range for a list of {len(c.items)}", target)
            k %= len(c.items)
            v = value if op is None else self.augmented(c.items[k], value, op, symbol, label, target,
                                                        others + [("another element of the list holds it", item)
                                                                  for j, item in enumerate(c.items) if j != k])
            new = PyTuple(c.items[:k] + (v,) + c.items[k + 1:], is_list=True)
            self.aliases.new_list(new, self.aliases.list_identity(c))
            return new
        if isinstance(c, PyTuple) and len({v.type if isinstance(v, (Var, Const)) else None
                                                 for v in c.items + (value,)}) > 1:
            raise self.type_error(f"`{label} = ...` with an index known only when the function runs needs a list "
                                  "whose elements (and the value assigned) have one type (ints known when "
                                  "transforming count as types of their own)", target,
                                  "elements of one type (all floats, or arrays of one shape), or an index known "
                                  "when transforming")
        xs = self.dynamic_list(c, target) if isinstance(c, PyTuple) else c
        assert isinstance(xs, Var)
        v = self.atom(value, target)
        if op is not None:
            element = self.emit("list_get", [xs, i])
            if isinstance(element.type, Num) and not element.type.py:  # an array (0-d too) changes in place
                self.check_element_in_place(element, xs, label, symbol, target, others)
            v = self.emit(op, [element, v])
        self.node = target
        return self.emit("list_set", [xs, v, i])

    @staticmethod
    def held_by_itself(c: Value) -> list[tuple[str, Value]]:
        """The elements of a list known element by element, as values an update of the list must not
        change: one that holds the list (``xs.append(xs)``, ``xs[0] = xs``) would see the change too."""
        return [("the list holds itself (an element is the list or holds it)", item) for item in c.items] \
            if isinstance(c, PyTuple) else []

    def check_element_in_place(self, element: Atom, xs: Var, label: str, symbol: str, target: cst.CSTNode,
                               others: list[tuple[str, Value]]) -> None:
        """``xs[i] += v`` on a list built at run time: ``xs[i]`` may be an array (a 0-d one too), which
        ``+=`` changes in place; accepted where its elements are numbers (numpy scalars) or arrays that
        nothing else holds, the other elements included (astad cannot tell one element from another)."""
        loc = self.loc(target)

        def fail(why: str) -> Exception:
            return UnsupportedSyntaxError(f"`{label} {symbol}= ...` may change an array (a 0-d one too) that the list "
                                          f"holds in place, and {why}", loc, f"{label} = {label} {symbol} ... "
                                          "(a new value)")

        self.aliases.update_array(element, others + [("the list may hold it as another element too", xs)], fail)

    def augmented(self, old: Value, value: Value, op: str, symbol: str, label: str, target: cst.Subscript,
                  others: list[tuple[str, Value]]) -> Atom:
        """``xs[k] += v`` on a list's element ``old``: Python's ``old += v`` (in place on an array, which
        nothing else may see then), stored back."""
        a = self.atom(old, target)
        if isinstance(a.type, Num) and not a.type.py:
            loc = self.loc(target)

            def fail(why: str) -> Exception:
                return UnsupportedSyntaxError(f"`{label} {symbol}= ...` changes the array in place, and {why}", loc,
                                              f"{label} = {label} {symbol} v (a new array)")

            self.aliases.update_array(a, others, fail)
        new = self.emit(op, [a, self.atom(value, target)])
        if isinstance(a.type, Num) and a.type.shape and (new.type.shape != a.type.shape
                                                         or new.type.dtype != a.type.dtype):
            raise self.type_error(f"in-place `{symbol}=` cannot change {a.type} into {new.type}", target,
                                  f"{label} = {label} {symbol} v")
        return new

    def update(self, name: str, y: Var, index: tuple, args: list[Atom], v: Atom) -> None:
        """``name`` bound to ``setitem(y, v, *args[1:])``: ``y`` with ``y[index]`` replaced."""
        new = self.emit("setitem", [y, v, *args[1:]], {"index": rules.shift_index(index, 1)})
        self.scope.env[name] = self.name_result(new, name)

    def assign_indexed(self, name: str, y: Var, index: tuple, args: list[Atom], value: cst.BaseExpression,
                       node: cst.CSTNode) -> None:
        """``y[index] = value`` for an index made here (``np.put_along_axis``), with the alias checks of an update."""
        loc = self.loc(node)

        def fail(why: str) -> Exception:
            return UnsupportedSyntaxError(f"np.put_along_axis changes `{name}` in place, and {why}", loc,
                                          f"update a copy: {name} = {name}.copy() first")

        self.aliases.update_array(y, self.readable_besides(name), fail)
        v = self.atom(self.expr(value), node)
        self.node = node
        self.update(name, y, index, args, v)

    def is_put_along_axis(self, node: cst.BaseExpression) -> bool:
        """Whether an expression statement is ``np.put_along_axis(...)`` (an update in place)."""
        if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                and node.func.attr.value == "put_along_axis"):
            return False
        func = self.expr(node.func)
        return getattr(func, "obj", None) is np.put_along_axis

    def put_along_axis(self, node: cst.Call) -> None:
        """``np.put_along_axis(y, idx, v, axis)`` as ``y[ix] = v``, where ``ix`` indexes
        ``idx`` along ``axis`` and every other axis by its position (numpy's definition):
        the same functional update, alias checks and derivative as ``y[...] = v``."""
        names = ("arr", "indices", "values", "axis")
        given = dict(zip(names, node.args)) | {a.keyword.value: a for a in node.args if a.keyword is not None}
        if any(a.star for a in node.args) or set(given) != set(names):
            raise self.type_error("np.put_along_axis takes arr, indices, values and axis", node,
                                  "np.put_along_axis(y, idx, v, axis=1)")
        target = given["arr"].value
        if not isinstance(target, cst.Name):
            raise self.syntax_error("np.put_along_axis updates an array named by a variable", "y = ...; "
                                    "np.put_along_axis(y, idx, v, axis=0)", target)
        y = self.expr(target)
        idx = self.atom(self.expr(given["indices"].value), node)
        axis = self.static(self.expr(given["axis"].value), node, "axis")
        if not (isinstance(y, Var) and isinstance(y.type, Num) and y.type.shape and isinstance(idx.type, Num)
                and idx.type.ndim == y.type.ndim and np.dtype(idx.type.dtype).kind in "iu" and isinstance(axis, int)
                and -y.type.ndim <= axis < y.type.ndim):
            raise self.type_error("np.put_along_axis needs an array, integer indices of as many dimensions and an "
                                  "int axis", node, "np.put_along_axis(y, idx, v, axis=1) with idx.ndim == y.ndim")
        axis %= y.type.ndim
        args: list[Atom] = [y]
        index = []
        for d in range(y.type.ndim):
            if d == axis:
                args.append(idx)
            else:  # np.arange(y.shape[d]) along axis d, length 1 along the others
                size = y.type.shape[d]
                along = self.emit("arange", [Const.integer(size) if size is not None else self.emit("dim", [y], {"axis": d})])
                args.append(self.emit("reshape", [along] + [Const.integer(-1 if k == d else 1) for k in range(y.type.ndim)]))
            index.append(("array", len(args) - 1))
        self.assign_indexed(target.value, y, tuple(index), args, given["values"].value, node)

    def is_add_at(self, node: cst.BaseExpression) -> bool:
        """Whether an expression statement is ``np.add.at(...)`` (a scatter-add in place)."""
        if not (isinstance(node, cst.Call) and adds_at(node)):
            return False
        func = self.expr(node.func.value)  # type: ignore[attr-defined]
        return getattr(func, "obj", None) is np.add

    def add_at(self, node: cst.Call) -> None:
        """``np.add.at(y, idx, v)``: ``y[idx] += v`` with a repeated index added each time, on an array
        the function made (the alias checks of ``y[...] += v``): ``y`` is bound to ``add_at(y, v, ...)``
        (rules/updates.py), printed in place where nothing else reads ``y``."""
        if len(node.args) != 3 or any(a.keyword is not None or a.star for a in node.args):
            raise self.type_error("np.add.at takes the array, the indices and the values, by position", node,
                                  "np.add.at(y, idx, v)")
        target, where, values = (a.value for a in node.args)
        if not isinstance(target, cst.Name):
            raise self.syntax_error("np.add.at updates an array named by a variable", "y = ...; np.add.at(y, idx, v)",
                                    target)
        name = target.value
        y = self.expr(target)
        if not (isinstance(y, Var) and isinstance(y.type, Num) and y.type.shape):
            raise self.type_error("np.add.at needs an array the function made", node, "y = np.zeros(n); "
                                  "np.add.at(y, idx, v)")
        loc = self.loc(node)

        def fail(why: str) -> Exception:
            return UnsupportedSyntaxError(f"np.add.at changes `{name}` in place, and {why}", loc,
                                          self.view_hint(y, name, "+", why) or
                                          f"update a copy: {name} = {name}.copy() first, then np.add.at({name}, ...)")

        self.aliases.update_array(y, self.readable_besides(name), fail)
        parts = ([cst.Index(e.value) for e in where.elements] if isinstance(where, cst.Tuple) and where.elements
                 else [cst.Index(where)])
        args: list[Atom] = [y]
        index = tuple(self.index_item(s, args, len(parts) == 1) for s in parts)
        v = self.atom(self.expr(values), values)
        self.node = node
        picked = self.emit("getitem", args, {"index": index})
        selection = picked.type
        assert isinstance(selection, Num) and isinstance(v.type, Num)
        if v.type.shape != selection.shape:
            if not rules.updates.fits(v.type.shape, selection.shape):
                raise self.type_error(f"np.add.at: values of shape {v.type.shape} do not fit the selection's shape "
                                      f"{selection.shape}", values, "values of the selection's shape")
            if v.type.shape and any(isinstance(p, tuple) and p[0] == "array" and len(args[p[1]].type.shape) > 1
                                    for p in index):  # type: ignore[union-attr]
                # numpy 2.x (2.4 checked): np.add.at(y, [[0, 1], [2, 3]], v) with v of shape (2,) reads past v's
                # memory (garbage in y); a broadcast view of v, of the selection's shape, is added as documented
                raise self.type_error("np.add.at: values broadcast over indices of more than one dimension (numpy "
                                      "adds memory past the values' end in some of these)", values,
                                      f"values of the selection's shape: np.broadcast_to(v, {selection.shape})")
            v = self.emit("broadcast_to", [v, Const.literal(selection.shape, TupleT(tuple(
                Num((), "int64", py=True, value=d) for d in selection.shape)))]) if selection.known_shape else \
                self.emit("add", [self.emit("zeros_like", [picked]), v])  # (a mask's selection: its size at run time)
        if not np.can_cast(np.result_type(y.type.dtype, v.type.dtype), y.type.dtype, "same_kind"):
            raise self.type_error(f"np.add.at: numpy cannot add {v.type.dtype} values into an array of "
                                  f"{y.type.dtype} (casting rule 'same_kind')", node,
                                  f"{name} = {name}.astype(np.float64) first")
        new = self.emit("add_at", [y, v, *args[1:]], {"index": rules.shift_index(index, 1)})
        self.scope.env[name] = self.name_result(new, name)

    def compose_index(self, x: Atom, index: tuple) -> tuple[Atom, tuple] | None:
        """``y[a:b][i]`` (first axis, constant bounds) as one index of ``y``: the
        cotangent then goes to ``y`` in one step, not through a chain of slices."""
        if len(index) != 1 or not isinstance(x, Var):
            return None
        d = self.definition_of(x)
        if d is None or not (isinstance(d.rhs, Prim) and d.rhs.op == "getitem" and len(d.rhs.args) == 1):
            return None
        inner = d.rhs.param("index")
        y = d.rhs.args[0]
        n = y.type.shape[0] if isinstance(y.type, Num) and y.type.shape else None
        if not (isinstance(n, int) and len(inner) == 1 and isinstance(inner[0], tuple) and inner[0][0] == "slice"
                and all(v is None or isinstance(v, int) for v in inner[0][1:])):
            return None
        outer = index[0]
        rows = range(n)[slice(*inner[0][1:])]
        if isinstance(outer, int) and not isinstance(outer, bool):
            return (y, (rows[outer],)) if -len(rows) <= outer < len(rows) else None
        if isinstance(outer, tuple) and outer[0] == "slice" and all(v is None or isinstance(v, int) for v in outer[1:]):
            r = rows[slice(*outer[1:])]
            stop = r.stop if r.stop >= 0 else None
            return y, (("slice", r.start, stop, r.step if r.step != 1 else None),)
        return None

    def dict_subscript(self, base: PyDict, node: cst.Subscript) -> Value:
        s = node.slice[0].slice if len(node.slice) == 1 else None
        if not isinstance(s, cst.Index):
            raise self.syntax_error("a dict takes a single key", "d['w']", node)
        key = self.static(self.expr(s.value), s.value, "dict key")
        if key not in base.keys:
            raise self.type_error(f"the dict has no key {key!r}; its keys are {', '.join(map(repr, base.keys))}", node)
        return base.items[base.keys.index(key)]

    def tuple_subscript(self, base: PyTuple, node: cst.Subscript) -> Value:
        if len(node.slice) != 1:
            raise self.syntax_error("a tuple takes a single index", "t[i] or t[a:b]", node)
        s = node.slice[0].slice
        if isinstance(s, cst.Slice):
            bounds = [None if b is None else self.static(self.expr(b), b, "slice bound") for b in (s.lower, s.upper, s.step)]
            if not base.is_list:
                return PyTuple(base.items[slice(*bounds)])
            return self.new_list(base.items[slice(*bounds)])
        index_value = self.expr(s.value)
        if base.is_list and isinstance(index_value, Var):
            return self.emit("list_get", [self.dynamic_list(base, node), index_value])
        if isinstance(index_value, Var) and isinstance(index_value.type, Num) and index_value.type.value is None \
                and index_value.type.dtype in ("int64", "int32") and not index_value.type.shape:
            raise self.type_error(
                f"a tuple of {len(base.items)} items indexed by an int known only "
                "when the function runs: astad keys its code by the arguments' types, not by the values of ints, "
                "so it cannot pick the item when transforming", s.value,
                "pick in the code, `fs[0](x) if k == 0 else fs[1](x)`; or fix k when transforming, "
                "astad.grad(functools.partial(f, k)) with k the first parameter; or a list of arrays, [a, b][k]")
        i = self.static(index_value, s.value, "tuple index")
        if not isinstance(i, int) or not -len(base.items) <= i < len(base.items):
            raise self.type_error(f"tuple index {i!r} is out of range for a tuple of {len(base.items)}", node)
        return base.items[i]

    def index_parts(self, node: cst.Subscript) -> list[cst.BaseSlice]:
        """The parts of an index: ``y[(i, j)]`` is ``y[i, j]`` (numpy reads a tuple as one index per axis)."""
        if len(node.slice) == 1:
            s = node.slice[0].slice
            if type(s) is cst.Index and type(s.value) is cst.Tuple and s.value.elements:
                for e in s.value.elements:
                    if isinstance(e, cst.StarredElement):
                        raise self.syntax_error("`*` unpacking is not supported", "explicit elements", e)
                return [cst.Index(e.value) for e in s.value.elements]
        return [el.slice for el in node.slice]

    def index_item(self, s: cst.BaseSlice, args: list[Atom], whole: bool = False) -> Any:
        """One part of an index (``whole``: the only one)."""
        if type(s) is cst.Slice:  # (`type(...) is`: libcst's classes are abstract-based, isinstance costs more)
            return ("slice", *(self.index_int(b, args) for b in (s.lower, s.upper, s.step)))
        v = s.value  # type: ignore[attr-defined]
        if type(v) is cst.Name and v.value == "None":
            return None
        if type(v) is cst.Attribute and v.attr.value == "newaxis":
            got = self.expr(v)
            if isinstance(got, Const) and got.value is None:
                return None
        if type(v) is cst.Ellipsis:
            return Ellipsis
        return self.index_int(v, args, arrays=True, whole=whole)

    def index_int(self, node: cst.BaseExpression | None, args: list[Atom], arrays: bool = False,
                  whole: bool = False) -> Any:
        """A slice bound or an index: an int (an integer array or a boolean mask where ``arrays``)."""
        if node is None:
            return None
        value = self.expr(node)
        if whole and isinstance(value, PyTuple) and not value.is_list:
            raise self.type_error("a tuple named as the whole index: numpy reads it as one index per axis", node,
                                  "the indices themselves, y[i, j], or a list as an integer array, y[[i, j]]")
        if arrays and isinstance(value, PyTuple):  # x[[0, 2]], x[(0, 2), 1]: the sequence as an integer array
            value = self.emit("stack", [self.atom(v, node) for v in value.items], {"axis": 0}) if value.items else value
        a = self.atom(value, node)
        t = a.type
        if arrays and isinstance(t, Num) and t.shape and _kind(t.dtype) in "iub":
            args.append(a)
            return ("mask" if t.dtype == "bool" else "array", len(args) - 1)
        if not (isinstance(t, Num) and t.shape == () and _kind(t.dtype) in "iu"):
            raise self.type_error(f"indices must be integers, not {t}", node,
                                  "integers, slices, None, integer arrays or boolean masks of the indexed axes")
        if isinstance(a, Const) and a.name is None:
            return int(a.value)
        args.append(a)
        return ("arg", len(args) - 1)


@functools.lru_cache(maxsize=None)
def _kind(dtype: str) -> str:
    """``np.dtype(dtype).kind``, once per dtype (an index is looked at for every subscript)."""
    return np.dtype(dtype).kind
