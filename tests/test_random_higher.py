"""Second derivatives of random programs (the generators of test_random_programs and
test_random_control_flow, loops included), against independent oracles:

- ``grad(grad(g))`` of a random real scalar program of a float ``x`` equals
  central finite differences of the gradient ``astad.grad(g)`` (reverse mode,
  itself checked against finite differences by the first-order tests), and the
  third derivative by ``vjp`` and ``jvp`` of ``grad(grad(g))`` equals central
  differences of it;
- ``hessian(g)`` of a random scalar program of an array ``x`` is symmetric and
  equals central finite differences of the gradient, column by column; ``hvp``
  along a drawn ``v`` is ``H v``; reverse over reverse (``jacrev(grad(g))``) gives
  the same matrix;
- ``jacfwd(f) == jacrev(f)`` for random (vector- or tuple-valued) programs (and their ``.source`` shown),
  with respect to every float argument, to 1e-10 relative.

Control-flow programs are evaluated only at points where no comparison of reals
is within ``MARGIN`` of its boundary (the instrumented variant), as in
test_random_control_flow.  ``ASTAD_FUZZ_EXAMPLES=N`` runs N examples per test.

Two more: the scalar programs called from everyday code (``wrapped_programs``, below), and the
programs above with the generated code's in-place forms (``t = np.exp(a, out=a)``, ``t += b``,
rematerialisation) used for every array, not only for those of at least 4096 elements (the
random programs' arrays have a few)."""

import math
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, note, settings
from hypothesis import strategies as st

import astad
from astad import jacobians
import test_random_control_flow as cf
import test_random_programs as sl
from conftest import fuzz_examples, load_program
from forward_oracle import _real_like

EPS = 1e-6
_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                                       HealthCheck.data_too_large])


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("random_higher")


def _straight(program_dir, program):
    source, params, seed = program
    note(source)
    args = sl._arguments(params, seed)
    note(f"args = {args!r}")
    return load_program(source, program_dir, "higher").f, args


def _control_flow(program_dir, program):
    """The program and its arguments, at a point away from every branch boundary."""
    source, instrumented, params, dynamic, seed = program
    note(source)
    args = sl._arguments(params, seed)
    if dynamic:
        args[-1] = np.int64(args[-1])
    note(f"args = {args!r}")
    margins = load_program(instrumented, program_dir, "higher_margins")
    margins.f(*args)
    assume(min(margins._MARGINS, default=math.inf) > cf.MARGIN)
    return load_program(source, program_dir, "higher_cf").f, args


def _with(args, i, x):
    out = list(args)
    out[i] = x
    return out


def _fd_of_gradient(fn, args, eps=EPS):
    """d/dx (astad.grad(fn))(x, ...) by central differences, x = args[0]: shape x.shape + x.shape,
    the last axes the direction of the difference."""
    grad = astad.grad(fn)
    x = args[0]
    if isinstance(x, float):
        return (grad(*_with(args, 0, x + eps)) - grad(*_with(args, 0, x - eps))) / (2 * eps)
    out = np.zeros(np.shape(x) + np.shape(x))
    for idx in np.ndindex(*np.shape(x)):
        plus, minus = np.array(x, dtype=float), np.array(x, dtype=float)
        plus[idx] += eps
        minus[idx] -= eps
        out[(...,) + idx] = (grad(*_with(args, 0, plus)) - grad(*_with(args, 0, minus))) / (2 * eps)
    return out


# ---------------------------------------------------------------- grad(grad(g))

def check_grad_grad(fn, args):
    """grad(grad(fn)) at args (x = args[0] a float) equals FD of the reverse-mode gradient."""
    got = astad.grad(astad.grad(fn))(*args)
    assert np.ndim(got) == 0, f"grad(grad(g)) of a float gives {got!r}"
    event("grad(grad(g)) != 0" if got != 0 else "grad(grad(g)) == 0")
    np.testing.assert_allclose(got, _fd_of_gradient(fn, args), rtol=1e-5, atol=1e-5)
    # third order: reverse over the program of grad(grad(fn)) (forward over reverse) and forward over it,
    # against central differences of grad(grad(fn)) just checked
    gg = astad.grad(astad.grad(fn))
    x = args[0]
    fd3 = (gg(*_with(args, 0, x + EPS)) - gg(*_with(args, 0, x - EPS))) / (2 * EPS)
    value, pullback = astad.vjp(gg, *args)
    np.testing.assert_allclose(value, got, rtol=1e-12, atol=1e-12)
    scale = max(1.0, abs(fd3))
    np.testing.assert_allclose(pullback(1.0)[0], fd3, rtol=1e-4, atol=1e-4 * scale, err_msg="vjp(grad(grad))")
    np.testing.assert_allclose(astad.jvp(gg, tuple(args), (1.0,) + (None,) * (len(args) - 1))[1], fd3,
                               rtol=1e-4, atol=1e-4 * scale, err_msg="jvp(grad(grad))")


@settings(max_examples=fuzz_examples(8), **_SETTINGS)
@given(sl.programs(first=["f"], scalar=True))
def test_random_grad_grad(program_dir, program):
    check_grad_grad(*_straight(program_dir, program))


@settings(max_examples=fuzz_examples(3, long=8), **_SETTINGS)
@given(cf.programs(first=["f"], scalar=True))
def test_random_grad_grad_loops(program_dir, program):
    check_grad_grad(*_control_flow(program_dir, program))


# ---------------------------------------------------------------- hessian

VECTOR_SHAPES = [(3,), (4,), (2, 3)]


def check_hessian(fn, args, v):
    """hessian(fn) at args (x = args[0] an array) is symmetric and equals FD of the gradient;
    hvp along ``v`` is H v."""
    x = args[0]
    h = np.asarray(astad.hessian(fn)(*args))
    assert h.shape == x.shape + x.shape, f"hessian shape {h.shape} for x of shape {x.shape}"
    n = x.size
    event("hessian != 0" if np.any(h) else "hessian == 0")
    square = h.reshape(n, n)
    scale = max(1.0, float(np.max(np.abs(square))))
    np.testing.assert_allclose(square, square.T, rtol=0, atol=1e-10 * scale, err_msg="hessian not symmetric")
    np.testing.assert_allclose(h, _fd_of_gradient(fn, args), rtol=1e-5, atol=1e-5, err_msg="hessian vs FD")
    tangents = (v,) + (None,) * (len(args) - 1)
    hv = astad.hvp(fn, tuple(args), tangents)  # one entry per argument: H v, then None
    assert isinstance(hv, tuple) and len(hv) == len(args) and all(h is None for h in hv[1:]), hv
    hv = hv[0]
    np.testing.assert_allclose(np.reshape(hv, n), square @ v.reshape(n), rtol=1e-9,
                               atol=1e-10 * scale * max(1.0, float(np.max(np.abs(v)))), err_msg="hvp vs H v")
    # reverse mode over reverse mode: one VJP of the gradient's program per element of x
    rr = np.asarray(astad.jacrev(astad.grad(fn))(*args))
    np.testing.assert_allclose(rr, h, rtol=1e-9, atol=1e-10 * scale, err_msg="jacrev(grad) vs hessian")


@settings(max_examples=fuzz_examples(4), **_SETTINGS)
@given(sl.programs(first=VECTOR_SHAPES, scalar=True), st.data())
def test_random_hessian(program_dir, program, data):
    fn, args = _straight(program_dir, program)
    check_hessian(fn, args, data.draw(_real_like(args[0]), label="v"))


@settings(max_examples=fuzz_examples(2, long=5), **_SETTINGS)
@given(cf.programs(first=VECTOR_SHAPES, scalar=True), st.data())
def test_random_hessian_loops(program_dir, program, data):
    fn, args = _control_flow(program_dir, program)
    check_hessian(fn, args, data.draw(_real_like(args[0]), label="v"))


# ---------------------------------------------------------------- jacfwd == jacrev

def _leaves(tree):
    if isinstance(tree, dict):
        return [x for k in tree for x in _leaves(tree[k])]
    if isinstance(tree, (tuple, list)):
        return [x for v in tree for x in _leaves(v)]
    return [tree]


def check_jacobians(fn, args):
    """jacfwd(fn) == jacrev(fn) with respect to every float argument (None where both are None)."""
    nums = tuple(i for i, a in enumerate(args) if isinstance(a, float) or
                 (isinstance(a, np.ndarray) and a.dtype.kind == "f"))
    assume(nums)
    jf, jr = astad.jacfwd(fn, argnums=nums), astad.jacrev(fn, argnums=nums)
    forward = jf(*args)
    reverse = jr(*args)
    for d in (jf, jr):  # the code at the call's types, shown without running fn at the zeros kept for it
        try:
            assert "def " in d.source
        except astad.InternalError:
            raise
        except astad.AstadError:
            pass
    fl, rl = _leaves(forward), _leaves(reverse)
    assert len(fl) == len(rl), f"jacfwd {forward!r}\njacrev {reverse!r}"
    for k, (a, b) in enumerate(zip(fl, rl)):
        if a is None or b is None:
            assert a is None and b is None, f"leaf {k}: jacfwd {a!r}, jacrev {b!r}"
            continue
        assert np.shape(a) == np.shape(b), f"leaf {k}: shapes {np.shape(a)} (jacfwd), {np.shape(b)} (jacrev)"
        scale = max(1.0, float(np.max(np.abs(b), initial=0.0)))
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10 * scale, err_msg=f"leaf {k}")


@settings(max_examples=fuzz_examples(4, long=10), **_SETTINGS)
@given(sl.programs())
def test_random_jacfwd_jacrev(program_dir, program):
    check_jacobians(*_straight(program_dir, program))


@settings(max_examples=fuzz_examples(3, long=8), **_SETTINGS)
@given(cf.programs())
def test_random_jacfwd_jacrev_loops(program_dir, program):
    check_jacobians(*_control_flow(program_dir, program))


# ---------------------------------------------------------------- the program inside everyday code
#
# A random scalar program (``inner``) called from an outer function the way user code calls its
# helpers: its float arguments packed in a dict, tuple, list or NamedTuple (or passed as they are),
# its int argument given by keyword default or by position, a bool flag, the call made directly, by
# keywords in another order, through a lambda or a nested def (closures over the other arguments),
# or through module-level ``astad.reverse(inner)`` / ``astad.forward(inner)`` objects (whose call
# gives ``(value, pullback)``: ``[0]`` is differentiated through); the first argument sometimes
# updated in place on a copy first (``x = x.copy(); x[0] += ...``).  The Hessian with respect to
# the packed argument (nested in its structure) is checked against central differences of the
# gradient, for symmetry, and against reverse over reverse (``jacrev(grad(f))``).

CONTAINERS = ["plain", "dict", "tuple", "list", "namedtuple"]
CALLS = ["direct", "keywords", "lambda", "def", "reverse_helper", "forward_helper"]


class _Fields:
    """The values of the NamedTuple ``P`` the program defines (made once it is loaded)."""

    def __init__(self, values):
        self.values = values

    def __repr__(self):
        return f"P(*{self.values!r})"


@st.composite
def wrapped_programs(draw):
    """(source, args, kwargs): a random scalar program ``inner`` and an outer ``f`` calling it."""
    source, params, seed = draw(sl.programs(first=VECTOR_SHAPES, scalar=True))
    source = re.sub(r"^def f\(", "def inner(", source, flags=re.M)
    # the parameters' names as the program has them (the generator may have renamed some)
    params_in = re.search(r"^def inner\((.*)\):", source, flags=re.M).group(1).split(", ")
    values = sl._arguments(params, seed)
    zero_d = draw(st.booleans())  # the float arguments passed as 0-d arrays (their derivatives: 0-d arrays)
    reals = [(n, np.array(v) if zero_d and type(v) is float else v)
             for n, (_, s), v in zip(params_in, params, values) if not isinstance(s, int)]
    ints = [(n, v) for n, (_, s), v in zip(params_in, params, values) if isinstance(s, int)]
    first = params_in[0]
    container = draw(st.sampled_from(CONTAINERS))
    call = draw(st.sampled_from(CALLS))
    flag = draw(st.booleans())
    update = draw(st.booleans())
    by_default = bool(ints) and draw(st.booleans())
    names = [n for n, _ in reals]
    lines = []
    if container == "plain":
        head = list(names)
    else:
        head = ["p"]
        if container == "dict":
            lines += [f"{n} = p[{n!r}]" for n in names]
        elif container == "namedtuple":
            lines += [f"{n} = p.{n}" for n in names]
        else:
            lines.append(", ".join(names) + (", = p" if len(names) == 1 else " = p"))
    head += [f"{n}={v}" for n, v in ints] + ["flag=True", "scale=1.5"]
    if update:  # the first argument is an array (VECTOR_SHAPES): a copy of it updated in place
        lines += [f"{first} = {first}.copy()", f"{first}[0] += 0.5 * np.sin({first}[-1])"]
    plain = ", ".join(params_in)
    rest = ", ".join(["t"] + params_in[1:])
    if call == "direct":
        lines.append(f"v = inner({plain})")
    elif call == "keywords":
        lines.append("v = inner(" + ", ".join(f"{n}={n}" for n in reversed(params_in)) + ")")
    elif call == "lambda":
        lines += [f"g = lambda t: inner({rest}) * scale", f"v = g({first}) / scale"]
    elif call == "def":
        lines += ["def g(t):", f"    return inner({rest}) * scale", f"v = g({first}) / scale"]
    else:
        lines.append(f"v = {'inner_r' if call == 'reverse_helper' else 'inner_f'}({plain})[0]")
    lines += ["if flag:", "    v = v * scale", "else:", "    v = np.sin(v)", "return v"]
    outer = ("\n\nimport astad\nfrom typing import NamedTuple\n\n\n"
             "class P(NamedTuple):\n" + "".join(f"    {n}: object\n" for n in names) +
             "\n\ninner_r = astad.reverse(inner)\ninner_f = astad.forward(inner)\n\n\n"
             f"def f({', '.join(head)}):\n" + "".join(f"    {line}\n" for line in lines))
    real_values = [v for _, v in reals]
    packed = {"plain": None, "dict": lambda: dict(reals), "tuple": lambda: tuple(real_values),
              "list": lambda: list(real_values), "namedtuple": lambda: _Fields(real_values)}[container]
    args = real_values if packed is None else [packed()]
    kwargs = {} if by_default else dict(ints)
    if not flag or draw(st.booleans()):
        kwargs["flag"] = draw(st.sampled_from([flag, np.bool_(flag)]))
    event(f"wrapped: {container}, {call}" + (", updated" if update else "") + (", 0-d arrays" if zero_d else ""))
    return source + outer, args, kwargs


def _dense(tree, arg):
    """A Hessian by a structured argument ``arg`` (for each leaf, the leaves' blocks) as one square matrix."""
    sizes = [int(np.size(leaf)) for leaf in jacobians.flatten(arg)[0]]
    blocks = [np.asarray(b, dtype=float) for b in jacobians.flatten(tree)[0]]
    assert len(blocks) == len(sizes) ** 2, f"hessian {tree!r} by {arg!r}"
    return np.block([[np.reshape(blocks[i * len(sizes) + j], (m, n)) for j, n in enumerate(sizes)]
                     for i, m in enumerate(sizes)])


def _fd_hessian_of_tree(fn, args, kwargs, eps=EPS):
    """Central differences of astad.grad(fn) by every real element of ``args[0]`` (a pytree): a matrix."""
    grad = astad.grad(fn)
    leaves, rebuild = jacobians.flatten(args[0])
    cols = []
    for j, leaf in enumerate(leaves):
        for k in range(int(np.size(leaf))):
            def shifted(s):
                moved = [(x + s if isinstance(x, float) else _moved(x, k, s)) if m == j else x
                         for m, x in enumerate(leaves)]
                return np.concatenate([np.ravel(g) for g in jacobians.flatten(grad(rebuild(moved), *args[1:], **kwargs))[0]])
            cols.append((shifted(eps) - shifted(-eps)) / (2 * eps))
    return np.stack(cols, axis=1)


def _moved(x, k, s):
    y = np.array(x, dtype=float)
    y.flat[k] += s
    return y


def _assert_leaves_like(got, arg, what):
    """A derivative by ``arg`` has ``arg``'s leaves' kinds: a float's a float, an array's (a 0-d one's
    too, inside any structure, as JAX's) an array of its shape."""
    got_leaves, want_leaves = jacobians.flatten(got)[0], jacobians.flatten(arg)[0]
    assert len(got_leaves) == len(want_leaves), f"{what}: {got!r} by {arg!r}"
    for g, a in zip(got_leaves, want_leaves):
        if type(a) is np.ndarray:
            assert type(g) is np.ndarray and g.shape == a.shape, f"{what}: {g!r} for the array {a!r}"
        else:
            assert type(g) is float, f"{what}: {g!r} for the float {a!r}"


def check_wrapped(fn, args, kwargs):
    _assert_leaves_like(astad.grad(fn)(*args, **kwargs), args[0], "grad")
    _assert_leaves_like(astad.vjp(fn, *args, **kwargs)[1](1.0)[0], args[0], "vjp")
    h = astad.hessian(fn)(*args, **kwargs)
    dense = _dense(h, args[0])
    event("hessian != 0" if np.any(dense) else "hessian == 0")
    scale = max(1.0, float(np.max(np.abs(dense))))
    np.testing.assert_allclose(dense, dense.T, rtol=0, atol=1e-10 * scale, err_msg="hessian not symmetric")
    np.testing.assert_allclose(dense, _fd_hessian_of_tree(fn, args, kwargs), rtol=1e-5, atol=1e-5,
                               err_msg="hessian vs FD")
    rr = _dense(astad.jacrev(astad.grad(fn))(*args, **kwargs), args[0])
    np.testing.assert_allclose(rr, dense, rtol=1e-9, atol=1e-10 * scale, err_msg="jacrev(grad) vs hessian")


@settings(max_examples=fuzz_examples(4), **_SETTINGS)
@given(wrapped_programs())
def test_random_hessian_everyday_code(program_dir, program):
    source, args, kwargs = program
    note(source)
    module = load_program(source, program_dir, "higher_wrapped")
    if args and isinstance(args[0], _Fields):
        args = [module.P(*args[0].values)]
    note(f"args = {args!r}, kwargs = {kwargs!r}")
    check_wrapped(module.f, args, kwargs)


# ---------------------------------------------------------------- in-place forms on small arrays
#
# The printer writes a result into the memory of an array it made and nothing reads later
# (astad/codegen/inplace.py) and the optimiser rematerialises (astad/optimise/remat.py) only for
# arrays of at least MIN_SIZE (4096) elements, which the random programs never make: here both
# thresholds are 1, so every tangent, cotangent and second-order temporary of the random programs
# goes through them.  (The caches are emptied before and after: they key code by types, not by
# the thresholds.)


@pytest.fixture
def in_place_everywhere(monkeypatch):
    from astad.codegen import inplace
    from astad.optimise import remat

    monkeypatch.setattr(inplace, "MIN_SIZE", 1)
    monkeypatch.setattr(remat, "MIN_SIZE", 1)
    astad.clear_caches(disk=False)
    yield
    astad.clear_caches(disk=False)


@settings(max_examples=fuzz_examples(3), deadline=None,  # (the fixture holds for all the examples: meant)
          suppress_health_check=_SETTINGS["suppress_health_check"] + [HealthCheck.function_scoped_fixture])
@given(cf.programs(first=VECTOR_SHAPES, scalar=True), st.data())
def test_random_hessian_in_place(program_dir, in_place_everywhere, program, data):
    fn, args = _control_flow(program_dir, program)
    check_hessian(fn, args, data.draw(_real_like(args[0]), label="v"))
    check_jacobians(fn, args)
