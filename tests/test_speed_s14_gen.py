"""Session 14 (gen): release's shortcuts agree with the definitions they shorten.

``_string_over_lines`` looks first for a lone docstring with single-character scans; ``_bound`` keeps
the bindings' targets as found where none is a tuple.  Each is checked against its definition, written
here independently, on drawn texts (quotes of both kinds, triple or not, on one line or over several).
"""

from __future__ import annotations

import random

import pytest

from astad.codegen import release


def _over_lines_by_definition(text: str) -> bool:
    """A string goes on over several lines: some line holds one triple quote, or three (not 0 or 2)."""
    return any(line.count('"""') + line.count("'''") not in (0, 2) for line in text.split("\n"))


_PIECES = ['"""', "'''", '"', "'", "x", " ", "\n", "v1 = a * b", '""""', "doc", "\n    "]


@pytest.mark.parametrize("seed", range(400))
def test_string_over_lines_matches_its_definition(seed: int) -> None:
    rng = random.Random(seed)
    text = "".join(rng.choice(_PIECES) for _ in range(rng.randrange(0, 14)))
    if rng.random() < 0.5:  # a body as codegen prints it: a docstring's line first
        text = '    """Reverse pass of f."""\n' + text
    expected = _over_lines_by_definition(text)
    assert release._string_over_lines(None, text) is expected
    assert release._string_over_lines(text.split("\n"), text) is expected


@pytest.mark.parametrize("text, expected", [
    ('    """doc."""\n    a = 1\n    return a', False),
    ('    """doc\n    more."""\n    a = 1', True),  # the docstring itself over two lines
    ('    """doc."""\n    a = "x"\n    return a', False),  # a quote after it, one line
    ('    """doc."""\n    a = """x\n    y"""', True),  # a second string over lines
    ('    """doc.""""\n    a = 1', False),  # four quotes: two triples on the line (the definition's count)
    ("    '''doc.'''\n    a = 1", False),
    ("    a = 'x'\n    b = 2", False),
    ("    a = 1", False),
])
def test_string_over_lines_cases(text: str, expected: bool) -> None:
    assert _over_lines_by_definition(text) is expected
    assert release._string_over_lines(None, text) is expected


@pytest.mark.parametrize("seed", range(200))
def test_bound_names_in_order_once_each(seed: int) -> None:
    rng = random.Random(seed)
    names = [f"v{k}" for k in range(6)]
    found = [", ".join(rng.sample(names, rng.choice([1, 1, 1, 2, 3]))) for _ in range(rng.randrange(0, 8))]
    expected: list[str] = []
    for target in found:  # the definition: each target's names, left to right, the first binding of each kept
        for name in target.split(", "):
            if name not in expected:
                expected.append(name)
    assert list(release._bound(found)) == expected


def test_released_body_of_a_docstring_over_lines_is_kept() -> None:
    """A long flat body whose docstring goes over two lines is not grouped (its lines are not all statements)."""
    lines = [f"    a{k} = a{k - 1} + 1" if k else "    a0 = x" for k in range(release.MIN_NAMES + 10)]
    body = '    """Doc\n    more."""\n' + "\n".join("    # line %d\n" % k + line for k, line in enumerate(lines))
    code = "def f(x):\n" + body + "\n    return a0\n"
    assert release.released(code) == code
    flat = code.replace('"""Doc\n    more."""', '"""Doc more."""')
    freed = release.released(flat)
    assert "    del " in freed  # (the same body with its docstring on one line is grouped and freed)
    namespace: dict = {}
    exec(compile(freed, "<test>", "exec"), namespace)  # noqa: S102
    assert namespace["f"](3) == 3


def _called_by_definition(code: str, names: list[str]) -> list[str]:
    """The helpers some word just before a ``(`` ends with (``re``'s ``\\w+`` words)."""
    import re

    words = re.findall(r"(\w+)\(", code)
    return sorted(name for name in names if any(w.endswith(name) for w in words))


@pytest.mark.parametrize("seed", range(300))
def test_called_helpers_match_their_definition(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    from astad import rules
    from astad.codegen import module

    rng = random.Random(seed)
    names = list(rules.RUNTIME)
    if seed % 3 == 0:  # a helper whose name ends another's: the words are searched instead
        names = names + ["of_max", "tangent"]
        monkeypatch.setattr(rules, "RUNTIME", {**rules.RUNTIME, "of_max": None, "tangent": None})
    parts = [rng.choice(["", "x", "_", "np.", "a", "(", "# "]) + rng.choice(names + ["np.sin", "x", "foo"])
             + rng.choice(["(", " (", "", "x(", ")("]) for _ in range(rng.randrange(0, 9))]
    code = " ".join(parts)
    assert module._called_helpers(code) == _called_by_definition(code, names)
