"""Random programs over arrays whose sizes are known only at run time: slices
with run-time bounds, concatenations, arrays that grow or shrink in loops and
whose length differs between branches.  Each program's gradient and JVP are
checked against central finite differences (float64), and reverse against
forward (<u, J v> == <J^T u, v>).  The shapes of the drawn operations would
have found the bugs fixed with run-time sizes (a loop-carried array of run-time
size whose cotangent had no shape; concatenate's transpose at run-time offsets)."""

from __future__ import annotations

import linecache
import textwrap

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import astad
from conftest import fuzz_examples

# Statements on the run-time-sized vector `v` (length >= 1 kept by each form) and
# the scalar `acc`; `x` is the argument (length 6), `n` a run-time int.
FORMS = [
    "v = np.concatenate([v, np.sin(v[-1:]) * x[{k}]])",
    "v = np.concatenate([x[:{k} + 1], v * 0.5])",
    "v = np.concatenate([v[::-1], np.tanh(v)])[: n + 1]",
    "v = v[1:] * v[:-1] if v.shape[0] > 1 else v * x[{k}]",
    "v = np.cos(v) + x[: v.shape[0]].sum()",
    "acc = acc + np.sum(v * v) * x[{k}]",
    "acc = acc + np.sum(np.outer(v, x[:{k} + 1]))",
    "v = np.concatenate([np.zeros(2), v, x[n % 6:]])[1:]",
]


@st.composite
def programs(draw):
    lines, depth = [], 1

    def emit(text):
        lines.append("    " * depth + text)

    for _ in range(draw(st.integers(2, 6))):
        kind = draw(st.sampled_from(["stmt", "stmt", "loop", "if"]))
        if kind == "stmt":
            emit(draw(st.sampled_from(FORMS)).format(k=draw(st.integers(0, 5))))
            continue
        emit("for i in range(n):" if kind == "loop" else f"if {draw(st.sampled_from(['n % 2 == 0', 'acc > 0.0', 'v.shape[0] > 3']))}:")
        depth += 1
        for _ in range(draw(st.integers(1, 3))):
            emit(draw(st.sampled_from(FORMS)).format(k=draw(st.integers(0, 5))))
        if kind == "if" and draw(st.booleans()):
            depth -= 1
            emit("else:")
            depth += 1
            emit(draw(st.sampled_from(FORMS)).format(k=draw(st.integers(0, 5))))
        depth -= 1
    ret = draw(st.sampled_from(["acc", "acc + np.sum(np.sin(v))", "np.sum(v) * x[0]"]))
    body = "\n".join(lines)
    return f"def f(x, n):\n    v = x[: n % 4 + 1]\n    acc = 0.0\n{body}\n    return {ret}\n"


_COUNTER = [0]


def _compile(src):
    _COUNTER[0] += 1
    filename = f"<random-sizes-{_COUNTER[0]}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    ns = {"np": np}
    exec(compile(src, filename, "exec"), ns)  # noqa: S102 - a program drawn by the test
    return ns["f"]


@settings(max_examples=fuzz_examples(10, long=25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(src=programs(), n=st.integers(0, 4), seed=st.integers(0, 2**16))
def test_random_programs_with_run_time_sizes(src, n, seed):
    f = _compile(src)
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.0, 1.0, 6)
    try:
        value = f(x, n)
    except (IndexError, ValueError):
        return  # the drawn program is not valid Python for these sizes
    grad = astad.grad(f)(x, n)
    eps = 1e-6
    fd = np.array([(f(x + eps * e, n) - f(x - eps * e, n)) / (2 * eps) for e in np.eye(6)])
    scale = 1.0 + np.abs(fd).max()
    assert np.abs(grad - fd).max() <= 1e-5 * scale, textwrap.indent(src, "  ")
    u = rng.normal(size=6)
    val, tangent = astad.jvp(f, (x, n), (u, None))
    assert abs(val - value) <= 1e-12 * (1 + abs(value))
    assert abs(tangent - float(grad @ u)) <= 1e-9 * (1 + abs(tangent)), textwrap.indent(src, "  ")
