"""The frontend reads a function with Python's parser and makes libcst's nodes
from its tree (astad/frontend/from_ast.py): those nodes must be the ones
libcst's parser makes (whitespace, comments and punctuation aside), and each
must start where libcst's ``PositionProvider`` says (errors point there).
Checked on every function of the tests, the examples and the bench programs,
on hand-written sources, and on random programs reformatted at random
(parentheses, comments, line continuations, tabs, non-ASCII names and strings,
semicolons, one-line blocks).
"""

import ast
import dataclasses
import importlib
import inspect
import pathlib
import re
import textwrap

import libcst as cst
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from libcst.metadata import MetadataWrapper, PositionProvider

import test_random_control_flow
import test_random_programs
from astad import deep, source as astad_source
from astad.errors import UnsupportedSyntaxError
from astad.frontend import from_ast, syntax
from astad.positions import Starts
from conftest import fuzz_examples

ROOT = pathlib.Path(__file__).resolve().parent.parent
parse = importlib.import_module("astad.frontend.parse")  # (the package's `parse` is the function)

#: fields that hold only whitespace, comments or punctuation
_FORMATTING = frozenset({"leading_lines", "lines_after_decorators", "header", "footer", "indent", "first_colon",
                         "second_colon", "equal", "comma", "semicolon", "trailing_whitespace"})
#: nodes that are whitespace, comments or punctuation
_PUNCTUATION = (cst.BaseParenthesizableWhitespace, cst.EmptyLine, cst.TrailingWhitespace, cst.Newline, cst.Comma,
                cst.Semicolon, cst.Colon, cst.AssignEqual, cst.Dot, cst.LeftSquareBracket, cst.RightSquareBracket,
                cst.LeftCurlyBrace, cst.RightCurlyBrace, cst.MaybeSentinel)
#: nodes without a position the frontend asks for (operators: it asks for their expression's)
_UNPLACED = (cst.BaseBinaryOp, cst.BaseBooleanOp, cst.BaseUnaryOp, cst.BaseCompOp, cst.BaseAugOp, cst.LeftParen,
             cst.RightParen)


def assert_same_tree(made, parsed, starts, at, path="def", margin=""):
    """``made`` (from_ast's, starts in ``starts``) is ``parsed`` (libcst's, ``at(node)``: where its
    ``PositionProvider`` starts it) but for whitespace, comments and punctuation; lpar/rpar by their
    number; every node starts alike (``margin``: what dedenting ``made``'s source took off each line,
    a string's lines too)."""
    assert type(made) is type(parsed), f"{path}: {type(made).__name__} != {type(parsed).__name__}"
    if _is(type(parsed), _UNPLACED):
        return
    assert id(made) in starts, f"{path}: no start"  # (Starts: by the node's id)
    assert starts[id(made)] == at(parsed), f"{path}: starts at {starts[id(made)]}, libcst: {at(parsed)}"
    for f in _fields(type(parsed)):
        a, b = getattr(made, f), getattr(parsed, f)
        if f in ("lpar", "rpar"):
            assert len(a) == len(b), f"{path}.{f}: {len(a)} != {len(b)}"
        elif f.startswith("whitespace") or f in _FORMATTING or _is(type(a), _PUNCTUATION) \
                or _is(type(b), _PUNCTUATION):
            continue
        elif _is(type(b), cst.CSTNode):
            assert_same_tree(a, b, starts, at, f"{path}.{f}", margin)
        elif isinstance(b, (list, tuple)):
            assert isinstance(a, tuple) and len(a) == len(b), f"{path}.{f}: {a!r} != {b!r}"
            for i, (x, y) in enumerate(zip(a, b)):
                assert_same_tree(x, y, starts, at, f"{path}.{f}[{i}]", margin)
        elif margin and isinstance(b, str) and "\n" in b:
            assert a == _dedented(b, margin), f"{path}.{f}: {a!r} != {b!r}"
        else:
            assert a == b, f"{path}.{f}: {a!r} != {b!r}"


def _dedented(text, margin):
    """``text``'s lines after its first as ``textwrap.dedent`` of ``margin`` leaves them."""
    first, *rest = text.split("\n")
    return "\n".join([first, *("" if re.fullmatch(r"[ \t]+", line) else line.removeprefix(margin) for line in rest)])


_ISINSTANCE: dict = {}  # (type, classes) -> issubclass (isinstance of libcst's abstract classes is slow)
_FIELDS: dict = {}


def _is(cls, classes):
    found = _ISINSTANCE.get((cls, classes))
    if found is None:
        found = _ISINSTANCE[cls, classes] = issubclass(cls, classes)
    return found


def _fields(cls):
    found = _FIELDS.get(cls)
    if found is None:
        found = _FIELDS[cls] = [f.name for f in dataclasses.fields(cls)]
    return found


def _starts(module):
    """``PositionProvider``'s start of each node of ``module``."""
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    return lambda node: (positions[node].start.line, positions[node].start.column)


def assert_found(made, starts, found, source):
    """What from_ast says it found in ``made`` is what a walk of it finds, and the check of the
    syntax (astad.frontend.parse.check_subset) told it says what the full walk says."""
    nodes = list(deep.walk(made))
    assert found.names == {n.value for n in nodes if type(n) is cst.Name}
    assert found.called == {n.func.value for n in nodes if type(n) is cst.Call and type(n.func) is cst.Name}
    assert found.defs == sum(type(n) is cst.FunctionDef for n in nodes)
    outcomes = []
    for told in (None, found):
        parsed = parse.Parsed(None, "<source>", made, starts, 0, 0, source.splitlines(keepends=True), source)
        try:
            parse.check_subset(parsed, told)
        except UnsupportedSyntaxError as e:
            outcomes.append(str(e))
        else:
            outcomes.append((syntax.NAMES.pop(made), parsed.calls_own_name))
    assert outcomes[0] == outcomes[1]
    return outcomes[0]


def same_reading(source, name=None):
    """Read ``source``'s first ``def`` both ways and compare; False: from_ast declines it."""
    try:
        made, starts, found = from_ast.read(source, name or next(
            s.name for s in ast.parse(source).body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))))
    except from_ast.Decline:
        return False
    module = cst.parse_module(source)
    parsed = next(s for s in module.body if isinstance(s, cst.FunctionDef))
    assert type(starts) is Starts
    assert_same_tree(made, parsed, starts, _starts(module))
    assert_found(made, starts, found, source)
    return True


def defs(source, check=True):
    """Each ``def`` in ``source`` (nested ones too, after the defs around them; ``check``: only those
    Python's parser reads alone): its node, its first line (a decorator's), its indentation and its source, decorators
    included and dedented, as the frontend reads a function."""
    lines = source.splitlines(keepends=True)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            text = textwrap.dedent("".join(lines[first - 1:node.end_lineno]))
            if check:
                try:
                    ast.parse(text)
                except SyntaxError:  # (a line of it at column 0, in parentheses: no reading reads it)
                    continue
            yield node, first, len(lines[first - 1]) - len(lines[first - 1].lstrip()), text


def _files():
    return [*sorted((ROOT / "tests").glob("*.py")), *sorted((ROOT / "examples").glob("*.py")),
            ROOT / "bench" / "programs.py"]


@pytest.mark.parametrize("path", _files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_function_of_the_tests_examples_and_bench(path):
    """Each def from_ast reads (tests' own functions use much it declines) is libcst's reading of it.
    libcst reads each file's defs in one module, once (a def inside another found in the other's
    reading), their starts moved to each def's own dedented source."""
    text = path.read_text()
    lines = text.splitlines()
    read, outermost, module = [], [], []  # outermost: (first line, last line, indent, line in module)
    for node, first, indent, source in defs(text, check=False):
        if len(source) >= 20000:
            continue
        try:
            made, starts, found = from_ast.read(source, node.name)
        except (from_ast.Decline, SyntaxError):  # (SyntaxError: a def no reading reads alone, see defs)
            continue
        assert type(starts) is Starts
        assert_found(made, starts, found, source)
        around = next((o for o in outermost if o[0] <= node.lineno <= o[1]), None)  # (defs nest by lines)
        if around is None:
            around = (first, node.end_lineno, indent, len(module))
            outermost.append(around)
            module += source.splitlines()
        read.append((node, first, indent, made, starts, around))
    if not read:
        return
    positions = MetadataWrapper(cst.parse_module("\n".join(module) + "\n"),
                                unsafe_skip_copy=True).resolve(PositionProvider)
    found = {(positions[n].start.line, n.name.value): n for n in positions if type(n) is cst.FunctionDef}
    for node, first, indent, made, starts, (outer_first, _, outer_indent, at_line) in read:
        line = outer_first - 1 - at_line  # module's line + line: the file's

        def at(n, line=line - first + 1, column=outer_indent - indent):
            start = positions[n].start
            return start.line + line, start.column + column
        assert_same_tree(made, found[node.lineno - line, node.name], starts, at,
                         margin=lines[first - 1][outer_indent:indent])


@pytest.mark.parametrize("path", _files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_defs_lines_are_inspects(path):
    """astad.source reads the lines of a ``def`` where Python's parser ends it: inspect.getblock's lines."""
    lines = path.read_text().splitlines(keepends=True)
    _, ends = astad_source._module_facts("".join(lines))
    for first, end in ends.items():
        assert lines[first - 1:end] == inspect.getblock(lines[first - 1:]), first


def test_the_bench_programs_are_read_with_pythons_parser():
    import astad
    programs = importlib.import_module("bench.programs")
    astad.clear_caches(disk=False)
    for name, (fn, _, _) in programs.PROGRAMS.items():
        if fn.__name__ != "<lambda>":
            assert type(parse.parse(fn).positions) is Starts, name


SOURCES = [
    # parentheses: grouping, a call's only argument, tuples' own, generators', comments inside
    "def f(a, b: int = (2)) -> float:\n  x = f((a)); y = g((a), (b),); z=h(((a, b)), k=(c))\n  t = (a), b\n"
    "  u = ((a, b))\n  v = (1,); w=()\n  return ( # c (\n   a +\n  b) * c\n",
    "def f(a):\n  return np.stack([ g(x) for x in a ]), sum((x for x in a), 0), tuple(x for x in a), a[(1, 2)], a[()]\n",
    "def f(a):\n  return sum((x for x in a)), g(*a, **k), g(*(a), k=(a), **(k)), (a)(b)(c), (a).b, a[(1)], a[(i), j]\n",
    "def f(a):\n    if a: x = 1\n    elif b:\n        y = sum(x for x in a)\n    else:\n        z = a[ :2, ::]\n"
    "    return (a) < ( b)\n",
    # decorators, nested defs, one-line blocks, semicolons, comments between statements
    "@dec\n@ d2 (3)\ndef f(a, b: int = (2)) -> float:\n  # comment\n\n  def g(y): return y; pass\n"
    "  if a:  # (\n    pass\n  else:  # x\n    # y\n    return g(a)\n",
    # non-ASCII: columns in characters, not bytes
    "def f(é, b):\n  \"doc ü\"\n  y = é + \"ü\" + b  # ü (\n  z = [ (i) for i in ( y ) if i>0 if (i) for j in y]\n"
    "  return lambda q, r=1: q+é, 'ö' , (é)\n",
    # tabs, slices, loops, augmented assignments, comparisons, assert and raise
    "def f(a):\n\tx = a[1:2, 3][:, None][...]\n\tfor i, j in zip(a, b):\n\t\tx += i ** -j\n\t\tif i: break\n"
    "\t\telse: continue\n\twhile x < 3 <= 4: x = x @ a\n\tdef g(y):\n\t\treturn y\n\tassert x, \"m\"\n"
    "\traise ValueError(\"no\")\n",
    # line continuations, multi-line expressions, conditional and boolean expressions, annotations
    "def f(a):\n  x = a \\\n    + 1\n  y: float = -(a if a else not a and b or c)\n  z = [\n    1,\n    (2\n     ),\n  ]\n"
    "  return x.T.sum(axis=(0, 1)) \\\n    , y\n",
    "def f(a):\n  if (a <\n      b): return (\n    a)\n  elif a: return b\n  else: return c\n",
    "def f(x):\n    '''doc\n    # not a comment (\n    '''\n    return (  # c\n        x)\n",
    "def f(x):\n    s = '''a\n  b # c'''; t = (x)\n    return t\n",
    "def f(x):\n    \"ü ö é (\" \\\n      ; ä = (\"ß\", x)\n    return x\n",  # a semicolon on a continued line
    "def f(x):\n    y = (lambda: x)()\n    return (lambda q=(1): q)(x) + 1_000 + 0x1F + 1e-3 + 2.\n",
    # blanks, a tab, a continued line and a comment between a `(` and what it holds (the Text's openers)
    "def f(x):\n    y = (\t x) + ( (x) ) + ((  x  )) * g(( x ), (\\\n      x))\n    return (   # c\n\n"
    "       y\n    ) + (\n  x)\n",
    # a `)` on a line after the expression's end (after a comment, a blank line, a continuation)
    "def f(x):\n    y = (x\n         # c\n\n         )\n    z = (x  # c\n    )\n    w = (x \\\n    )\n"
    "    return (y +\n        z\t\n    ) + [w\n    ]\n",
]


@pytest.mark.parametrize("source", SOURCES)
def test_a_source_read_alike(source):
    assert same_reading(source)


@pytest.mark.parametrize("source", [
    "def f(x):\n    return f'{x}'\n",  # f-strings: libcst's reading (only print, raise and assert may have them)
    "def f(x):\n    return 'a' 'b'\n",
    "def f(x):\n    return {1: x}\n",
    "def f(x, *args):\n    return x\n",
    "def f(x):\n    for i in x:\n        pass\n    else:\n        pass\n",
    "def f(x):\n    return x in y\n",
    "async def f(x):\n    return x\n",
    "def f(x):\n    \ufb01 = x\n    return \ufb01\n",  # `ﬁ`: `fi` to Python's parser, not to libcst
])
def test_what_it_does_not_know_is_left_to_libcst(source):
    assert not same_reading(source, "f")


@pytest.mark.parametrize("source", [
    "def f(x):\n    return x\n    y = 1\n",
    "def f(x):\n    if x:\n        return x; y = 1\n    return x\n",
    "def f(x):\n    y = x\n    @dec\n    def g(y):\n        return y\n    return g(x)\n",
    "def f(x):\n    def g(y):\n        return y\n        y = 2\n    return g(x)\n",
    # which of several refusals is said: the first the walk meets (a def before the defs inside it)
    "def f(x):\n    y = x\n    @dec\n    def g(y):\n        return y\n        y = 2\n    return g(x)\n",
    "def f(x):\n    def g(y):\n        y = 1\n        @dec\n        def h(z):\n            return z\n        return h(y)\n"
    "        y = 1\n    return g(x)\n",
    "def f(x):\n    def g(y):\n        def h(z):\n            return z\n            z = 1\n        return h(y)\n"
    "    @dec\n    def k(y):\n        return y\n    return g(x)\n",
    "def f(x):\n    if x:\n        def g(y):\n            return y\n            y = 1\n    return x\n    z = 1\n",
    "def f(x):\n    y = [lambda q: q for _ in x]\n    def g(y):\n        def h(z):\n            return z\n"
    "        return h(y)\n    @d1\n    @d2\n    def k(y):\n        return y\n    return g(x)\n",
])
def test_what_the_check_refuses_in_a_def_read_with_pythons_parser(source):
    made, starts, found = from_ast.read(source, "f")
    assert isinstance(assert_found(made, starts, found, source), str)  # (a refusal's message)


@pytest.mark.parametrize("source", [
    "def f(x):\n    def g(y):\n        def h(z):\n            return z + f(z)\n        return h(y)\n"
    "    def k(y, w=(1)):\n        return lambda q: q + y\n    return g(x) + k(x)(x)\n",
    "def f(x):\n    if x:\n        def g(y):\n            return y\n    else:\n        def g(y):\n            return -y\n"
    "    return g(x)\n",
])
def test_defs_inside_a_def_read_with_pythons_parser_are_checked_alike(source):
    made, starts, found = from_ast.read(source, "f")
    assert found.defs == 1 + len(found.nested) > 2  # (the check looks at their signatures alone)
    assert not isinstance(assert_found(made, starts, found, source), str)


def test_other_line_breaks_are_left_to_libcst():
    with pytest.raises(from_ast.Decline):
        from_ast.read("def f(x):\r\n    return x\r\n", "f")


def test_syntax_children_are_the_children_but_formatting():
    for source in SOURCES:
        for node in deep.walk(cst.parse_module(source)):
            if isinstance(node, (*_PUNCTUATION, cst.Comment)):
                continue  # (never reached: their parents' fields are skipped)
            expected = [c for c in deep.children(node) if not isinstance(c, (*_PUNCTUATION, *_UNPLACED[-2:],
                                                                             cst.Comment))]
            assert deep.syntax_children(node) == expected, type(node).__name__


def test_every_formatting_field_of_libcst_is_skipped():
    kinds = ("Whitespace", "Comma", "Colon", "Semicolon", "AssignEqual", "Dot", "Paren", "Bracket", "Brace",
             "EmptyLine", "Newline", "Comment")
    for cls in vars(cst).values():
        if isinstance(cls, type) and issubclass(cls, cst.CSTNode) and dataclasses.is_dataclass(cls):
            for f in dataclasses.fields(cls):
                if any(k in str(f.type) for k in kinds) and f.name != "relative":  # (`from ..a import b`'s dots)
                    assert f.name in deep._FORMATTING or "whitespace" in f.name, (cls.__name__, f.name)


# --------------------------------------------------------------------------- random programs, reformatted

_WRAPS = [("(", ")"), ("( ", " )"), ("(\n", "\n)"), ("(  # c (\n", ")"), ("((", "))"), ("(\\\n", ")")]
_NAMES = ["é", "xé", "δ", "变量", "ŝ", "\ufb01x"]


def _offsets(source):
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    return lines, starts


def _parses(source):
    try:
        ast.parse(source)
        cst.parse_module(source)
    except (SyntaxError, cst.ParserSyntaxError):
        return False
    return True


def _parenthesised(draw, source):
    tree = ast.parse(source)
    inside = {id(n) for j in ast.walk(tree) if isinstance(j, ast.JoinedStr) for n in ast.walk(j)}
    exprs = [n for n in ast.walk(tree) if isinstance(n, ast.expr) and id(n) not in inside
             and not isinstance(n, (ast.Slice, ast.Starred))]
    if not exprs:
        return source
    n = draw(st.sampled_from(exprs))
    lines, starts = _offsets(source)

    def at(line, col):
        return starts[line - 1] + len(lines[line - 1].encode()[:col].decode())

    a, b = at(n.lineno, n.col_offset), at(n.end_lineno, n.end_col_offset)
    left, right = draw(st.sampled_from(_WRAPS))
    return source[:a] + left + source[a:b] + right + source[b:]


def _commented(draw, source):
    lines = source.splitlines(keepends=True)
    i = draw(st.integers(0, len(lines) - 1))
    text = draw(st.sampled_from(["  # ü (\n", "  #)\n", " # é ' \" \\\n"]))
    if draw(st.booleans()):
        return "".join(lines[:i] + [lines[i].rstrip("\n") + text] + lines[i + 1:])
    indent = re.match(r"[ \t]*", lines[i]).group()
    return "".join(lines[:i] + [indent + text.lstrip(), "\n"] + lines[i:])


def _continued(draw, source):
    spaces = [m.start() for m in re.finditer(r"(?<=\S) (?=\S)", source)]
    if not spaces:
        return source
    k = draw(st.sampled_from(spaces))
    return source[:k] + " \\\n      " + source[k + 1:]


def _tabbed(draw, source):
    return re.sub(r"(?m)^((?:    )+)", lambda m: "\t" * (len(m.group(1)) // 4), source)


def _non_ascii(draw, source):
    names = sorted(set(re.findall(r"\b(?:v|acc|t|y|z)\d*\b", source)))
    if names and draw(st.booleans()):
        old, new = draw(st.sampled_from(names)), draw(st.sampled_from(_NAMES))
        return re.sub(rf"\b{old}\b", new, source)
    header = re.search(r"def f\(.*\):\n", source)
    if header is None:
        return source
    text = draw(st.sampled_from(['    "ü ö é (" ; ä = ("ß", x)\n', "    é = 'ü' + \"(\" ; é = x\n"]))
    return source[:header.end()] + text + source[header.end():]


_SIMPLE = (ast.Assign, ast.AugAssign, ast.Expr, ast.Return, ast.Pass, ast.Break, ast.Continue)


def _one_line_statements(tree):
    return [s for s in ast.walk(tree) if isinstance(s, _SIMPLE) and s.lineno == s.end_lineno]


def _semicolons(draw, source):
    """Two simple statements of a block on one line: ``a = 1; b = 2``."""
    lines = source.splitlines(keepends=True)
    blocks = [b for n in ast.walk(ast.parse(source)) for b in (getattr(n, "body", 0), getattr(n, "orelse", 0))
              if isinstance(b, list)]
    pairs = [(a, b) for block in blocks for a, b in zip(block, block[1:])
             if isinstance(a, _SIMPLE) and isinstance(b, _SIMPLE) and a.end_lineno + 1 == b.lineno
             and b.lineno == b.end_lineno and not isinstance(a, ast.Return)]
    if not pairs:
        return source
    a, b = draw(st.sampled_from(pairs))
    i = b.lineno - 1
    return "".join(lines[:i - 1] + [lines[i - 1].rstrip("\n") + draw(st.sampled_from(["; ", " ;", ";"]))
                                    + lines[i].lstrip(" \t")] + lines[i + 1:])


def _one_line_block(draw, source):
    """A block of one simple statement on its header's line: ``if c: return x``."""
    lines = source.splitlines(keepends=True)
    heads = [n for n in ast.walk(ast.parse(source)) if isinstance(n, (ast.If, ast.For, ast.While))
             and len(n.body) == 1 and isinstance(n.body[0], _SIMPLE) and n.body[0].lineno == n.body[0].end_lineno
             and n.body[0].lineno == (n.test if isinstance(n, (ast.If, ast.While)) else n.iter).end_lineno + 1]
    if not heads:
        return source
    i = draw(st.sampled_from(heads)).body[0].lineno - 1
    return "".join(lines[:i - 1] + [lines[i - 1].rstrip("\n") + " " + lines[i].lstrip(" \t")] + lines[i + 1:])


_CHANGES = [_parenthesised, _commented, _continued, _tabbed, _non_ascii, _semicolons, _one_line_block]


@st.composite
def reformatted(draw):
    source = draw(st.one_of(test_random_programs.programs(), test_random_control_flow.programs()))[0]
    for _ in range(draw(st.integers(0, 8))):
        changed = draw(st.sampled_from(_CHANGES))(draw, source)
        if _parses(changed):
            source = changed
    return source


@settings(max_examples=fuzz_examples(12, long=60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reformatted())
def test_random_programs_reformatted_read_alike(source):
    note(source)
    read = [same_reading(d[3]) for d in defs(source)]
    # (f: the program; an f-string, and a name Python normalises, are left to libcst)
    assert read[-1] or "f'" in source or 'f"' in source or "\ufb01" in source
