"""The generated module around codegen's functions: its header of comments, its imports (numpy,
``math`` where it is read, the runtime helpers the functions call), the functions' definitions."""

from __future__ import annotations

import re
from typing import Sequence

import libcst as cst

from .. import backends, rules
from .. import pyexpr as px
from .render import render

_param = px.maker(cst.Param, "name")

#: the word just before each ``(`` of a text reversed (``np.sin(x)`` reversed: ``nis``)
_CALLED_REVERSED = re.compile(r"\((\w+)")


def funcdef(name: str, params: Sequence[str], body: list[cst.SimpleStatementLine], doc: str) -> cst.FunctionDef:
    docline = cst.SimpleStatementLine(body=[cst.Expr(cst.SimpleString(f'"""{doc}"""'))])
    return cst.FunctionDef(
        name=cst.Name(name),
        params=cst.Parameters(params=[_param(px.identifier(p)) for p in params]),
        body=cst.IndentedBlock(body=[docline, *body]),
        leading_lines=[cst.EmptyLine(), cst.EmptyLine()],
    )


def module_source(header: str, functions: list[cst.FunctionDef]) -> str:
    """A generated module: ``header`` as comments, ``import numpy as np`` (and
    ``import math`` where it prints ``math.exp(x)`` of a Python float), the
    runtime helpers the functions call (from :data:`astad.rules.RUNTIME`), the functions."""
    imports = [cst.SimpleStatementLine(body=[cst.Import(names=[cst.ImportAlias(name=cst.Name("numpy"), asname=cst.AsName(cst.Name("np")))])])]
    module = cst.Module(
        header=[cst.EmptyLine(comment=cst.Comment(f"# {line}")) if line else cst.EmptyLine() for line in header.splitlines()],
        body=[*imports, *functions],
    )
    code = render(module)  # module.code, printed faster
    # (a comment quoting the user's line may say `math.` too: then the import is unused)
    more = ["import math\n"] if "math." in code and re.search(r"\bmath\.", code) else []
    helpers = _called_helpers(code)
    numpy = "import numpy as np\n"
    more.append(backends.import_line())  # numpy, or numpy with Dask's (CuPy's) array creation
    if helpers:
        more.append(f"from astad.primitives import {', '.join(helpers)}\n")
    if more != [numpy]:  # the imports' lines put in place of numpy's, rather than printing the module again
        at = 0 if code.startswith(numpy) else code.index("\n" + numpy) + 1  # the first line not a comment
        code = code[:at] + "".join(more) + code[at + len(numpy):]
    return code


def _called_helpers(code: str) -> list[str]:
    """The runtime helpers whose ``name(`` is in ``code``, sorted: those a word just before a ``(`` ends
    with (the word ``name(`` ends, there), all such words found by one search of the text reversed, where
    ``name( in code`` for each helper scans it once each (a quarter of printing a 4,000-line module).
    Where no helper's name ends another's, the search finds the helpers' names themselves (reversed, each
    just after a ``(``: at most one of them there), not every word before a ``(``."""
    names = tuple(rules.RUNTIME)
    if _HELPERS[0] != names:  # (the table's helpers, as of now: a helper may be added after the first search)
        _HELPERS[:] = names, _names_after_paren(names)
    found = _HELPERS[1]
    if found is not None:
        return sorted({name[::-1] for name in found.findall(code[::-1])})
    called = set(_CALLED_REVERSED.findall(code[::-1]))
    return sorted(name for name in names if any(w.startswith(name[::-1]) for w in called))


#: the helpers' names the search below was made of, and it (None: a name ends another's)
_HELPERS: list = [None, None]


def _names_after_paren(names: tuple[str, ...]) -> re.Pattern | None:
    """A search of ``(`` then a helper's name reversed (the helper called, in the text reversed), or None where
    two names could be found there at once (one ends the other: then the words are found, see above)."""
    if not names or any(a != b and a.endswith(b) for a in names for b in names):
        return None
    return re.compile(r"\((" + "|".join(re.escape(name[::-1]) for name in names) + ")")
