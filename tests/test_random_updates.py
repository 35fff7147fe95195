"""Random programs that read arrays by integer arrays (with repeated indices)
and boolean masks, and update arrays the function made (``y[i] = v``,
``y[a:b] = v``, ``y[::2] = v``, ``y[idx] += v``, ``y[mask] = v``, ``np.put_along_axis``), straight
and in loops that carry the updated array, with bait that must be refused:
an update while another name or a view still sees the array, or of the
argument itself.

The oracle is the one of tests/test_random_aliasing.py
(``conftest.check_correct_or_refused``: the same value, the arguments left as
plain Python leaves them, the pullback against central finite differences
and the IR interpreter at every stage, or astad's own refusal), and forward
mode (``forward_oracle.check_forward``) on the same program."""

import copy
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

from conftest import Refused, check_correct_or_refused, fuzz_examples, load_program, user_stack
from forward_oracle import check_forward

N = 6
TALLY: Counter = Counter()


@st.composite
def scalars(draw, arrays=("x",)):
    """A float expression: an element, a product of elements, a function of one."""
    a = draw(st.sampled_from(arrays))
    j, k = draw(st.integers(0, N - 1)), draw(st.integers(0, N - 1))
    return draw(st.sampled_from([f"{a}[{j}]", f"{a}[{j}] * x[{k}]", f"np.sin({a}[{j}])", f"0.5 * x[{k}]", "2.0"]))


@st.composite
def statements(draw, depth=0):
    """One statement updating or reading ``y`` (and ``s``, a running float)."""
    kind = draw(st.sampled_from(["item", "slice", "step", "index", "aug_index", "mask", "read_index", "read_mask",
                                 "rebind", "put_along"] + (["loop"] if depth == 0 else [])))
    v = draw(scalars(("x", "y")))
    a = draw(st.integers(0, N - 2))
    b = draw(st.integers(a + 1, N))
    if kind == "item":
        return kind, [f"y[{draw(st.integers(-N, N - 1))}] = {v}"]
    if kind == "slice":
        return kind, [draw(st.sampled_from([f"y[{a}:{b}] = {v}", f"y[{a}:{b}] = x[{a}:{b}] * {v}",
                                            f"y[{a}:{b}] -= x[{N - b + a}:] ** 2"]))]
    if kind == "step":
        return kind, [draw(st.sampled_from([f"y[::2] = x[1::2] * {v}", f"y[::-1] = y * {v}", f"y[1::3] += {v}",
                                            f"y[{b - 1}::-2] *= x[0]"]))]
    if kind in ("index", "aug_index"):
        op = "=" if kind == "index" else draw(st.sampled_from(["+=", "-=", "*="]))
        rhs = draw(st.sampled_from([v, "x[:3]", "x[idx] * x[0]"]))
        return kind, [f"y[idx] {op} {rhs}"]
    if kind == "mask":
        c = draw(st.sampled_from(["0.0", "0.7", "1.2"]))
        return kind, [draw(st.sampled_from([f"y[y > {c}] = {v}", f"y[x < {c}] = 0.0", f"y[x > {c}] += x[x > {c}]"]))]
    if kind == "read_index":
        return kind, [draw(st.sampled_from(["s = s + np.sum(y[idx] * x[idx[::-1]])", "s = s + np.sum(x[[1, 1, 3]] * y[:3])",
                                            "s = s + np.sum(y[np.newaxis] * x[:, None])"]))]
    if kind == "read_mask":
        return kind, [draw(st.sampled_from(["s = s + np.sum(y[x > 1.0] ** 2)", "s = s + np.sum(x[y < 0.5])"]))]
    if kind == "put_along":  # np.put_along_axis assigns y: a loop must carry it
        return kind, [draw(st.sampled_from([f"np.put_along_axis(y, idx, {v}, axis=0)",
                                            "np.put_along_axis(y, idx, x[idx] * y[idx] + 0.5, axis=0)"]))]
    if kind == "rebind":
        return kind, [draw(st.sampled_from(["y = np.sin(y)", "y = y * x", "y = y[::-1] + 0.0"]))]
    body = [draw(st.sampled_from(["y[i] = y[i - 1] * x[i] + y[i]", "y[i] += y[i - 1] * 0.5",
                                  "y[i - 1:i + 1] = x[i] * y[i - 1]", "s = s + y[i] * x[i - 1]",
                                  "y[idx] += x[i] * y[i]", "s = s + np.sum(np.sin(y) * x)",
                                  "w = y * 2.0\n    y[i] = w[i - 1] * x[i]",
                                  "np.put_along_axis(y, idx, y[idx] * x[i] + 0.1, axis=0)"]))]
    if draw(st.booleans()):
        body.append(draw(statements(depth=1))[1][0])
    lines = [part for line in body for part in line.split("\n    ")]
    return "loop", ["for i in range(1, 6):"] + ["    " + line for line in lines]


BAIT = {
    "alias": ["z = y"], "view": ["z = y[1:]"], "argument": ["y = x"], "argument_view": ["y = x[::2]"],
    "reverse_view": ["z = y[::-1]"],
}


@st.composite
def programs(draw):
    alloc = draw(st.sampled_from(["np.zeros(6)", "x * 1.5", "x.copy()", "np.ones(6) * x[0]"]))
    lines = [f"y = {alloc}", "s = 0.0"]
    counts: Counter = Counter()
    bait = draw(st.sampled_from([None] * 4 + sorted(BAIT)))
    n = draw(st.integers(1, 4))
    at = draw(st.integers(0, n - 1))
    for k in range(n):
        if bait is not None and k == at:
            lines += BAIT[bait]
            counts["bait " + bait] += 1
        kind, stmt = draw(statements())
        lines += stmt
        counts[kind] += 1
    ret = draw(st.sampled_from(["np.sum(y * x) + s", "y * s + y", "y"]))
    if bait in ("alias", "view", "reverse_view") and draw(st.booleans()):
        ret = f"{ret} + np.sum(z)"  # read the bait after the update: it sees the change in plain Python
    source = "import numpy as np\n\n\ndef f(x, idx):\n" + "".join(f"    {line}\n" for line in lines) + f"    return {ret}\n"
    x = np.round(np.random.default_rng(draw(st.integers(0, 2 ** 16))).uniform(0.3, 1.6, N), 3)
    idx = np.array(draw(st.lists(st.integers(-N, N - 1), min_size=3, max_size=3)))
    return source, [x, idx], counts


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("updates")


_FEW = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                                  HealthCheck.data_too_large])


@settings(max_examples=fuzz_examples(25, long=40), **_FEW)
@given(programs(), st.data())
def test_random_updates(program_dir, program, data):
    source, args, counts = program
    note(source)
    note(f"args = {args!r}")
    fn = load_program(source, program_dir, "updates").f
    try:
        with np.errstate(all="ignore"):
            fn(*copy.deepcopy(args))
    except Exception:  # noqa: BLE001 - a program plain Python cannot run (shapes that do not fit)
        assume(False)
    try:
        check_correct_or_refused(fn, args, seed=0)
        reverse_refused = False
        TALLY["accepted"] += 1
        TALLY.update("accepted " + k for k in counts)
    except Refused as e:
        note(f"refused: {e}")
        reverse_refused = True
        TALLY["refused"] += 1
        TALLY.update("refused " + k for k in counts)
    try:
        with user_stack():
            check_forward(fn, args, data, reverse=not reverse_refused)
    except Refused as e:
        assert reverse_refused, f"reverse mode accepts the program, forward mode refuses it: {e}"


def test_tallies_show_both_outcomes():
    """Refusing everything passes the oracle: updates of made arrays must be accepted, the bait refused."""
    print(f"\nupdates: {dict(TALLY)}")
    if TALLY["accepted"] + TALLY["refused"] < 20:
        pytest.skip("run with the random test of this module")
    assert TALLY["accepted"] > 0 and TALLY["refused"] > 0, TALLY
