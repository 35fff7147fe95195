"""Large programs (issue 9, items 10 and 11): deep nesting, long straight-line
code, deep recursion, long unrolled loops and chains of local functions
transform without a RecursionError, without changing the interpreter's
recursion limit (also from two threads at once), into code whose expressions
nest shallowly, in time near-linear in their size.  Gradients are checked
against central finite differences: every coordinate (check_grad) for small
arguments, along random directions for long ones.  Larger sizes run with
ASTAD_FUZZ_EXAMPLES set."""

import ast
import os
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from conftest import check_grad, check_stages, load_program

import astad
from astad import frontend, pipeline
from astad.errors import UnsupportedFunctionError

BIG = bool(os.environ.get("ASTAD_FUZZ_EXAMPLES"))
X = np.array([0.3, -0.2])


def nested_calls(n):
    return f"import numpy as np\ndef f(x):\n    return {'np.sin(' * n}x{')' * n}\n"


def flat(n):
    body = "\n".join("    x = np.sin(x) * 0.5 + x" for _ in range(n))
    return f"import numpy as np\ndef f(x):\n{body}\n    return np.sum(x)\n"


HORNER_RECURSIVE = """
def horner(cs, x):
    if len(cs) == 1:
        return cs[0]
    return cs[0] + x * horner(cs[1:], x)

def f(cs, x):
    return horner(cs, x)
"""

HORNER_LOOP = """
def f(cs, x):
    s = 0.0
    for c in cs:
        s = s * x + c
    return s
"""

UNROLLED = """
import numpy as np

def f(ws, x):
    for w in ws:
        x = np.tanh(w * x + 0.1)
    return np.sum(x * x)
"""


def chain(n, twice=False):
    lines = ["import numpy as np", "def f(x):", "    def f0(y):", "        return np.sin(y)"]
    for i in range(1, n):
        call = f"f{i - 1}(y) + f{i - 1}(y * 0.5)" if twice else f"f{i - 1}(y) * 0.9 + y"
        lines += [f"    def f{i}(y):", f"        return {call}"]
    lines.append(f"    return np.sum(f{n - 1}(x))")
    return "\n".join(lines) + "\n"


def check_directions(fn, args, directions=3, eps=1e-6, rtol=1e-6):
    """The value equals ``fn(*args)`` and, along random directions ``v`` in the
    arguments, the pullback of 1.0 paired with ``v`` equals the central finite
    difference of ``fn`` along ``v`` (two evaluations per direction)."""
    rng = np.random.default_rng(1)
    value, pullback = astad.reverse(fn)(*args)
    np.testing.assert_allclose(value, fn(*args), rtol=1e-12)
    cts = pullback(1.0)
    for _ in range(directions):
        vs = [rng.standard_normal(np.shape(a)) for a in args]

        def moved(s):
            return fn(*[type(a)(np.asarray(a) + s * v) if isinstance(a, list) else a + s * v
                        for a, v in zip(args, vs)])

        fd = (moved(eps) - moved(-eps)) / (2 * eps)
        got = sum(float(np.sum(np.asarray(ct) * v)) for ct, v in zip(cts, vs))
        np.testing.assert_allclose(got, fd, rtol=rtol, atol=1e-7)


def max_nesting(source):
    """How deeply expressions nest in ``source`` (Python's parser; explicit stack)."""
    deepest, todo = 0, [(ast.parse(source), 0)]
    while todo:
        node, depth = todo.pop()
        depth += isinstance(node, ast.expr)
        deepest = max(deepest, depth)
        todo.extend((c, depth) for c in ast.iter_child_nodes(node))
    return deepest


#: generated expressions nest at most this deep (codegen.MAX_INLINED temporaries, a few levels each)
SHALLOW = 30


@pytest.mark.parametrize("n", [150, 190])
def test_calls_nested_deeply(tmp_path, n):
    f = load_program(nested_calls(n), tmp_path).f
    check_grad(f, [X])
    assert max_nesting(astad.reverse(f).source) <= SHALLOW


def test_error_deep_inside_a_deeply_nested_expression_points_at_its_statement(tmp_path):
    src = f"import numpy as np\ndef f(x):\n    y = x * 2.0\n    z = {'np.sin(' * 160}np.frobnicate(y){')' * 160}\n    return z\n"
    f = load_program(src, tmp_path).f
    with pytest.raises(UnsupportedFunctionError) as e:
        astad.reverse(f)(X)
    assert e.value.loc.line == 4 and "frobnicate" in e.value.message


@pytest.mark.parametrize("n", [500] + ([2000] if BIG else []))
def test_long_straight_line_code(tmp_path, n):
    f = load_program(flat(n), tmp_path).f
    check_grad(f, [X])
    assert max_nesting(astad.reverse(f).source) <= SHALLOW


def test_horner_recursive_small_every_coordinate(tmp_path):
    f = load_program(HORNER_RECURSIVE, tmp_path).f
    check_grad(f, [np.linspace(-1, 1, 30), 0.7])
    check_stages(f, [np.linspace(-1, 1, 30), 0.7])


@pytest.mark.parametrize("n", [500] + ([1500] if BIG else []))
def test_horner_recursive(tmp_path, n):
    f = load_program(HORNER_RECURSIVE, tmp_path).f
    limit = sys.getrecursionlimit()
    check_directions(f, [np.linspace(-1, 1, n) / n, 0.9])
    assert sys.getrecursionlimit() == limit
    assert max_nesting(astad.reverse(f).source) <= SHALLOW


@pytest.mark.parametrize("n", [500] + ([2000] if BIG else []))
def test_horner_loop_over_a_list(tmp_path, n):
    f = load_program(HORNER_LOOP, tmp_path).f
    check_directions(f, [list(np.linspace(-1, 1, n) / n), 0.9])
    assert max_nesting(astad.reverse(f).source) <= SHALLOW


@pytest.mark.parametrize("n", [500] + ([2000] if BIG else []))
def test_loop_unrolled_over_a_list_of_weights(tmp_path, n):
    f = load_program(UNROLLED, tmp_path).f
    check_directions(f, [list(np.linspace(0.5, 1.0, n)), X])
    assert max_nesting(astad.reverse(f).source) <= SHALLOW


def test_unrolled_small_every_coordinate(tmp_path):
    f = load_program(UNROLLED, tmp_path).f
    check_grad(f, [list(np.linspace(0.5, 1.0, 12)), X])


def _lowered_calls(monkeypatch, f, args):
    calls = []
    run_call = frontend.Lowerer.run_call

    def counting(self, *a, **k):
        calls.append(1)
        return run_call(self, *a, **k)

    monkeypatch.setattr(frontend.Lowerer, "run_call", counting)
    pipeline.transform(frontend.parse(f), [frontend.abstract(a, "x") for a in args])
    monkeypatch.undo()
    return len(calls)


def test_chain_of_local_functions_is_lowered_linearly(tmp_path, monkeypatch):
    """Each function calls the one before: lowering work grows linearly with
    the length of the chain (it was 2^n: a function-value try per call, nested)."""
    counts = {n: _lowered_calls(monkeypatch, load_program(chain(n), tmp_path).f, [X]) for n in (8, 16, 32)}
    assert counts[32] <= 2 * 32 + 2, counts
    assert counts[32] - counts[16] <= 2 * (counts[16] - counts[8]) + 2, counts


@pytest.mark.parametrize("n", [24] + ([64] if BIG else []))
def test_chain_of_local_functions_gradient(tmp_path, n):
    check_grad(load_program(chain(n), tmp_path).f, [X])


def test_chain_calling_twice_gradient(tmp_path):
    """Each function calls the one before twice: the unrolled program doubles
    with each function (inherent: calls are inlined); small ones are right."""
    check_grad(load_program(chain(5, twice=True), tmp_path).f, [X])


def test_two_threads_transform_at_once(tmp_path):
    """Transforms that need more stack than one segment (deep recursion, deep
    nesting) run in two threads at once, many times: every result is right and
    the recursion limit and thread stack size are what they were."""
    deep_recursion = load_program(HORNER_RECURSIVE, tmp_path).f
    deep_nesting = load_program(nested_calls(120), tmp_path).f
    cs = np.linspace(-1, 1, 120) / 120
    eps = 1e-6
    cases = [  # (function, arguments, output cotangent, the oracle's cotangents)
        (deep_recursion, [cs, 0.9], 1.0,  # sum_k cs[k] x^k, by hand
         (0.9 ** np.arange(120), sum(k * c * 0.9 ** (k - 1) for k, c in enumerate(cs)))),
        (deep_nesting, [X], np.ones(2),  # elementwise: central differences, coordinate by coordinate
         ((deep_nesting(X + eps) - deep_nesting(X - eps)) / (2 * eps),)),
    ]
    limit, stack = sys.getrecursionlimit(), threading.stack_size()
    errors = []

    def work(i):
        fn, args, ct, want = cases[i]
        try:
            for _ in range(2):
                d = pipeline.transform(frontend.parse(fn), [frontend.abstract(a, "x") for a in args])
                value, residuals = d.forward(*args)
                np.testing.assert_allclose(value, fn(*args), rtol=1e-12)
                for got, w in zip(d.backward(residuals, ct), want, strict=True):
                    np.testing.assert_allclose(got, w, rtol=1e-6, atol=1e-9)
                assert sys.getrecursionlimit() == limit
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert sys.getrecursionlimit() == limit and threading.stack_size() == stack


def test_no_global_interpreter_state_is_changed():
    """No module of astad sets the recursion limit, the thread stack size or
    numpy's error state for the process (a transform must change nothing
    global; numpy's errstate is used as a context manager only)."""
    root = Path(astad.__file__).parent
    for path in root.rglob("*.py"):
        text = path.read_text()
        for call in ("setrecursionlimit(", "threading.stack_size(", "np.seterr(", "warnings.simplefilter(",
                     "warnings.filterwarnings("):
            assert call not in text, f"{path.name} calls {call}"


def test_astads_ast_conversions_take_turns():
    """CPython 3.11 keeps the AST converter's recursion depth in shared state
    (python/cpython#106905): astad's own ast.parse/compile hold one lock, so its
    threads never interleave conversions (seen as an InternalError wrapping
    'AST constructor recursion depth mismatch' in the two-threads test)."""
    from astad import deep

    seen = []
    real = deep._AST

    class Spy:
        def __enter__(self):
            seen.append(real.locked())
            return real.__enter__()

        def __exit__(self, *exc):
            return real.__exit__(*exc)

    deep._AST = Spy()
    try:
        d = pipeline.transform(frontend.parse(deep_nested_for_lock_test), [frontend.abstract(X, "x")])
    finally:
        deep._AST = real
    assert seen and not any(seen)  # used, and free whenever astad took it (no nesting, no deadlock)
    value, residuals = d.forward(X)
    np.testing.assert_allclose(value, deep_nested_for_lock_test(X))


def deep_nested_for_lock_test(x):
    return np.sin(np.tanh(x)) * 2.0


def nested_ifs(n):
    """``if`` statements nested ``n`` deep, each updating ``s`` (bench/transform_time.py's family)."""
    lines = ["import numpy as np", "def f(x):", "    s = x * 1.0"]
    for k in range(n):
        indent = "    " * (k + 1)
        lines += [f"{indent}if np.sum(s) > {-100 - k}.0:", f"{indent}    s = np.sin(s) + 0.1 * s"]
    lines.append("    return np.sum(s)")
    return "\n".join(lines) + "\n"


def loop_body(n):
    body = "\n".join(f"        s = s + np.sin(x[i] * {1 + k % 7 / 10}) * s" for k in range(n))
    return f"import numpy as np\ndef f(x):\n    s = 1.0\n    for i in range(x.shape[0]):\n{body}\n    return s\n"


#: the modules whose passes walk the IR after the frontend (not codegen: the
#: code it writes for nested ``if``s sets deeper residuals to None per branch)
_PASSES = ("ir", "structural", "reverse", "copowers", "optimise", "accumulate", "lists_in_place", "blocks")


def _pass_calls(f, args, more=()):
    """How many Python function calls (generator resumptions too) the passes
    after the frontend make while transforming ``f`` (and the code in the files
    ``more``): a count, not a time."""
    root = Path(astad.__file__).parent
    files = {str(root / f"{m}.py") for m in _PASSES} | set(more)
    parsed = frontend.parse(f)
    types = [frontend.abstract(a, "x") for a in args]
    calls = [0]

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_filename in files:
            calls[0] += 1

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        pipeline.run_stages(parsed, types)
    finally:
        sys.setprofile(previous)
    return calls[0]


@pytest.mark.parametrize("make", [nested_ifs, loop_body])
def test_passes_work_near_linearly_in_program_size(tmp_path, make):
    """Doubling the program about doubles the passes' work.  Nested ``if``s
    were quadratic (ratio 4.8 from 20 to 40 levels): free variables and bound
    names recomputed at every level for the whole subtree, substitutions
    re-walking every nested block per level, generators nested once per level.
    What is left above 2 is the free variables themselves: the ``if`` at
    level k reads the residuals of every level below it."""
    counts = {n: _pass_calls(load_program(make(n), tmp_path).f, [X]) for n in (20, 40)}
    assert counts[40] <= 2.5 * counts[20], counts


def test_deeply_nested_ifs_gradient_and_stages(tmp_path):
    f = load_program(nested_ifs(30), tmp_path).f
    check_grad(f, [X])
    check_stages(f, [X])
