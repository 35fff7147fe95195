"""Products the backward pass has in hand already (astad/optimise/products.py):
``x * -u`` as ``-(x * u)`` where ``x * u`` was computed, ``(ct * a) * b`` as
``ct * c`` where the forward pass made ``c = a * b``.

Each pattern (both orders of the factors) against central finite differences,
with the products the backward pass computes counted; where the rule must not
fire (the inner product read twice, an integer product); and random expressions
of products, negations and exponentials (hypothesis; arrays broadcast against each other,
integers, statements in loops) against finite differences."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import astad
from conftest import check_grad, fuzz_examples, load_program

RNG = np.random.default_rng(7)


def gauss(v, a):
    return np.sum(a * np.exp(-v * v))


def gauss_swapped(v, a):
    return np.sum(np.exp(v * -v) * a)


def gauss_scaled(v, a):
    return np.sum(np.exp(-(v * v)) * a * 0.5)


def shared_inner(v, a):
    e = np.exp(v)
    y = a * e
    return np.sum(y) + np.sum(a * v)


def counted_mul(fn, *args):
    """How many products (``mul``) the optimised backward pass computes."""
    text = astad.reverse(fn).ir("optimised", *args)
    backward = text[text.index("_backward("):]
    return backward.count("= mul(")


@pytest.mark.parametrize("fn", [gauss, gauss_swapped, gauss_scaled])
def test_gaussian(fn):
    v, a = RNG.standard_normal(5), RNG.standard_normal(5)
    check_grad(fn, [v, a])
    # a_ct = ct * e, e_ct * e -> ct * y, v's two terms: one product and its negation
    assert counted_mul(fn, v, a) == (4 if fn is gauss_scaled else 3)  # (the scaled one: out_ct * 0.5 first)


def test_an_inner_product_read_twice_is_kept(tmp_path):
    v, a = RNG.standard_normal(4), RNG.standard_normal(4)
    check_grad(shared_inner, [v, a])


def integer_factor(x, n):
    return np.sum(n * np.exp(x) * x)


def test_an_integer_factor():
    x, n = RNG.standard_normal(4), np.array([1, -2, 3, 4])
    check_grad(integer_factor, [x, n])


# --------------------------------------------------------------- random expressions

@st.composite
def expressions(draw, names, depth=3):
    """An expression of ``names`` (``x``, ``y``: arrays of 3, ``s``: a float, ``m``: an array of
    (2, 1), broadcast against the others, ``k``: integers of 3, and earlier results) of products,
    negations, sums and ``np.exp`` of bounded arguments."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        name = draw(st.sampled_from(names))
        return draw(st.sampled_from([name, f"(-{name})", "0.7"]))
    kind = draw(st.sampled_from(["mul", "mul", "neg", "exp", "add", "square", "times_exp"]))
    if kind == "square":  # -v * v, v * -v
        name = draw(st.sampled_from(names))
        return draw(st.sampled_from([f"(-{name} * {name})", f"({name} * -{name})"]))
    if kind == "times_exp":  # a * exp(b), exp(b) * a
        a = draw(expressions(names, depth - 1))
        e = f"np.exp(np.tanh({draw(expressions(names, depth - 1))}))"
        return draw(st.sampled_from([f"({a} * {e})", f"({e} * {a})"]))
    if kind == "neg":
        return f"(-{draw(expressions(names, depth - 1))})"
    if kind == "exp":
        return f"np.exp(np.tanh({draw(expressions(names, depth - 1))}))"
    a, b = draw(expressions(names, depth - 1)), draw(expressions(names, depth - 1))
    return f"({a} {'*' if kind == 'mul' else '+'} {b})"


@st.composite
def programs(draw):
    lines = []
    names = ["x", "y", "s", "m", "k"]
    for j in range(draw(st.integers(1, 4))):
        e = draw(expressions(names))
        if draw(st.booleans()):  # in a loop: the forward's products at the top level, the backward's in the loop
            lines += [f"    v{j} = np.tanh({e})", "    for i in range(2):",
                      f"        v{j} = v{j} * 0.5 + np.sum(np.tanh({draw(expressions(names + [f'v{j}']))})) * 0.1"]
        else:
            lines.append(f"    v{j} = np.tanh({e})")
        names.append(f"v{j}")
    terms = " + ".join(f"np.sum({n} * {draw(st.sampled_from(names))})" for n in names[5:])
    return "import numpy as np\n\n\ndef f(x, y, s, m, k):\n" + "\n".join(lines) + f"\n    return {terms}\n"


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("shared_products")


@settings(max_examples=fuzz_examples(10, long=40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.integers(0, 2 ** 16))
def test_random_products(program_dir, source, seed):
    note(source)
    fn = load_program(source, program_dir, "products").f
    rng = np.random.default_rng(seed)
    check_grad(fn, [rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3), float(rng.uniform(-1, 1)),
                    rng.uniform(-1, 1, (2, 1)), rng.integers(-3, 4, 3)], seed=seed)
