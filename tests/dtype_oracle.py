"""Oracles for dtypes: the IR's type of every value against the value numpy gives it.

``check_ir_types(fn, args)`` runs the core IR of ``fn`` (:mod:`astad.ir.interp`) on ``args`` and checks
each value a binding makes against the type the IR gives it: a Python scalar where the type says
``py`` (numpy's "weak" scalars of NEP 50), else a numpy value of the type's dtype and shape.  A value
typed with the wrong dtype makes the derivative code (its zeros, casts and Python-float loops) differ
from numpy's; this oracle finds it without knowing which code would."""

from __future__ import annotations

import numpy as np

import astad
from astad import pipeline
from astad.ir import Num, interp
from astad.ir.nodes import Bind


def _core(fn, args):
    r = astad.reverse(fn)
    r(*args)
    d = r._current(())
    if d.stages is None:
        d.stages = pipeline.stages_of(r._parsed, d.arg_types, d.wrt, d.deps)
    return d.stages.core


def type_mismatch(value, t) -> str | None:
    """Why ``value`` is not a value of type ``t`` (None: it is), for numbers only."""
    if not isinstance(t, Num):
        return None
    if t.py and not t.shape:
        want = {"float64": float, "int64": int, "bool": bool}[t.dtype]
        # (a Python int is an acceptable Python float, as Python's own `0 if c else 1.0` gives; bool an int)
        ok = type(value) is want or (want is float and type(value) in (int, bool)) or (want is int and type(value) is bool)
        return None if ok else f"a Python {want.__name__} was typed, the value is {type(value).__name__} {value!r}"
    if (type(value) in (float, int) and t.dtype == "float64" or type(value) in (int, bool) and t.dtype == "int64") \
            and not t.shape:
        # a Python float (or int) joined with a numpy float64 (``acc = 0.0; for ...: acc = acc + x64[i]``),
        # a Python int with a numpy int64, is typed the numpy one: the same to numpy's promotion unless a
        # float16 or float32 meets it, which astad refuses (astad/frontend/weak_joins.py)
        return None
    if not isinstance(value, (np.ndarray, np.generic)):
        return f"{t} was typed, the value is a Python {type(value).__name__} {value!r}"
    if value.dtype.name != t.dtype:
        return f"{t} was typed, the value is {value.dtype.name} {value!r}"
    if len(value.shape) != len(t.shape) or any(d is not None and d != e for d, e in zip(t.shape, value.shape)):
        return f"{t} was typed, the value has shape {value.shape}"
    return None


def ir_type_mismatches(fn, args) -> list[tuple[str, object, object]]:
    """Each value a binding of ``fn``'s core IR makes, run on ``args``, that is not of its type:
    (where, the value, the type)."""
    core = _core(fn, args)
    wrong: list[tuple[str, object, object]] = []
    original = interp.run_block

    def run_block(block, env):
        out = original(block, env)
        for b in block.binds:
            for v in b.targets:
                if v.name in env and type_mismatch(env[v.name], v.type):
                    wrong.append((f"{v.name} ({_where(b)})", env[v.name], v.type))
        return out

    interp.run_block = run_block
    try:
        interp.run(core, *args)
    finally:
        interp.run_block = original
    return wrong


def check_ir_types(fn, args) -> None:
    """Assert that each binding of ``fn``'s core IR, run on ``args``, makes a value of its type."""
    wrong = ir_type_mismatches(fn, args)
    assert not wrong, "IR types differ from numpy's:\n" + "\n".join(
        f"{where}: {type_mismatch(v, t)}" for where, v, t in wrong)


def _where(b: Bind) -> str:
    return f"line {b.loc.line}" if b.loc is not None else "?"
