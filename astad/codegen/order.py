"""Python's order of evaluation kept for operations that may raise.

Codegen inlines a temporary read once into the expression reading it, which moves its computation to
where it is read: past the lines printed meanwhile, and, within one expression, into the order of the
operands.  For most operations that changes nothing one could see; for two that may raise it changes
which raises first (``h(b=math.log(x), a=1.0 / x)`` at ``x = 0.0``: Python raises the ValueError of the
logarithm, an expression ``1.0 / x + math.log(x)`` the ZeroDivisionError).  So a printer keeps the
names of its pending inlined temporaries whose expressions may raise (``raising``): before a binding
whose expression may raise is printed (assigned or kept to be inlined), those it does not read are
assigned, in the order they were bound, but those that may raise only the same exception as it (two
divisions: ZeroDivisionError whichever comes first).  Then the expressions pending that may raise may
raise one same exception, and each is computed before anything that may raise another after it: an
expression evaluates its operands (each pending one bound before it) before its own operation.

Which operations may raise: where the result is a Python number, anything but ``+ - *``, negation and
a few others (``1.0 / 0.0`` and ``math.log(0.0)`` raise); where it is a numpy value, numpy's linear
algebra (a singular matrix); numpy's arithmetic does not (its errors are warnings by default:
``np.log(0.0)`` is ``-inf``).  Not looked at: numpy set to raise (``np.seterr``); an element of a list
or tuple, or a pop, of a constant index (an IndexError whichever comes first).
"""

from __future__ import annotations

from typing import Any, Iterable

from ..ir import Num, Prim, Var

#: operations that may raise of numpy values (of the types inferred: numpy's arithmetic does not)
NUMPY_RAISING = frozenset({"inv", "solve", "pinv", "cholesky", "lstsq", "eig", "eigh", "eigvals", "eigvalsh", "svd",
                           "qr", "matrix_power", "tensorsolve", "tensorinv"})

#: operations that never raise of Python numbers (an overflow of ``*`` is ``inf``)
PYTHON_SAFE = frozenset({"add", "sub", "mul", "neg", "positive", "abs", "maximum", "minimum", "conjugate", "tanh",
                         "arctan", "isnan", "isinf", "isfinite", "shape", "dim", "len", "size", "list_len"})

#: the exception of operations of Python numbers that divide, and of an element of an index known when the
#: code runs (``x[i]``): two expressions that may raise the same one only may be computed in either order
ZERO, INDEX = "ZeroDivisionError", "IndexError"
#: what any other operation that may raise may raise
ANY = "any"
_DIVIDING = frozenset({"div", "floordiv", "mod"})
#: the items of an index template (:mod:`astad.rules.indexing`) known when the code runs
_RUNTIME = (("arg",), ("array",), ("mask",))


def python_number(t: Any) -> bool:
    """Whether a value of type ``t`` is (or may be) a Python number: Python's semantics, a domain error raises."""
    return type(t) is Num and (t.py or t.weak)


def raises(op: str, python: bool) -> str | None:
    """What operation ``op`` may raise, of a Python number (``python``) or numpy value: None, ZERO or ANY."""
    if python:
        return None if op in PYTHON_SAFE else ZERO if op in _DIVIDING else ANY
    return ANY if op in NUMPY_RAISING else None


def may_raise(rhs: Prim, t: Any) -> str | None:
    """What ``rhs`` (an operation of result type ``t``) may raise (see the module docstring): None, ZERO or ANY.
    An element ``x[i]`` of an index known only when the code runs may be out of range."""
    if rhs.op == "getitem":
        return INDEX if any(type(it) is tuple and it[:1] in _RUNTIME for it in rhs.param("index")) else None
    if rhs.op == "to_float" and all(_floating(getattr(a, "type", None)) for a in rhs.args):
        return None  # (``float(x)`` of a float: an int's may overflow)
    what = raises(rhs.op, python_number(t))
    return _of_ints(rhs) or what if what is ZERO else what


def _of_ints(rhs: Prim) -> str | None:
    """A division of Python numbers with an int operand (not a constant) may raise OverflowError too: an int
    too large for a float (``x / 10 ** 400``; ``//`` and ``%`` of a float by it; ``/`` of two ints).  What it
    may raise is then named after its operation and int operands: two such divisions of the same ints
    raise the same (``a / n`` and ``b / n``: ZeroDivisionError or OverflowError, as n), in either order."""
    names = [a.name if type(a) is Var and type(a.type) is Num and not _floating(a.type) else "" for a in rhs.args]
    ints = sum(1 for n in names if n)
    if not ints or (rhs.op != "div" and ints == len(names)):  # (``//`` and ``%`` of ints do not overflow)
        return None
    return f"{ZERO} or OverflowError: {rhs.op} of {', '.join(names)}"


def _floating(t: Any) -> bool:
    return type(t) is Num and t.dtype.startswith("float")


def joined(a: str | None, b: str | None) -> str | None:
    """What an expression may raise of two parts that may raise ``a`` and ``b``."""
    return b if a is None or a == b else a if b is None else ANY


def keep_order(p: Any, reads: Iterable[str], own: str | None, loc: Any) -> None:
    """Before a binding (at ``loc``) whose operation may raise ``own`` is printed: where its expression may
    raise, assign printer ``p``'s pending inlined temporaries that may raise, but those it reads (``reads``)
    and but those that may raise only what it may (ZERO, INDEX), in the order they were bound, headed by the
    comment of the binding's line (what comes before it in its group)."""
    raising, inlined = p.raising, p.inlined  # (raising: name -> what it may raise, changed in place)
    for name in [n for n in raising if n not in inlined]:  # (read since: no longer pending)
        del raising[name]
    kept = set(reads)
    text = own
    for n in kept:
        if n in raising:
            text = joined(text, raising[n])
    if text is None:
        return
    for name in [n for n in raising if n not in kept and (text == ANY or raising[n] != text)]:
        del raising[name]
        p.depth.pop(name, None)
        p.assign_line([name], inlined.pop(name), p.comment(loc))
