"""Second derivatives of random everyday code by every chain of two transforms, called as Python calls.

The programs of test_random_higher's ``wrapped_programs`` (a random scalar program called from an
outer ``f(p, n=3, flag=True, scale=1.5)`` with its float arguments packed in a dict, tuple, list or
NamedTuple), given a keyword-only parameter ``*, shift=0.25`` that the value reads; the second
derivative with respect to the packed argument taken by a drawn chain (``jacfwd(jacobian(f))``,
``jacobian(grad(f))``, ...), called with the defaults left out or passed by keyword, equals central
differences of ``astad.grad(f)`` (itself checked against finite differences of ``f`` by the
first-order tests); ``f`` or ``functools.partial(f, scale=2.0)``. ``.source_for`` of the chain at the
arguments passed by position shows code (or says that the chain is not one program). A program astad
refuses (an array argument updated in place) is refused by the chain too.
(Session 10: ``jacobian`` inside a derivative refused defaults, and a derivative of ``grad`` called it
with the keyword-only parameter, or one a partial gives by keyword, by position.)"""

import functools
import re

import numpy as np
import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st

import astad
from astad import jacobians
from astad.programs import NoProgram
from conftest import fuzz_examples, load_program
from test_random_higher import _SETTINGS, _dense, _fd_hessian_of_tree, _Fields, wrapped_programs

OUTER = {"jacfwd": astad.jacfwd, "jacrev": astad.jacrev, "jacobian": astad.jacobian}
INNER = {"grad": astad.grad, "jacfwd": astad.jacfwd, "jacrev": astad.jacrev, "jacobian": astad.jacobian}


def with_keyword_only(source):
    """The outer ``f`` of a wrapped program given ``*, shift=0.25``, read by its value."""
    source = re.sub(r"^(def f\(.*)\):$", r"\1, *, shift=0.25):", source, count=1, flags=re.M)
    assert source.endswith("    return v\n")
    return source[:-len("    return v\n")] + "    v = v * (1.0 + shift)\n    return v\n"


@settings(max_examples=fuzz_examples(3, long=6), **_SETTINGS)
@given(wrapped_programs(), st.sampled_from(sorted(OUTER)), st.sampled_from(sorted(INNER)), st.booleans(), st.booleans())
def test_random_chains_of_two_transforms(tmp_path_factory, program, outer, inner, shift_by_keyword, partial):
    source, args, kwargs = program
    source = with_keyword_only(source)
    note(source)
    module = load_program(source, tmp_path_factory.mktemp("api_calls"), "api_calls")
    if args and isinstance(args[0], _Fields):
        args = [module.P(*args[0].values)]
    if shift_by_keyword:
        kwargs = dict(kwargs, shift=-0.5)
    fn = functools.partial(module.f, scale=2.0) if partial else module.f  # (scale given by the partial's keyword)
    note(f"{outer}({inner}({'partial(f, scale=2.0)' if partial else 'f'}))(*{args!r}, **{kwargs!r})")
    chain = OUTER[outer](INNER[inner](fn))
    try:
        astad.grad(fn)(*args, **kwargs)
    except astad.AstadError:  # (refused: `y -= 0.25` on an array argument, say) refused by the chain too
        event("refused")
        with pytest.raises(astad.AstadError):
            chain(*args, **kwargs)
        return
    got = _dense(chain(*args, **kwargs), args[0])
    np.testing.assert_allclose(got, _fd_hessian_of_tree(fn, args, kwargs), rtol=1e-5, atol=1e-5,
                               err_msg=f"{outer}({inner}(f)) vs FD of grad")
    check_vjp_of_chain(chain, args, kwargs)
    try:
        assert "def " in chain.source_for(*args)
    except NoProgram:  # (jacfwd(jacfwd(f)) of several inputs: no one program to show; refused, named)
        event("no program to show")


def check_vjp_of_chain(chain, args, kwargs, eps=1e-5):
    """``vjp`` of the chain (a third derivative; of a Jacobian of several columns, by one VJP of each
    column's program, session 12) along a cotangent ``u``: ``<J^T u, d>`` equals central differences of
    ``<u, chain(x)>`` along ``d`` in the packed argument."""
    rng = np.random.default_rng(7)
    value, pullback = astad.vjp(chain, *args, **kwargs)
    value_leaves, rebuild_value = jacobians.flatten(value)
    u_leaves = [rng.standard_normal(np.shape(v)) if np.ndim(v) else float(rng.standard_normal()) for v in value_leaves]
    cts = pullback(rebuild_value([np.asarray(x, np.asarray(v).dtype) if np.ndim(v) else type(v)(x)
                                  for x, v in zip(u_leaves, value_leaves)]))
    leaves, rebuild = jacobians.flatten(args[0])
    d = [rng.standard_normal(np.shape(x)) if np.ndim(x) else float(rng.standard_normal()) for x in leaves]

    def along(s):
        moved = rebuild([type(x)(x + s * t) if isinstance(x, float) else x + s * t for x, t in zip(leaves, d)])
        out = jacobians.flatten(chain(moved, *args[1:], **kwargs))[0]
        return sum(float(np.sum(np.asarray(o, float) * w)) for o, w in zip(out, u_leaves))
    fd = (along(eps) - along(-eps)) / (2 * eps)
    got = sum(float(np.sum(np.asarray(c, float) * t)) for c, t in zip(jacobians.flatten(cts[0])[0], d))
    assert got == pytest.approx(fd, rel=1e-4, abs=1e-4), "vjp of the chain vs central differences"
