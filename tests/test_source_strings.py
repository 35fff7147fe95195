"""Functions whose text holds a multi-line string (a docstring, a string constant): the lines
inside the string are part of its value, so reading the function's source must neither dedent
nor indent them. astad refused such a closure, a method with a string constant less indented
than its code, and a function whose docstring has a line of spaces ("the file was edited since
the module was imported"). Gradients are checked against central differences."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import astad
from astad import source
from conftest import central_differences

X = np.array([0.1, -0.4, 0.7])


def make_closure(scale):
    def closure(x):
        """A closure's docstring,
        on two lines."""
        note = """a string
whose second line is at column 0"""
        return np.sum(np.sin(x) * scale)
    return closure


def spaces_in_docstring(x):
    """A docstring whose second line holds only spaces:
    
    (editors keep them)."""
    return np.sum(x ** 3)


class Model:
    def loss(self, x):
        """A method."""
        label = '''raw
  text less indented than the code'''
        return np.sum(np.tanh(x) * 2.0)


@pytest.mark.parametrize("fn", [make_closure(2.0), spaces_in_docstring, Model().loss],
                         ids=["closure", "spaces", "method"])
def test_functions_with_multi_line_strings_are_read(fn):
    np.testing.assert_allclose(astad.grad(fn)(X), central_differences(fn, X), rtol=1e-6, atol=1e-8)


def test_the_lines_inside_strings_are_left_as_they_are():
    text = '    def f(x):\n        """doc\n  inside\n    """\n        return x\n'
    assert source.dedent(text) == 'def f(x):\n    """doc\n  inside\n    """\n    return x\n'
    assert source.indent(source.dedent(text), "  ") == '  def f(x):\n      """doc\n  inside\n    """\n      return x\n'


def test_without_multi_line_strings_dedent_is_textwrap_s():
    import textwrap
    for text in ["    a = 1\n\n      b = 2\n", "def f():\n    \n    return 1\n", "\tx\n\ty\n"]:
        assert source.dedent(text) == textwrap.dedent(text)
        assert source.indent(text, "  ") == textwrap.indent(text, "  ")


@given(st.text(alphabet="x \t\n\r", max_size=30))
@settings(max_examples=400, deadline=None)
def test_dedent_is_textwrap_s_for_any_blanks(text):
    """Lines of blanks anywhere (at the end, before "\\r", ...): dedent empties them as textwrap does
    (it looks for them only where a line ends in a blank)."""
    import textwrap
    assert source.dedent(text) == textwrap.dedent(text)
    assert source.dedent("def f():\n" + text) == textwrap.dedent("def f():\n" + text)
