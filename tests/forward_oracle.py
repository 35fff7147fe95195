"""Forward mode on the random programs of the generators (test_random_programs,
test_random_control_flow, test_random_aliasing): the oracle and the hypothesis
strategies for tangents ``v`` and output cotangents ``u``.

``check_forward(fn, args, data)`` draws ``v`` (one tangent per argument, the
argument's structure; ``None`` for discrete arguments and, sometimes, for a
float one held constant) and ``u`` (the output's structure) with hypothesis,
and checks, on deep copies of ``args`` (the aliasing programs update arrays in
place):

- the value of ``astad.jvp(fn, args, v)`` is ``fn(*args)`` and the arguments
  are left as plain Python leaves them, on the first call and on a second one
  of the same kinds (which runs the generated code that checks them itself);
- the tangent ``J v`` has the output's structure and shapes, and equals
  central finite differences in float64, ``(f(x + eps v) - f(x - eps v)) / 2 eps``
  (each evaluation on fresh copies);
- ``<u, J v>`` from forward mode equals ``<J^T u, v>`` from reverse mode
  (``astad.reverse(fn)`` and its pullback) to ``1e-10`` relative to
  ``<|u|, |J v|> + <|J^T u|, |v|>`` (no cancellation can make that scale small).

A refusal (an ``AstadError`` that is not an ``InternalError``) raises
``conftest.Refused``; the callers decide whether a refusal is allowed (only
where reverse mode refuses too)."""

import copy
import os

import numpy as np
from hypothesis import event, strategies as st

import astad
from astad import api, api_forward
from conftest import Refused, _is_discrete, _same_state

IDENTITY_RTOL = 1e-10

_FLOATS = st.floats(-2.0, 2.0, allow_nan=False, allow_infinity=False, allow_subnormal=False, width=64)


# ---------------------------------------------------------------- strategies

def _is_real(a):
    return (isinstance(a, (float, np.floating)) and not isinstance(a, bool)) or (
        isinstance(a, np.ndarray) and a.dtype.kind == "f")


def _has_real(a):
    if isinstance(a, dict):
        return any(_has_real(v) for v in a.values())
    if isinstance(a, (tuple, list)):
        return any(_has_real(v) for v in a)
    return _is_real(a)


def _real_like(a):
    """Values like the real ``a`` (a float, a numpy scalar, an array of its shape and dtype):
    hypothesis' own floats (shrinking to simple ones) or a normal sample from a drawn seed."""
    shape = np.shape(a)
    n = int(np.prod(shape, dtype=int))
    by_floats = st.lists(_FLOATS, min_size=n, max_size=n).map(lambda xs: np.array(xs, dtype=float).reshape(shape))
    by_seed = st.integers(0, 2 ** 32 - 1).map(lambda s: np.random.default_rng(s).standard_normal(shape))
    arrays = st.one_of(by_seed, by_floats)
    if isinstance(a, float):
        return arrays.map(float)
    if isinstance(a, np.floating):
        return arrays.map(lambda v: type(a)(v))
    return arrays.map(lambda v: v.astype(a.dtype))


def tangent_like(a, constant_ok=True):
    """A strategy for a tangent of the argument ``a``: its structure with real leaves drawn,
    ``None`` where it has no real leaf, and (``constant_ok``) sometimes ``None`` for a real one."""
    if not _has_real(a):
        return st.none()
    if isinstance(a, dict):
        whole = st.fixed_dictionaries({k: _leaf_tangent(v) for k, v in a.items()})
    elif isinstance(a, (tuple, list)):
        whole = st.tuples(*[_leaf_tangent(v) for v in a]).map(
            lambda items: type(a)(*items) if hasattr(type(a), "_fields") else type(a)(items))
    else:
        whole = _real_like(a)
    if not constant_ok:
        return whole
    return st.integers(0, 4).flatmap(lambda k: whole if k < 4 else st.none())  # held constant 1 in 5


def _leaf_tangent(a):
    """Inside a structure: every leaf gets a tangent (a zero one where it is discrete), as
    astad and JAX take one tangent per structure."""
    if isinstance(a, (dict, tuple, list)):
        return tangent_like(a, constant_ok=False) if _has_real(a) else st.just(_zero_structure(a))
    return _real_like(a) if _is_real(a) else st.none()


def _zero_structure(a):
    if isinstance(a, dict):
        return {k: _zero_structure(v) for k, v in a.items()}
    if isinstance(a, (tuple, list)):
        items = [_zero_structure(v) for v in a]
        return type(a)(*items) if hasattr(type(a), "_fields") else type(a)(items)
    return None


def tangents_for(args):
    """One tangent per argument (see ``tangent_like``)."""
    return st.tuples(*[tangent_like(a) for a in args]).map(list)


def cotangent_like(value):
    """A strategy for an output cotangent like ``value``: reals drawn, discrete leaves zero."""
    if isinstance(value, dict):
        return st.fixed_dictionaries({k: cotangent_like(v) for k, v in value.items()})
    if isinstance(value, (tuple, list)):
        return st.tuples(*[cotangent_like(v) for v in value]).map(
            lambda items: type(value)(*items) if hasattr(type(value), "_fields") else type(value)(items))
    if value is None:
        return st.none()
    if isinstance(value, float) and type(value) is float:  # (a Python float output: sometimes a numpy float
        # cotangent, which the pullback takes as a float: the Python float argument's cotangent is a float)
        return st.one_of(_real_like(value), _real_like(value).map(np.float64), _real_like(value).map(np.float32))
    if _is_real(value):
        return _real_like(float(value) if np.ndim(value) == 0 and not isinstance(value, np.ndarray) else value)
    return st.just(0.0 if np.ndim(value) == 0 else np.zeros(np.shape(value)))


# ---------------------------------------------------------------- forward mode

def jvp(fn, args, tangents):
    """``(value, J v)`` from ``astad.jvp`` (tangents: one per argument, None for one held constant)."""
    return astad.jvp(fn, tuple(args), tuple(tangents))


def _shifted(a, t, s):
    """``a + s t`` leaf by leaf (reals only), keeping each leaf's type."""
    if t is None:
        return copy.deepcopy(a)
    if isinstance(a, dict):
        return {k: _shifted(v, t[k], s) for k, v in a.items()}
    if isinstance(a, (tuple, list)):
        items = [_shifted(v, tv, s) for v, tv in zip(a, t)]
        return type(a)(*items) if hasattr(type(a), "_fields") else type(a)(items)
    if not _is_real(a):
        return copy.deepcopy(a)
    if isinstance(a, float):
        return float(a + s * t)
    if isinstance(a, np.floating):
        return type(a)(a + s * t)
    return np.array(a + s * np.asarray(t), dtype=a.dtype)


def _pairs(value, other, what="output"):
    """``[(leaf of value, leaf of other, path)]``, checking that ``other`` has ``value``'s structure
    (``other`` may be ``None`` where the value is discrete or None)."""
    if isinstance(value, dict):
        assert isinstance(other, dict) and other.keys() == value.keys(), f"{what}: {other!r} is not like {value!r}"
        return [p for k in value for p in _pairs(value[k], other[k], f"{what}[{k!r}]")]
    if isinstance(value, (tuple, list)):
        if other is None and not _has_real(value):  # (the tangent None of a part with no real leaf: `()`, `(n,)`)
            return [(v, None, w) for v, _, w in _pairs(value, value, what)]
        assert isinstance(other, (tuple, list)) and len(other) == len(value), \
            f"{what}: {type(other).__name__} {other!r} is not like {value!r}"
        return [p for i, (v, o) in enumerate(zip(value, other)) for p in _pairs(v, o, f"{what}[{i}]")]
    return [(value, other, what)]


def _abs_inner(a, b):
    return float(np.sum(np.abs(np.asarray(a, dtype=float)) * np.abs(np.asarray(b, dtype=float))))


def _dot(a, b):
    return float(np.sum(np.asarray(a, dtype=float) * np.asarray(b, dtype=float)))


def check_forward(fn, args, data, eps=1e-6, rtol=1e-5, atol=1e-5, reverse=True):
    """The oracle of the module docstring; ``data`` is hypothesis' ``st.data()``.  Returns the
    tangents drawn and ``J v``; raises ``Refused`` when forward mode refuses the program."""
    plain_args = copy.deepcopy(args)
    want = fn(*plain_args)
    tangents = data.draw(tangents_for(args), label="tangents v")
    event("forward: every argument held constant" if all(t is None for t in tangents) else "forward: some tangent")
    jvs = []
    for _ in range(2):  # the second call of the same kinds: through the code checking them itself (astad.guards)
        ad_args = copy.deepcopy(args)
        try:
            value, jv = jvp(fn, ad_args, copy.deepcopy(tangents))
        except astad.InternalError:
            raise
        except astad.AstadError as e:
            raise Refused(str(e)) from None
        for w, g, where in _pairs(want, value, "value"):
            assert np.shape(g) == np.shape(w), f"{where}: shape {np.shape(g)} != {np.shape(w)}"
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12, err_msg=where)
        for i, (got, expected) in enumerate(zip(ad_args, plain_args)):
            assert _same_state(got, expected), \
                f"argument {i} after jvp: astad leaves {got!r}, plain Python {expected!r}"
        jvs.append(jv)
    checked = api_forward.forward_of(fn).table("latest jvp").get(None) is not None
    event("forward: a checked JVP of these kinds (astad.guards)" if checked else "forward: no checked JVP")

    # J v against central finite differences along v
    plus = fn(*[_shifted(a, t, eps) for a, t in zip(args, tangents)])
    minus = fn(*[_shifted(a, t, -eps) for a, t in zip(args, tangents)])
    pairs = [p for jv in jvs for p in _pairs(want, jv, "tangent")]
    for (w, t, where), (_, p, _), (_, m, _) in zip(pairs, _pairs(want, plus) * 2, _pairs(want, minus) * 2):
        if w is None or not _is_real(w) and _is_discrete(w):
            assert t is None or not np.any(t), f"{where}: a discrete output has the tangent {t!r}"
            continue
        assert t is not None, f"{where}: no tangent for a real output"
        assert np.shape(t) == np.shape(w), f"{where}: tangent shape {np.shape(t)} != value shape {np.shape(w)}"
        # a 0-d array's tangent a 0-d array, a numpy scalar's a numpy scalar (session 12: np.where of numpy
        # scalars, a 0-d array, had a numpy scalar tangent)
        if type(w) is np.ndarray:
            assert type(t) is np.ndarray, f"{where}: the tangent {t!r} of the 0-d array {w!r}"
        elif isinstance(w, np.generic) and _is_real(w):
            assert isinstance(t, np.generic), f"{where}: the tangent {t!r} of the numpy scalar {w!r}"
        if isinstance(w, (np.ndarray, np.floating)) and w.dtype.kind == "f":  # computed at the value's precision
            assert np.asarray(t).dtype.itemsize >= w.dtype.itemsize, f"{where}: a {np.asarray(t).dtype} tangent " \
                                                                     f"of a {w.dtype} value"
        fd = (np.asarray(p, dtype=float) - np.asarray(m, dtype=float)) / (2 * eps)
        np.testing.assert_allclose(t, fd, rtol=rtol, atol=atol, err_msg=f"{where}: J v vs central differences")
    if reverse:
        check_transpose(fn, args, want, tangents, jv, data.draw(cotangent_like(want), label="cotangent u"))
    return tangents, jv


def check_transpose(fn, args, want, tangents, jv, u):
    """``<u, J v>`` (forward mode) == ``<J^T u, v>`` (reverse mode), relative to the sums of |terms|."""
    _, pullback = astad.reverse(fn)(*copy.deepcopy(args))
    cts = pullback(copy.deepcopy(u))
    lhs = scale = 0.0
    for (w, t, _), (_, uu, _) in zip(_pairs(want, jv), _pairs(want, u)):
        if t is not None and _is_real(w):
            lhs += _dot(uu, t)
            scale += _abs_inner(uu, t)
    rhs = 0.0
    for i, (a, v, ct) in enumerate(zip(args, tangents, cts)):
        if v is None:
            continue
        # (leaves in the argument's order: a dict tangent may list its keys in another order)
        for (leaf, tv, where), (_, c, _) in zip(_pairs(a, v, f"argument {i}"), _pairs(a, ct, f"argument {i}")):
            if not _is_real(leaf) or tv is None:
                continue
            assert c is not None and np.shape(c) == np.shape(tv), f"{where}: cotangent {c!r}"
            assert np.asarray(c).dtype == np.asarray(leaf).dtype, f"{where}: cotangent {c!r} of {leaf!r}"  # (README)
            rhs += _dot(c, tv)
            scale += _abs_inner(c, tv)
    # below the smallest normal float the products round to subnormals (or 0) with no relative precision:
    # u = -9e-273 and a tangent -9e-102 gave 0.0 one way and -1e-323 the other
    assert abs(lhs - rhs) <= IDENTITY_RTOL * scale + np.finfo(np.float64).tiny, (
        f"<u, J v> = {lhs!r} (forward) but <J^T u, v> = {rhs!r} (reverse); scale {scale!r}")


def derivative_sources(fn, args, wrt=frozenset({0})):
    """The generated reverse and forward source of ``fn`` at ``args`` (differentiated in ``wrt``), made anew
    (``api.Reverse``: not the object ``astad.reverse`` keeps), the disk cache off unless a test set it."""
    os.environ.setdefault("ASTAD_DISK_CACHE", "0")
    return api.Reverse(fn).derivative(args, wrt).source, api_forward.forward_of(fn).derivative(args, wrt).source
