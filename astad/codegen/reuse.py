"""Temporaries' names reused in long straight-line code (forward mode's codegen).

A generated function names each intermediate value once (``t1``, ``t4``, ...),
so every one stays alive until the function returns: the JVP of a recursion
over a tree, inlined into thousands of statements, holds thousands of small
arrays that the recursion itself freed as it went (and allocating among them
costs more: ``tree`` ran ~40% slower so).  Where a function binds many
temporaries, a temporary bound by a top-level ``t = ...`` takes the name of one
read for the last time before it, as a person reuses ``c`` and ``y``: the old
array is freed when the name is bound again.  A renaming of names whose
lifetimes do not overlap, so the code computes the same values.
"""

from __future__ import annotations

import heapq
from typing import Sequence

import libcst as cst

from ..names import Namer
from .carried import names_in, renaming

#: functions with fewer temporaries bound at their top level keep every name (short code reads better so)
MIN_TEMPORARIES = 64


def _bound_temp(stmt: cst.BaseStatement) -> str | None:
    """The temporary a top-level ``t = expr`` binds (None for any other statement)."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1 or not isinstance(stmt.body[0], cst.Assign):
        return None
    assign = stmt.body[0]
    if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
        return None
    name = assign.targets[0].target.value
    return name if Namer.is_temp(name) else None


def reused(lines: Sequence[cst.BaseStatement]) -> list[cst.BaseStatement]:
    """``lines`` (a function body) with temporaries' names reused (see the module docstring)."""
    bound = [_bound_temp(s) for s in lines]
    if sum(b is not None for b in bound) < MIN_TEMPORARIES:
        return list(lines)
    mentions = [names_in(s) for s in lines]
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for i, names in enumerate(mentions):
        for n in names:
            first.setdefault(n, i)
            last[n] = i
    renames: dict[str, str] = {}
    free: list[tuple[int, str]] = []  # a heap of the temporaries read for the last time (the lowest number first)
    ending: dict[int, list[str]] = {}
    for i, t in enumerate(bound):
        if t is not None and first[t] == i:  # bound here first: its name may be one that is free now
            new = heapq.heappop(free)[1] if free else t
            renames[t] = new
            ending.setdefault(last[t], []).append(new)
        for name in ending.pop(i, ()):
            heapq.heappush(free, (int(name[1:]), name))
    renames = {old: new for old, new in renames.items() if old != new}
    if not renames:
        return list(lines)
    return [renaming(s, renames) for s in lines]  # type: ignore[misc]
