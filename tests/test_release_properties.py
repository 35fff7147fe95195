"""``del`` lines of astad/codegen/release.py on drawn function texts: what must hold
wherever they go (tests/test_release.py has where they go on hand-written text and
the random programs' gradients with every function released).

On module texts drawn from the shapes of lines generated code has (top-level
assignments of one or several names, augmented ones, comments heading groups,
``if``/``else`` and ``try``/``except`` (a comment before the ``except``) with
their nested lines, returns, names in strings, other functions and top-level lines),
with every function released however short (``MIN_NAMES = 0``) and small
groups (``MAX_GROUP = 3``):

- the text less the ``del`` lines added is the text given;
- a name deleted was bound by a top-level assignment of its function before the
  ``del``, and no line after it in the function (but a comment's) mentions it;
- a ``del`` is a top-level statement: never followed by a deeper line or a
  clause (``else:``, ``except``) of the statement before it.
"""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from astad.codegen import release
from conftest import fuzz_examples

NAMES = ["a", "b", "c", "d_ct", "t1", "x"]
_IDENT = re.compile(r"[^\W\d]\w*")
_CLAUSES = ("    else:", "    elif ", "    except", "    finally:")


_NAME = st.sampled_from(NAMES)  # (made once: a strategy made for every draw was most of the test's time)


def _statement(draw):
    """The lines of one statement (a compound one with its nested lines), or a comment heading a group."""
    name = lambda: draw(_NAME)  # noqa: E731
    nested = lambda: [f"        {name()} = {name()} * 2.0" for _ in range(draw(st.integers(1, 2)))]  # noqa: E731
    kind = draw(st.integers(0, 8))
    if kind == 5:
        return ["    if x > 0:", *nested(), *(["    else:", *nested()] if draw(st.booleans()) else [])]
    if kind == 6:
        return ["    try:", *nested(), *(["    # Python floats raise where numpy warns"] if draw(st.booleans()) else []),
                "    except (ArithmeticError, ValueError):", *nested()]
    return [[f"    {name()} = {name()} + {name()}"], [f"    {name()}, {name()} = f({name()})"],
            [f"    {name()} += {name()}"], [f"    # line {draw(st.integers(1, 9))}: {name()} = {name()}"],
            [f'    s = "{name()}"'], None, None, [""], [f"    return {name()}"]][kind]


_HEADS, _ENDS = st.sampled_from(["def f(a, x):", "def g(x):", "y = 1"]), st.sampled_from(["", "\n"])


@st.composite
def modules(draw):
    lines = ["import numpy as np", ""]
    for _ in range(draw(st.integers(1, 3))):
        lines.append(draw(_HEADS))
        for _ in range(draw(st.integers(0, 20))):
            lines += _statement(draw)
    return "\n".join(lines) + draw(_ENDS)


def _functions(lines):
    """(first, end) line ranges of the functions' bodies."""
    out, k = [], 0
    while k < len(lines):
        k += 1
        if lines[k - 1].startswith("def "):
            start = k
            while k < len(lines) and (lines[k].startswith("    ") or not lines[k]):
                k += 1
            out.append((start, k))
    return out


@settings(max_examples=fuzz_examples(16, long=40), deadline=None)
@given(modules())
def test_del_lines_keep_every_read(monkeypatch_module, text):
    got = release.released(text)
    lines = got.split("\n")
    added = [k for k, line in enumerate(lines) if line.startswith("    del ")]
    assert "\n".join(line for k, line in enumerate(lines) if k not in set(added)) == text
    for start, end in _functions(lines):
        for k in (k for k in added if start <= k < end):
            names = lines[k][len("    del "):].split(", ")
            before = [m for line in lines[start:k] if (m := re.fullmatch(r"    ([\w, ]+?) [-+*/]?= .*", line))]
            bound = {n for m in before for n in m.group(1).split(", ")}
            assert set(names) <= bound, (lines[k], bound)
            for line in lines[k + 1:end]:
                if not line.startswith("    #"):
                    assert not set(names) & set(_IDENT.findall(line)), (lines[k], line)
            following = lines[k + 1] if k + 1 < end else ""
            assert not following.startswith("     ") and not following.startswith(_CLAUSES), (lines[k], following)



@settings(max_examples=fuzz_examples(16, long=40), deadline=None)
@given(modules())
def test_nothing_freed_found_early_as_by_groups(monkeypatch_module, text):
    """A function whose last statement reads every name it binds is left as it is without grouping its
    lines (release._read_at_end): what grouping them gives."""
    assert _released_without("_read_at_end", False, text) == release.released(text)


def _released_without(step, answer, text):
    """``release.released(text)`` with release's ``step`` answering ``answer`` whatever it is asked."""
    kept = getattr(release, step)
    setattr(release, step, lambda *args: answer)
    try:
        return release.released(text)
    finally:
        setattr(release, step, kept)


def _flattened(text):
    """``text`` without its nested lines and clauses (a function of them: a flat body, release._flat_body's)."""
    return "\n".join(line for line in text.split("\n") if not line.startswith(("     ", *_CLAUSES)))


@settings(max_examples=fuzz_examples(16, long=40), deadline=None)
@given(modules())
def test_flat_bodies_as_line_by_line(monkeypatch_module, text):
    """A flat function body (its lines statements of one line and comments) is released on its text, its
    lines not split (release._flat_body): as releasing it line by line does, with groups of MAX_GROUP too."""
    for module in (text, _flattened(text)):
        assert _released_without("_flat_body", None, module) == release.released(module)


@pytest.fixture(scope="module")
def monkeypatch_module():
    old = release.MIN_NAMES, release.MAX_GROUP
    release.MIN_NAMES, release.MAX_GROUP = 0, 3
    try:
        yield
    finally:
        release.MIN_NAMES, release.MAX_GROUP = old
