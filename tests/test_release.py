"""Long generated functions free the names they are done with (astad/codegen/release.py):
``del`` at the end of a source line's group, never before a read.

- a long straight-line program: its backward pass frees its cotangents (``del`` in
  the source; the peak memory of the backward pass stays a few arrays, not one
  per statement) and its gradient equals central finite differences;
- ``released`` on hand-written text: where the ``del`` lines go with nested
  blocks, ``else:``, tuple targets, residuals, names in strings;
- the random programs (straight-line, and with loops and branches) with every
  reverse-mode function released however short (``MIN_NAMES = 0``): the
  gradient against central differences and the IR interpreter."""

import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import astad
from astad.codegen import release
import test_random_control_flow as flow
import test_random_programs as straight
from conftest import check_grad, fuzz_examples, load_program

N_STATEMENTS = 90


def chain_source(n):
    """A straight-line function of ``n`` elementwise statements on one array."""
    steps = ["np.sin({a}) * 0.5 + {b}", "np.tanh({a} + 0.3 * {b})", "{a} * np.exp(-{b} * {b})",
             "{a} - 0.2 * {b} / (1.0 + {a} * {a})"]
    lines = ["import numpy as np", "", "", "def f(x):", "    v0 = x", "    v1 = np.cos(x)"]
    for k in range(2, n):
        lines.append(f"    v{k} = " + steps[k % len(steps)].format(a=f"v{k - 1}", b=f"v{k - 2}"))
    lines.append(f"    return np.sum(v{n - 1} * v{n - 2})")
    return "\n".join(lines) + "\n"


def test_a_long_backward_frees_its_cotangents(tmp_path):
    fn = load_program(chain_source(N_STATEMENTS), tmp_path, "chain").f
    check_grad(fn, [np.random.default_rng(0).uniform(-1, 1, 5)])
    x = np.random.default_rng(1).uniform(-1, 1, 20_000)
    r = astad.reverse(fn)
    _, pullback = r(x)
    assert "    del " in r.source[r.source.index("def f_backward"):]
    tracemalloc.start()
    try:
        pullback(1.0)
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        pullback(1.0)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    # without `del`, some 2 * N_STATEMENTS arrays of x's size would be alive at the end
    assert peak < 20 * x.nbytes, peak / x.nbytes


def short(x):
    y = np.sin(x) * x
    return np.sum(y * y)


def test_short_code_has_no_del():
    r = astad.reverse(short)
    r(np.ones(3))
    assert "del " not in r.source


TEXT = '''\
# header
import numpy as np


def f_backward(residuals, out_ct):
    """Reverse pass of f: names in a "docstring" a_ct do not matter."""
    x, r = residuals
    # line 3: first
    a_ct = out_ct * x
    b_ct, c_ct = a_ct, a_ct * 2.0
    # line 4: second
    if x[0] > 0:
        # line 5: nested
        d_ct = b_ct + 1.0
    else:
        d_ct = c_ct * r
    e_ct = d_ct + 0.0
    # line 6: a loop reads a_ct, b_ct is in a string
    for i in range(2):
        e_ct = e_ct + a_ct
    msg = "b_ct"
    # line 7: last
    f_ct = e_ct + r
    return f_ct, msg
'''


def test_where_del_goes(monkeypatch):
    """After the group of the statement that mentions a name last (an ``if`` with its
    ``else``, a loop): names bound at the top level only (not a loop's ``i``, not
    ``d_ct`` bound in the branches), not the residuals or parameters, not in the
    group that returns; a mention in a string counts, one in a comment does not."""
    monkeypatch.setattr(release, "MIN_NAMES", 0)
    got = release.released(TEXT)
    assert got == TEXT.replace("    e_ct = d_ct + 0.0\n", "    e_ct = d_ct + 0.0\n    del c_ct\n").replace(
        '    msg = "b_ct"\n', '    msg = "b_ct"\n    del a_ct, b_ct\n')
    want, have = {}, {}
    exec(compile(TEXT, "<text>", "exec"), want)
    exec(compile(got, "<released>", "exec"), have)
    for x in (np.array([1.0, 2.0]), np.array([-1.0, 2.0])):  # both branches
        assert have["f_backward"]((x, 3.0), 0.5)[0].tolist() == want["f_backward"]((x, 3.0), 0.5)[0].tolist()


def test_many_names_are_freed_in_lines_of_at_most_max_width(monkeypatch):
    monkeypatch.setattr(release, "MIN_NAMES", 0)
    monkeypatch.setattr(release, "MAX_WIDTH", 36)
    names = [f"a{k}" for k in range(11)]
    text = ("def f(x):\n    # line 2: one\n" + "".join(f"    {n} = x + {k}\n" for k, n in enumerate(names))
            + f"    y = {' + '.join(names)}\n    # line 3: two\n    return y\n")
    got = release.released(text)
    assert "    del a0, a1, a2, a3, a4, a5, a6\n    del a7, a8, a9, a10\n    # line 3: two" in got  # 36 wide


def test_below_the_threshold_nothing_changes():
    assert release.released(TEXT) == TEXT


@pytest.fixture(scope="module")
def released_always():
    old, release.MIN_NAMES = release.MIN_NAMES, 0
    try:
        yield
    finally:
        release.MIN_NAMES = old


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("released_programs")


@settings(max_examples=fuzz_examples(6, long=30), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
@given(st.data())
def test_random_programs_released(released_always, program_dir, data):
    source, params, seed = data.draw(straight.programs())
    note(source)
    fn = load_program(source, program_dir, "released").f
    args = straight._arguments(params, seed)
    check_grad(fn, args, seed=seed % 1000)
    straight.check_stages(fn, args, seed)


@settings(max_examples=fuzz_examples(6, long=15), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
@given(st.data())
def test_random_control_flow_released(released_always, program_dir, data):
    source, instrumented, params, dynamic, seed = data.draw(flow.programs())
    note(source)
    args = flow._arguments(params, seed)
    if dynamic:
        args[-1] = np.int64(args[-1])
    margins = load_program(instrumented, program_dir, "margins")
    margins.f(*args)
    if min(margins._MARGINS, default=np.inf) <= flow.MARGIN:
        return  # a comparison near its boundary: finite differences would cross it
    fn = load_program(source, program_dir, "released_flow").f
    check_grad(fn, args, seed=seed % 1000)
    flow.check_stages(fn, args, seed)


def test_a_long_group_frees_every_max_group_statements(monkeypatch):
    """One line of the user's can make hundreds of statements (a recursion inlined)."""
    monkeypatch.setattr(release, "MIN_NAMES", 0)
    n = 2 * release.MAX_GROUP + 3
    text = ("def f(x):\n    # line 2: all of it\n    a0 = x + 1.0\n"
            + "".join(f"    a{k} = a{k - 1} * 2.0\n" for k in range(1, n)) + f"    return a{n - 1}\n")
    got = release.released(text).splitlines()
    dels = [k for k, line in enumerate(got) if line.startswith("    del ")]
    assert len(dels) == 2 and got[dels[0] - 1] == f"    a{release.MAX_GROUP - 1} = a{release.MAX_GROUP - 2} * 2.0"
    assert got[dels[0]] == "    del " + ", ".join(f"a{k}" for k in range(release.MAX_GROUP - 1))
    namespace = {}
    exec("\n".join(got), namespace)
    assert namespace["f"](1.0) == 2.0 * 2 ** (n - 1)


def test_a_comment_before_except_stays_in_the_try(monkeypatch):
    """The scalar fast path's loop is a ``try:`` whose ``except`` is headed by a comment."""
    monkeypatch.setattr(release, "MIN_NAMES", 0)
    text = ("def f(x):\n    # line 2: a\n    a = x + 1.0\n    try:\n        b = a * 2.0\n"
            "    # Python floats raise where numpy warns\n    except (ArithmeticError, ValueError):\n        b = a\n"
            "    # line 3: c\n    c = b + 1.0\n    # line 4: d\n    return c\n")
    got = release.released(text)
    assert got == text.replace("    # line 3: c\n", "    del a\n    # line 3: c\n")  # (b: bound in the try only)
    namespace = {}
    exec(got, namespace)
    assert namespace["f"](1.0) == 5.0


def test_non_ascii_names_are_freed_as_ascii_ones(monkeypatch):
    """Code that is not all ASCII is read with the Unicode patterns: the same ``del`` lines."""
    monkeypatch.setattr(release, "MIN_NAMES", 0)
    greek = {"a_ct": "α_ct", "b_ct": "β_ct", "c_ct": "γ_ct"}

    def renamed(text):
        for old, new in greek.items():
            text = text.replace(old, new)
        return text

    assert release.released(renamed(TEXT)) == renamed(release.released(TEXT))


@given(st.text(st.characters(max_codepoint=127), max_size=40))
def test_ascii_patterns_match_as_the_unicode_ones(text):
    """On ASCII text, the patterns release.py uses there find what its Unicode patterns find."""
    assert release._WORD_ASCII.findall(text) == release._WORD.findall(text)
    for line in (text, "    " + text, "    x, y2 = " + text, "    _a += " + text):
        ascii_match, unicode_match = release._BIND_ASCII.fullmatch(line), release._BIND.fullmatch(line)
        assert (ascii_match and ascii_match.groups()) == (unicode_match and unicode_match.groups())


_LINE_PIECES = st.sampled_from(["    ", "x", "y2", ", ", " = ", " += ", " == ", "residuals", "=", " ", "#", "é", "\t"])


@given(st.lists(st.lists(_LINE_PIECES, max_size=8).map("".join) | st.sampled_from(
    ["    x = residuals", "    x, y2 = residuals", "    x = residuals ", "    x = residuals2", "    x += y2"]), max_size=6))
def test_bindings_of_a_text_are_its_lines_bindings(lines):
    """The targets _BINDS finds in a text of several lines are, in order, those of its lines _BIND
    matches, but where the value is ``residuals`` (the ASCII patterns too, on ASCII text); searched, as
    release.py searches, in the text after a newline."""
    text = "\n".join(lines)
    for bind, binds in [(release._BIND, release._BINDS), (release._BIND_ASCII, release._BINDS_ASCII)]:
        if binds is release._BINDS_ASCII and not text.isascii():
            continue
        want = [m.group(1) for m in map(bind.fullmatch, lines) if m and m.group(2) != "residuals"]
        assert binds.findall("\n" + text) == want


_QUOTE_PIECES = st.sampled_from(['"""', "'''", '"', "'", "x", "    ", "\n", '""""', "#"])


@given(st.lists(_QUOTE_PIECES, max_size=12).map("".join))
def test_string_over_lines_is_a_line_with_one_or_three_triple_quotes(text):
    """release's quick test of a string over several lines (the text's counts first) says what the test
    of every line says."""
    body = text.split("\n")
    q0, q1 = '"' * 3, "'" * 3
    want = any(line.count(q0) + line.count(q1) not in (0, 2) for line in body)
    assert release._string_over_lines(body, text) == want


_WORD_PIECES = st.sampled_from(["a1e5", "a", "b2", "_c", "1", "1e5", "0x1f", "12_3", "2.5e-3", ".", " ", "\n", "(", "#",
                                '"', "é", "β2"])


@given(st.lists(_WORD_PIECES, max_size=30).map("".join), st.lists(st.integers(0, 60), max_size=6))
def test_last_mentions_of_words_as_found_one_by_one(text, cuts):
    """release._last_mentions of ASCII text (split at the characters not in words) gives each word the
    last group of the text that _WORD finds it in (groups beginning and ending between words)."""
    bounds = sorted({0, len(text), *(c for c in cuts if c < len(text) and not (text[c].isalnum() or text[c] == "_"))})
    groups = list(zip(bounds, bounds[1:]))
    want: dict[str, int] = {}
    for g, (start, end) in enumerate(groups):
        want.update(dict.fromkeys(release._WORD.findall(text[start:end]), g))
    assert release._last_mentions(text, groups, False) == want
    if text.isascii():
        assert release._last_mentions(text, groups, True) == want
