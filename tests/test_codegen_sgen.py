"""Codegen's faster ways to the same text (session 11, sgen): each is checked against the plain
definition it replaces, on drawn inputs."""

from __future__ import annotations

import random

from astad import rules
from astad.codegen.module import _called_helpers


def test_called_helpers_are_the_helpers_whose_call_text_is_in_the_code() -> None:
    """``_called_helpers(code)`` (one search of the text reversed) is ``sorted(name for name in RUNTIME
    if name + "(" in code)``: on texts drawn from the helpers' names, their suffixes and prefixes, parentheses,
    dots, spaces, newlines and a non-ASCII word character."""
    names = sorted(rules.RUNTIME)
    rng = random.Random(11)
    seen = 0
    for _ in range(4000):
        parts = []
        for _ in range(rng.randint(0, 12)):
            r = rng.random()
            if r < 0.3:
                parts.append(rng.choice(names))
            elif r < 0.5:
                parts.append("(")
            elif r < 0.6:
                parts.append(rng.choice(["x", "_", "\u00e9", "1", ".", " ", "\n", "np.", "list_", "# "]))
            else:
                name = rng.choice(names)
                parts.append(name[rng.randint(0, 5):len(name) - rng.randint(0, 2)] + rng.choice(["(", "", " ("]))
        code = "".join(parts)
        expected = sorted(n for n in rules.RUNTIME if f"{n}(" in code)
        assert _called_helpers(code) == expected, code
        seen += bool(expected)
    assert seen > 1000  # (the texts call helpers often)


def test_next_def_is_where_a_line_beginning_def_begins() -> None:
    """``release._next_def(code, pos)`` is ``re.compile("^def ", re.MULTILINE).search(code, pos)``'s start
    (-1 for None), on drawn texts of ``def``, newlines and other characters, from every position."""
    import re

    from astad.codegen.release import _NOT_FLAT, _next_def

    pattern = re.compile(r"^def ", re.MULTILINE)
    rng = random.Random(12)
    for _ in range(400):
        code = "".join(rng.choice(["def ", "def", "\n", " ", "x", "\ndef", "de", "f "]) for _ in range(rng.randint(0, 10)))
        for pos in range(len(code) + 1):
            m = pattern.search(code, pos)
            assert _next_def(code, pos) == (-1 if m is None else m.start()), (code, pos)
    # a body is flat where none of the six kinds of lines is in it
    kinds = ["\n     ", "\n\n", "\n    else:", "\n    elif ", "\n    except", "\n    finally:"]
    for _ in range(2000):
        t = "".join(rng.choice(kinds + ["\n    ", "x", " ", "\n", "else:", "elif ", "    "]) for _ in range(rng.randint(0, 8)))
        assert (_NOT_FLAT.search(t) is not None) == any(k in t for k in kinds), t
