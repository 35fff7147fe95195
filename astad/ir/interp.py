"""An interpreter for the IR (core and target): makes every stage testable on
its own.  The primal of any stage must evaluate to what the Python function
returns; the backward block of the reverse program must give the same
cotangents as the generated code."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from . import (App, AppBack, Atom, Block, CaseCopower, Comp, Const, Copower, CopowerT, Copy, Drop, Dup, Function, If,
                 Lam, Loop, LoopBack, MakeTuple, Num, Plus, Prim, ReverseProgram, TupleT, Type, Unpack, Var)
from ..rules import TABLE


class CopowerValue(list):
    """A copower at run time: the (record, cotangent) pairs of the calls made to a function."""


class FunctionValue:
    """A function value at run time.  Names are unique in a program, so its body
    runs in the environment it was made in (what it captures is there)."""

    def __init__(self, lam: Lam, env: dict[str, Any]) -> None:
        self.lam, self.env = lam, env

    def __call__(self, *args: Any) -> tuple[Any, tuple]:
        """The result, and the call's record."""
        self.env.update((p.name, a) for p, a in zip(self.lam.params, args))
        value = run_block(self.lam.body, self.env)
        return value, tuple(self.env[v.name] for v in self.lam.save)

    def back(self, record: tuple, ct: Any) -> tuple:
        """The backward map of the call that recorded ``record``: the cotangents of
        what the function captures, then of its parameters."""
        assert self.lam.back is not None and self.lam.back_ct is not None
        self.env.update((v.name, x) for v, x in zip(self.lam.save, record))
        self.env[self.lam.back_ct.name] = ct
        return run_block(self.lam.back, self.env)


def zero_value(t: Type) -> Any:
    if isinstance(t, CopowerT):
        return CopowerValue()
    if isinstance(t, TupleT):
        return tuple(zero_value(i) for i in t.items)
    if isinstance(t, Num):
        if None in t.shape:  # a length known only at run time: a scalar zero broadcasts like one
            return np.zeros((), t.dtype)
        return 0.0 if not t.shape else np.zeros(t.shape, t.dtype)
    return None


def plus_values(a: Any, b: Any) -> Any:
    if isinstance(a, CopowerValue):
        return CopowerValue(a + b)
    if b is None:  # the zero of a list, whose length is known only at run time
        return a
    if isinstance(a, list):
        return [plus_values(x, y) for x, y in zip(a, b)]
    if isinstance(a, tuple):
        return tuple(plus_values(x, y) for x, y in zip(a, b))
    if a is None:
        return b
    return a + b


def _atom(a: Atom, env: dict[str, Any]) -> Any:
    if isinstance(a, Var):
        return env[a.name]
    if isinstance(a, Const):
        return a.value
    return zero_value(a.type)


def _comp(rhs: Comp, env: dict[str, Any]) -> Any:
    if isinstance(rhs, Prim):
        args = [_atom(a, env) for a in rhs.args]
        if rhs.op == "stack_list" and not args[0] and rhs.param("axis", 0) == 0:
            elem = rhs.args[0].type.elem  # an empty list: (0, *shape) for elements of shape, as generated code
            return np.zeros((0,) + tuple(elem.shape), elem.dtype)  # (codegen/python.py: _array_of_list)
        return TABLE[rhs.op].impl(*args, **dict(rhs.params))
    if isinstance(rhs, MakeTuple):
        return tuple(_atom(a, env) for a in rhs.items)
    if isinstance(rhs, Plus):
        values = [_atom(a, env) for a in rhs.items]
        out = values[0]
        for v in values[1:]:
            out = plus_values(out, v)
        return out
    if isinstance(rhs, (Unpack, Copy)):
        return _atom(rhs.tup if isinstance(rhs, Unpack) else rhs.atom, env)
    if isinstance(rhs, Dup):
        return env[rhs.var.name]
    if isinstance(rhs, Lam):
        return FunctionValue(rhs, env)
    if isinstance(rhs, AppBack):
        return env[rhs.fn.name].back(env[rhs.record.name], _atom(rhs.ct, env))
    if isinstance(rhs, Copower):
        return CopowerValue([(env[rhs.record.name], _atom(rhs.ct, env))])
    if isinstance(rhs, Drop):
        return None
    if isinstance(rhs, If):
        return run_block(rhs.then if _atom(rhs.cond, env) else rhs.orelse, env)
    if isinstance(rhs, Loop):
        state = tuple(_atom(a, env) for a in rhs.init)
        tape = []
        steps = range(*[_atom(a, env) for a in rhs.bounds]) if rhs.index is not None else _while(lambda: state[-1])
        for i in steps:
            if rhs.index is not None:
                env[rhs.index.name] = i
            env.update((c.name, v) for c, v in zip(rhs.carried, state))
            state = run_block(rhs.body, env)
            tape.append(tuple(env.get(v.name) for v in rhs.save))  # None: bound in a branch not taken
        return state + ((tape,) if rhs.tape is not None else ())
    if isinstance(rhs, LoopBack):
        state = tuple(_atom(a, env) for a in rhs.init)
        for saved in reversed(env[rhs.tape.name]):
            env.update((v.name, x) for v, x in zip(rhs.saved, saved))
            env.update((c.name, v) for c, v in zip(rhs.params, state))
            state = run_block(rhs.body, env)
        return state
    raise TypeError(rhs)


def _while(go: Any) -> Any:
    while go():
        yield None


def run_block(block: Block, env: dict[str, Any]) -> Any:
    for bind in block.binds:
        rhs = bind.rhs
        if isinstance(rhs, Prim) and any(_atom(rhs.args[i], env) is None for i in TABLE[rhs.op].zero_in):
            value = zero_value(bind.targets[0].type)  # zero in a zero list (None): the zero algebra, at run time
        elif isinstance(rhs, App):
            value, record = env[rhs.fn.name](*[_atom(a, env) for a in rhs.args])
            value = (value, record) if len(bind.targets) == 2 else (value,)  # the target IR binds the record too
        elif isinstance(rhs, CaseCopower):
            value = _case_copower(rhs, bind.targets, env)
        else:
            value = _comp(rhs, env)
        if isinstance(bind.rhs, Dup):
            for t in bind.targets:
                env[t.name] = value
        elif not bind.targets:
            continue
        elif len(bind.targets) == 1 and not isinstance(bind.rhs, (Unpack, If, Loop, LoopBack, App, AppBack,
                                                                   CaseCopower)):
            env[bind.targets[0].name] = value
        else:
            for t, v in zip(bind.targets, value):
                env[t.name] = v
    return _atom(block.result, env)


def _case_copower(rhs: CaseCopower, targets: tuple, env: dict[str, Any]) -> tuple:
    """The captured part of each call's backward map, summed over the copower."""
    total = tuple(zero_value(t.type) for t in targets)
    fn = env[rhs.fn.name]
    for record, ct in _atom(rhs.copower, env):
        part = fn.back(record, ct)[:len(targets)]
        total = tuple(plus_values(a, b) for a, b in zip(total, part))
    return total


def run(fn: Function, *args: Any) -> Any:
    """Evaluate a core-IR function."""
    return run_block(fn.body, {p.name: a for p, a in zip(fn.params, args)})


def run_reverse(prog: ReverseProgram, args: Sequence[Any], ct: Any) -> tuple[Any, tuple]:
    """Evaluate a reverse program: the primal value and the cotangents of the arguments."""
    env = {p.name: a for p, a in zip(prog.params, args)}
    value = run_block(prog.forward, env)
    env[prog.ct_in.name] = ct
    return value, run_block(prog.backward, env)
