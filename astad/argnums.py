"""Negative ``argnums`` of derivatives of derivatives (``jacfwd``, ``jacrev``, ``jacobian``, ``hessian``,
``grad`` of a derivative), counted as JAX counts them: from the last argument passed by position."""

from __future__ import annotations

from typing import Any

import numpy as np


def counted_from_first(d: Any, n: int, remember: bool = True) -> Any:
    """``d``, or (where it or a derivative it differentiates has a negative ``argnums``) its twin with
    every ``argnums`` counted from the first of the ``n`` arguments passed by position, as JAX counts
    them: the programs below index the bound parameters, defaults and keywords included. One twin
    per ``n``; an ``argnums`` out of range is left for ``api_higher._bind`` to refuse."""
    twins = d.__dict__.get("_twins", False)
    if twins is None:  # (no negative argnums: found at the first call)
        return d
    if twins and n in twins:
        if remember:  # (what .source shows: see shown_by)
            d.__dict__["_last_twin"] = twins[n]
        return twins[n]
    levels, level = [], d
    while not getattr(level, "plain", False):
        if not hasattr(level, "with_argnums"):  # (a derivative of another kind: its argnums as they are)
            return d
        levels.append(level)
        level = level.fwd.inner if hasattr(level, "fwd") else level.inner
    nums = [(a,) if isinstance(a, (int, np.integer)) else tuple(a) for a in (getattr(x, "argnums", 0) for x in levels)]
    if not any(i < 0 for ns in nums for i in ns):
        d.__dict__["_twins"] = None
        return d
    if any(i < -n for ns in nums for i in ns):
        return d
    twins = d.__dict__.setdefault("_twins", {})
    if n not in twins:
        fn: Any = level.fn
        for x in reversed(levels):  # innermost first
            a = x.argnums
            counted = int(a) % n if isinstance(a, (int, np.integer)) else tuple(int(i) % n for i in a)
            fn = x.with_argnums(fn, counted)
            fn.name = x.name
        twins[n] = fn
    if remember:
        d.__dict__["_last_twin"] = twins[n]
    return twins[n]


def shown_by(d: Any, args: tuple) -> Any:
    """Who shows ``d``'s code (``.source``, ``.ir``) at ``args`` (none: at the last call's): its twin
    where it has negative ``argnums`` (see counted_from_first), else ``d``."""
    if args:  # (remembered by the caller once the code is shown)
        return counted_from_first(d, len(args), remember=False)
    return d.__dict__.get("_last_twin", d)
