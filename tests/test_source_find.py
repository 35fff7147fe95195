"""astad.source reads a function's lines as inspect.findsource does; for a text linecache
keeps (a notebook cell's, generated code's) without inspect's search of every module, and
a cell run again with new text is read anew (and checked against the code Python runs)."""

import inspect
import linecache

import numpy as np
from hypothesis import given, settings, strategies as st
import pytest

import astad
from astad import source
from astad.errors import SourceUnavailableError
from conftest import fuzz_examples


def define(text, name, filename):
    """``name`` defined by ``text`` as a notebook cell defines it (its text kept in linecache)."""
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    scope = {"np": np}
    exec(compile(text, filename, "exec"), scope)
    return scope[name]


CELL = '''import numpy as np

x0 = 1.0


def deco(f):
    return f


@deco
def f(x):
    return np.sum(np.sin(x) * x)


g = lambda x: np.sum(x * x)


async def h(x):
    return x
'''


@pytest.mark.parametrize("filename", ["<cell-find-1>", "/tmp/ipykernel_0/cell_find_1.py"])
def test_lines_as_inspect_reads_them(filename):
    scope = {}
    for name in ("f", "g", "h", "deco"):
        fn = define(CELL, name, filename)
        scope[name] = fn
        assert source._find_source(fn.__code__) == inspect.findsource(fn.__code__)
        assert source._source_file(fn.__code__) == (inspect.getsourcefile(fn.__code__) or fn.__code__.co_filename)
    x = np.linspace(-1.0, 1.0, 5)
    assert np.allclose(astad.grad(scope["f"])(x), np.sin(x) + x * np.cos(x))
    assert np.allclose(astad.grad(scope["g"])(x), 2 * x)


def test_a_file_on_disk_as_inspect_reads_it():
    fn = source.dedent  # (a module of astad's: read from its file)
    assert source._find_source(fn.__code__) == inspect.findsource(fn.__code__)


def test_a_cell_run_again_is_read_again():
    f = define("def f(x):\n    return x * x\n", "f", "<cell-find-2>")
    assert astad.grad(f)(3.0) == pytest.approx(6.0)
    # the cell's text replaced, the function not run again: its text is not its code
    linecache.cache["<cell-find-2>"] = (10, None, ["def f(x):\n", "    return x * x * x\n"], "<cell-find-2>")
    with pytest.raises(SourceUnavailableError, match="not the code Python runs"):
        source.read(f)
    f = define("def f(x):\n    return x * x * x\n", "f", "<cell-find-2>")
    assert astad.grad(f)(2.0) == pytest.approx(12.0)


def test_lines_out_of_range_are_refused():
    f = define("def f(x):\n    return x * x\n", "f", "<cell-find-3>")
    linecache.cache["<cell-find-3>"] = (0, None, ["\n"], "<cell-find-3>")  # (fewer lines than the code's)
    code = f.__code__.replace(co_firstlineno=5)
    with pytest.raises(OSError):
        source._find_source(code)
    with pytest.raises(OSError):
        inspect.findsource(code)


def _dedent_by_tokens(text):
    """``source.dedent`` as it was before its shortcut: the strings found by reading the tokens."""
    import textwrap
    inside = source._in_strings(text)
    if inside:
        return source._dedent_code(text, inside)
    if text[:1] not in ("", " ", "\t", "\n"):
        return source._BLANK_LINE.sub("", text)
    return textwrap.dedent(text)


_PIECES = ["def f(x):", "    ", "\t", " ", "\n", "\r\n", "\r", "\f", '"""', "'''", "\\", "x", "#", "return x", "'", '"']


@given(st.lists(st.sampled_from(_PIECES), max_size=30))
@settings(max_examples=fuzz_examples(160, long=400), deadline=None)
def test_dedent_shortcut_is_the_reading_by_tokens(pieces):
    text = "".join(pieces)
    assert source.dedent(text) == _dedent_by_tokens(text)
    top = "def f(x):\n" + text  # (a module-level def: where the shortcut applies)
    assert source.dedent(top) == _dedent_by_tokens(top)


def test_dedent_of_a_docstring_with_blank_lines_keeps_them():
    text = 'def f(x):\n    """Doc.\n    \n    more\n    """\n    \n    return x\n'
    assert source.dedent(text) == 'def f(x):\n    """Doc.\n    \n    more\n    """\n\n    return x\n'
    plain = 'def f(x):\n    """Doc.\n\n    more\n    """\n    return x\n'
    assert source.dedent(plain) == plain
