"""A function at the top of its module is read from the module's tree (astad.source.module_def):
the module's text is parsed once, for what it imports and where its defs end, and the frontend
reads the def's node from that tree, not parsing the def's text again.  That reading must be the
reading of the def's text alone, positions included (errors point there)."""

import ast
import importlib
import linecache
import pathlib

import pytest

import astad
from astad import deep, source
from astad.errors import SourceUnavailableError, UnsupportedSyntaxError
from astad.frontend import from_ast

ROOT = pathlib.Path(__file__).resolve().parent.parent
parse = importlib.import_module("astad.frontend.parse")


def _files():
    return [*sorted((ROOT / "tests").glob("*.py")), *sorted((ROOT / "examples").glob("*.py")),
            ROOT / "bench" / "programs.py"]


def _reading(text, name, tree=None, shift=0):
    """from_ast's reading, its starts on the lines of ``text`` (those of a module's tree: ``shift`` lines down)."""
    try:
        made, starts, found = from_ast.read(text, name, tree, shift)
    except (from_ast.Decline, SyntaxError) as e:
        return type(e).__name__
    return made, [None if id(n) not in starts else (starts[id(n)][0] - shift, starts[id(n)][1])  # (Starts: by id)
                  for n in deep.walk(made)], found


def _same(a, b):
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    (made_a, starts_a, found_a), (made_b, starts_b, found_b) = a, b
    return made_a.deep_equals(made_b) and starts_a == starts_b and found_a.names == found_b.names and (
        found_a.called == found_b.called and found_a.defs == found_b.defs and len(found_a.nested) == len(found_b.nested))


@pytest.mark.parametrize("path", _files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_def_read_from_its_modules_tree_is_its_text_read_alone(path):
    text = path.read_text()
    lines = text.splitlines(keepends=True)
    source.clear_module_tree()
    _, ends = source._module_facts.__wrapped__(text)  # (parses the module: its tree is kept)
    read = 0
    for first, end in sorted(ends.items()):
        node = source.module_def(text, first, end)
        if lines[first - 1][:1] in (" ", "\t"):
            assert node is None  # (a def inside a block, a method: read alone)
            continue
        if node is None:
            continue
        dedented = source.dedent("".join(lines[first - 1:end]))
        alone = _reading(dedented, node.name)
        assert _same(_reading(dedented, node.name, node, first - 1), alone), (path.name, node.name)
        read += not isinstance(alone, str)
    if path.name == "programs.py":
        assert read > 10


def test_the_bench_programs_are_read_from_their_modules_tree():
    programs = importlib.import_module("bench.programs")
    astad.clear_caches(disk=False)
    read = 0
    for name, (fn, _, _) in programs.PROGRAMS.items():
        if fn.__name__ == "<lambda>" or not hasattr(fn, "__code__"):
            continue
        lines, first, file, dedented, node = source.read_with_tree(fn)
        if lines[0][:1] not in (" ", "\t"):
            assert node is not None and node.name == fn.__code__.co_name, name
            read += 1
    assert read > 10


def test_a_cold_reading_parses_the_module_once(monkeypatch):
    programs = importlib.import_module("bench.programs")
    fn = programs.PROGRAMS["straight_line_500"][0]
    astad.clear_caches(disk=False)
    parsed = []
    real = deep.parse_ast
    monkeypatch.setattr(deep, "parse_ast", lambda text, *a: parsed.append(len(text)) or real(text, *a))
    found = parse.parse(fn)
    assert len(parsed) == 1  # (the module's: the def is read from its tree)
    assert found.funcdef.name.value == fn.__name__ and found.line_offset == 0


def _define(text, filename, name):
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    scope = {"np": __import__("numpy")}
    exec(compile(text, filename, "exec"), scope)
    return scope[name]


def test_errors_point_at_the_modules_lines():
    """A def far down its module, read from the module's tree: its error is at the module's line."""
    line = "    é = np.sin(x); z = ('ü', {1: é})\n"  # (columns in characters, not bytes)
    text = f"import numpy as np\n\n\ndef g(x):\n    return x\n\n\n@np.vectorize\ndef f(x):\n{line}    return z\n"
    fn = _define(text, "<astad test: module tree errors>", "f").pyfunc
    astad.clear_caches(disk=False)
    assert source.read_with_tree(fn)[4] is not None
    with pytest.raises(UnsupportedSyntaxError) as e:
        parse.parse(fn)
    assert (e.value.loc.line, e.value.loc.col, e.value.loc.text) == (10, line.index("{") + 1, line)


def test_a_module_with_other_line_breaks_is_not_read_from_its_tree():
    text = "x = 1\f\ndef f(x):\n    return x\n"
    source.clear_module_tree()
    _, ends = source._module_facts.__wrapped__(text)
    assert ends and all(source.module_def(text, first, end) is None for first, end in ends.items())


def test_an_edited_cell_is_refused_not_read_from_the_old_tree():
    """The tree kept is the module text's own: an edited text (a notebook cell run again, an edited file)
    is parsed again, and a function whose code is not its text is refused."""
    name = "<astad test: module tree edited>"
    fn = _define("def f(x):\n    return x * 2.0\n", name, "f")
    astad.clear_caches(disk=False)
    assert astad.grad(fn)(1.0) == 2.0
    linecache.cache[name] = (30, None, ["def f(x):\n", "    return x * 3.0\n"], name)
    astad.clear_caches(disk=False)
    with pytest.raises(SourceUnavailableError, match="not the code Python runs"):
        parse.parse(fn)
    assert source._last_tree[0] == "def f(x):\n    return x * 3.0\n"


def test_a_method_or_nested_function_is_read_alone():
    text = "class A:\n    def m(self, x):\n        return x\n\ndef outer():\n    def inner(x):\n        return x\n" \
           "    return inner\n"
    source.clear_module_tree()
    _, ends = source._module_facts.__wrapped__(text)
    assert source.module_def(text, 2, 3) is None and source.module_def(text, 6, 7) is None
    assert isinstance(source.module_def(text, 5, 8), ast.FunctionDef)


def test_the_tree_kept_is_forgotten_by_clear_caches():
    source._module_tree("def f(x):\n    return x\n")
    astad.clear_caches(disk=False)
    assert source._last_tree == ("", None)


@pytest.mark.parametrize("text, kept", [
    ("import numpy as np\n\n\ndef f(x):\n    return np.sin(x)\n", False),  # its only def: forgotten once read
    ("def g(x):\n    return x\n\n\ndef f(x):\n    return g(x) * 2.0\n", True),  # another def may be read next
    ("class A:\n    pass\n\n\ndef f(x):\n    return x * 2.0\n", True),
    ("h = lambda x: x\n\n\ndef f(x):\n    return x * 2.0\n", True),  # a lambda's reading looks in the tree
])
def test_a_modules_tree_is_kept_only_where_another_reading_may_use_it(text, kept):
    """The tree of a module whose only def is the one read is forgotten (the first collection of the
    garbage collector would walk all of it); the reading, and a second one, are the same either way."""
    name = f"<astad test: module tree kept {kept} {len(text)}>"
    fn = _define(text, name, "f")
    astad.clear_caches(disk=False)
    lines, first, file, dedented, node = source.read_with_tree(fn)
    assert node is not None and node.name == "f"
    assert (source._last_tree[0] == text) == kept
    want = astad.grad(fn)(0.5)
    astad.clear_caches(disk=False)
    source.clear_module_tree()
    assert source.read_with_tree(fn)[4] is not None  # (parsed again: read from the tree again)
    assert astad.grad(fn)(0.5) == want
