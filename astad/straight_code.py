"""Whether a function's code is its straight-line ``def``'s, read without compiling the text again.

:mod:`astad.source` checks that the text it reads is the code Python runs by
compiling the text again and comparing the two code objects (some 4 ms for a
500-line function).  For straight-line code (assignments to names, a last
``return``, of names, numbers, operators, attributes and calls of attributes:
:mod:`astad.frontend.straight`) on CPython 3.11, :func:`matches` writes the
instructions CPython's compiler makes of the ``def``'s tree itself (a
compiler of that subset, each name and constant the index of its entry in the
code's own tables) and compares them with the code's, byte for byte.

Equal, the code runs exactly the tree: each instruction is the one the tree
gives there, and each name and constant it reads is the tree's.  Anything
else (another version of Python, a construct outside the subset, a constant
CPython folds another way, a cell variable) answers False, never a wrong
True: the caller then compiles the text, as before.
"""

from __future__ import annotations

import __future__
import ast
import opcode
import sys
import types
from typing import Any

#: the flags of a plain function's code (the compiler sets CO_NESTED inside another, and the module's
#: ``__future__`` flags, which change nothing in straight-line code: no annotations, no ``<>``)
_OPTIMIZED_NEWLOCALS = 0x1 | 0x2
_NESTED = 0x10

_ENABLED = sys.version_info[:2] == (3, 11)

_FUTURE_FLAGS = 0
for _name in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _name).compiler_flag

_OP = opcode.opmap
_CACHES = getattr(opcode, "_inline_cache_entries", None)


def _op(name: str) -> int:
    return _OP.get(name, -1)


_RESUME, _LOAD_FAST, _STORE_FAST, _LOAD_CONST, _LOAD_GLOBAL, _LOAD_ATTR, _LOAD_METHOD, _PRECALL, _CALL_OP, \
    _KW_NAMES, _BINARY_OP, _RETURN_VALUE, _PUSH_NULL, _EXTENDED_ARG = map(_op, (
        "RESUME", "LOAD_FAST", "STORE_FAST", "LOAD_CONST", "LOAD_GLOBAL", "LOAD_ATTR", "LOAD_METHOD", "PRECALL",
        "CALL", "KW_NAMES", "BINARY_OP", "RETURN_VALUE", "PUSH_NULL", "EXTENDED_ARG"))

#: the argument of BINARY_OP for each of Python's binary operators (``opcode._nb_ops``' order)
_NB = {ast.Add: 0, ast.BitAnd: 1, ast.FloorDiv: 2, ast.LShift: 3, ast.MatMult: 4, ast.Mult: 5, ast.Mod: 6,
       ast.BitOr: 7, ast.Pow: 8, ast.RShift: 9, ast.Sub: 10, ast.Div: 11, ast.BitXor: 12}
_UNARY_OPS = {ast.USub: _op("UNARY_NEGATIVE"), ast.UAdd: _op("UNARY_POSITIVE"), ast.Invert: _op("UNARY_INVERT"),
              ast.Not: _op("UNARY_NOT")}


def _unit(op: int, arg: int) -> bytes:
    """The bytes of one instruction: EXTENDED_ARG prefixes for a large argument, then the
    instruction and its inline cache (zeros in ``co_code``)."""
    out = b""
    for shift in (24, 16, 8):
        if arg >> shift:
            out += bytes((_EXTENDED_ARG, (arg >> shift) & 0xFF))
    return out + bytes((op, arg & 0xFF)) + bytes(2 * _CACHES[op])


class _Mismatch(Exception):
    """Not the code of the tree (or not code this module writes)."""


def _key(value: Any) -> tuple:
    """A constant's key among the code's constants: its type and value (a zero by its text: 0.0 is -0.0)."""
    return (type(value), value if value else repr(value))


def matches(code: types.CodeType, fn: ast.FunctionDef, imported: frozenset[str]) -> bool:
    """Whether ``code`` is what CPython 3.11 compiles the straight-line ``def`` ``fn`` to, in a module
    that imports ``imported`` (see the module's docstring); False where this cannot tell."""
    return names_if_matches(code, fn, imported) is not None


def names_if_matches(code: types.CodeType, fn: ast.FunctionDef, imported: frozenset[str]) -> set[str] | None:
    """Where :func:`matches`, the names the body of ``fn`` mentions (those assigned, those read, the
    attributes and the keywords of calls: what :func:`astad.frontend.straight.straight_line` notes, its
    walk of the same nodes); else None."""
    if not _ENABLED or code.co_freevars or code.co_cellvars or code.co_name != fn.name:
        return None
    try:
        return _matches(code, fn, imported)
    except (_Mismatch, KeyError, IndexError, TypeError, AttributeError, RecursionError):
        return None


def _matches(code: types.CodeType, fn: ast.FunctionDef, imported: frozenset[str]) -> set[str] | None:
    a = fn.args
    if a.posonlyargs or a.vararg or a.kwonlyargs or a.kwarg:
        return None
    params = [p.arg for p in a.args]
    if (code.co_argcount != len(params) or code.co_posonlyargcount or code.co_kwonlyargcount
            or list(code.co_varnames[:len(params)]) != params
            or code.co_flags & ~(_NESTED | _FUTURE_FLAGS) != _OPTIMIZED_NEWLOCALS):
        return None
    body = fn.body
    consts = code.co_consts
    first = body[0]
    doc = type(first) is ast.Expr and type(first.value) is ast.Constant and type(first.value.value) is str
    if doc:  # the docstring is the first constant, None where there is none
        if len(body) == 1 or not (consts and type(consts[0]) is str and consts[0] == first.value.value):
            return None
        body = body[1:]
    elif not consts or consts[0] is not None:
        return None
    targets = set()
    for st in body[:-1]:
        if type(st) is not ast.Assign or len(st.targets) != 1 or type(st.targets[0]) is not ast.Name:
            return None
        targets.add(st.targets[0].id)
    local = targets.union(params)
    last = body[-1]
    if type(last) is not ast.Return or last.value is None:
        return None
    varnames = {n: i for i, n in enumerate(code.co_varnames)}
    names = {n: i for i, n in enumerate(code.co_names)}
    const_units = {}
    for i, c in enumerate(consts):
        t = type(c)
        if t is int or t is float or (t is tuple and all(type(s) is str for s in c)):
            const_units.setdefault(_key(c), _unit(_KW_NAMES if t is tuple else _LOAD_CONST, i))
    units: dict[str, bytes] = {}  # a name read -> its instruction's bytes
    attrs: dict[str, bytes] = {}  # an attribute read -> LOAD_ATTR's
    methods: dict[str, bytes] = {}  # an attribute called -> LOAD_METHOD's
    calls: dict[int, bytes] = {}  # a count of arguments -> PRECALL's and CALL's
    others: set[str] = set()  # the names of calls of an imported module's functions, keywords
    out = [_unit(_RESUME, 0)]
    emit = out.append

    def load(name: str) -> bytes:
        if name in local:
            return _indexed(_LOAD_FAST, varnames[name])
        return _indexed(_LOAD_GLOBAL, names[name] << 1)

    def expr(n: Any) -> None:
        cls = type(n)
        if cls is _NAME:
            unit = units.get(n.id)
            if unit is None:
                unit = units[n.id] = load(n.id)
            emit(unit)
        elif cls is _BINOP:
            for side in (n.left, n.right):
                kind = type(side)
                if kind is _NAME:  # (expr's first cases, inline: most operands are names and numbers)
                    unit = units.get(side.id)
                    if unit is None:
                        unit = units[side.id] = load(side.id)
                    emit(unit)
                elif kind is _CONSTANT:
                    v = side.value
                    if type(v) is not float and type(v) is not int:
                        raise _Mismatch
                    emit(const_units[(type(v), v if v else repr(v))])
                else:
                    expr(side)
            emit(_BINARY_UNITS[type(n.op)])
        elif cls is _CONSTANT:
            v = n.value
            if type(v) is not float and type(v) is not int:
                raise _Mismatch
            emit(const_units[(type(v), v if v else repr(v))])
        elif cls is _CALL:
            f = n.func
            if type(f) is not _ATTRIBUTE:
                raise _Mismatch
            base = f.value
            if type(base) is _NAME and base.id in imported:  # (3.11: a function of an imported module is
                others.add(base.id)  # called as an attribute, not a method)
                others.add(f.attr)
                if base.id in local:
                    emit(_PUSH_NULL_UNIT)
                    emit(_indexed(_LOAD_FAST, varnames[base.id]))
                else:
                    emit(_indexed(_LOAD_GLOBAL, names[base.id] << 1 | 1))
                emit(_indexed(_LOAD_ATTR, names[f.attr]))
            else:
                expr(base)
                unit = methods.get(f.attr)
                if unit is None:
                    unit = methods[f.attr] = _indexed(_LOAD_METHOD, names[f.attr])
                emit(unit)
            for a in n.args:
                kind = type(a)
                if kind is _NAME:
                    unit = units.get(a.id)
                    if unit is None:
                        unit = units[a.id] = load(a.id)
                    emit(unit)
                elif kind is _STARRED:
                    raise _Mismatch
                else:
                    expr(a)
            kws = n.keywords
            if kws:
                for k in kws:
                    if k.arg is None:
                        raise _Mismatch
                    others.add(k.arg)
                    expr(k.value)
                emit(const_units[(tuple, tuple([k.arg for k in kws]))])
            count = len(n.args) + len(kws)
            unit = calls.get(count)
            if unit is None:
                unit = calls[count] = _unit(_PRECALL, count) + _unit(_CALL_OP, count)
            emit(unit)
        elif cls is _ATTRIBUTE:
            expr(n.value)
            unit = attrs.get(n.attr)
            if unit is None:
                unit = attrs[n.attr] = _indexed(_LOAD_ATTR, names[n.attr])
            emit(unit)
        elif cls is _UNARY:
            operand = n.operand
            if type(operand) is _CONSTANT:  # (folded by the compiler: -1.0 is a constant)
                v = operand.value
                if type(n.op) is not ast.USub or (type(v) is not float and type(v) is not int):
                    raise _Mismatch
                v = -v
                emit(const_units[(type(v), v if v else repr(v))])
            else:
                expr(operand)
                emit(_UNARY_UNITS[type(n.op)])
        else:
            raise _Mismatch

    for st in body:
        expr(st.value)
        emit(_indexed(_STORE_FAST, varnames[st.targets[0].id]) if type(st) is ast.Assign else _RETURN_UNIT)
    if b"".join(out) != code.co_code:
        return None
    return targets.union(units, attrs, methods, others)


_NAME, _BINOP, _CONSTANT, _CALL, _ATTRIBUTE, _UNARY, _STARRED = (ast.Name, ast.BinOp, ast.Constant, ast.Call,
                                                                ast.Attribute, ast.UnaryOp, ast.Starred)
def _indexed(op: int, arg: int) -> bytes:
    """:func:`_unit`, the common cases (an argument below 65536) without its loop."""
    if arg < 256:
        return bytes((op, arg)) + _ZEROS[op]
    if arg < 65536:
        return bytes((_EXTENDED_ARG, arg >> 8, op, arg & 0xFF)) + _ZEROS[op]
    return _unit(op, arg)


#: the inline cache after each instruction (zeros in ``co_code``)
_ZEROS = [bytes(2 * n) for n in _CACHES] if _ENABLED else []
_BINARY_UNITS = {cls: _unit(_BINARY_OP, nb) for cls, nb in _NB.items()} if _ENABLED else {}
_UNARY_UNITS = {cls: _unit(op, 0) for cls, op in _UNARY_OPS.items()} if _ENABLED else {}
_PUSH_NULL_UNIT = _unit(_PUSH_NULL, 0) if _ENABLED else b""
_RETURN_UNIT = _unit(_RETURN_VALUE, 0) if _ENABLED else b""
