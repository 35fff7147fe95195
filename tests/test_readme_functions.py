"""The README's list of supported functions is the call table's (issue 11,
point 7): this test makes the list from ``astad.frontend.numpy_api`` and
fails when the README's block differs, so the two never drift.

To update the README after adding a function: ``python tests/test_readme_functions.py``."""

from __future__ import annotations

import pathlib
import re
import sys

from astad.frontend.api_specs import Refused
from astad.frontend.numpy_api import API, BUILTINS, METHODS

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"
BEGIN = "<!-- functions: made from astad's call table; tests/test_readme_functions.py checks it -->"
END = "<!-- end of functions -->"


def _words(names) -> str:
    return "`" + " ".join(sorted(names, key=str.lower)) + "`"


def expected_block() -> str:
    by_module: dict[str, list[str]] = {}
    for name, spec in API.items():
        if isinstance(spec, Refused):
            continue
        module, _, short = name.rpartition(".")
        by_module.setdefault(module, []).append(short)
    lines = [BEGIN, f"- numpy, as `np.<name>`: {_words(by_module.pop(''))}"]
    lines += [f"- `np.{m}`: {_words(names)}" for m, names in sorted(by_module.items())]
    lines.append(f"- array methods, as `x.<name>(...)`: {_words(n for n, s in METHODS.items() if not isinstance(s, Refused))}")
    lines.append(f"- builtins and `math`: {_words(spec.title for spec in BUILTINS.values())}")
    lines.append(END)
    return "\n".join(lines)


def _current(text: str) -> str | None:
    m = re.search(re.escape(BEGIN) + r".*?" + re.escape(END), text, flags=re.S)
    return m.group(0) if m else None


def test_the_readme_lists_exactly_the_functions_of_the_call_table():
    text = README.read_text()
    current = _current(text)
    assert current is not None, f"README.md lacks the block between {BEGIN!r} and {END!r}"
    assert current == expected_block(), ("README.md's list of functions differs from the call table; "
                                         "run `python tests/test_readme_functions.py` to update it")


if __name__ == "__main__":
    text = README.read_text()
    current = _current(text)
    if current is None:
        sys.exit(f"README.md lacks the block between {BEGIN!r} and {END!r}: put them where the list belongs")
    README.write_text(text.replace(current, expected_block()))
    print("README.md updated")
