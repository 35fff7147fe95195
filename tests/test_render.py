"""astad.codegen.render prints a module exactly as libcst's ``Module.code``
does: random trees of the node classes codegen builds (with libcst's default
whitespace and with other whitespace, parentheses, commas and semicolons),
and the modules astad generates for a few programs."""

import libcst as cst
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import astad
from astad import codegen
from astad.codegen import module as codegen_module
from astad.codegen import python as codegen_python
from astad.codegen.render import Line, render

import test_random_control_flow as random_control_flow
from conftest import fuzz_examples

_names = st.sampled_from(["x", "np", "t12", "x_ct", "residuals", "_"])
_space = st.sampled_from(["", " ", "  "])
_ws = _space.map(cst.SimpleWhitespace)


def _b(make, *strategies):
    """``st.builds(make, *strategies)``, the name ``x`` where libcst refuses the combination drawn
    (``f(**a, *b)``; a statement refused, which these strategies do not draw, would fail the test)."""
    def build(*args):
        try:
            return make(*args)
        except cst.CSTValidationError:
            return cst.Name("x")
    return st.builds(build, *strategies)


def _maybe_parens(node_strategy):
    """Some nodes in parentheses (one or two pairs), some with whitespace inside them."""
    def wrap(node, pairs, inner):
        if pairs == 0:
            return node
        lpar = [cst.LeftParen(whitespace_after=cst.SimpleWhitespace(inner))] * pairs
        rpar = [cst.RightParen(whitespace_before=cst.SimpleWhitespace(inner))] * pairs
        return node.with_changes(lpar=lpar, rpar=rpar)
    return _b(wrap, node_strategy, st.sampled_from([0, 0, 0, 1, 2]), _space)


_leaves = st.one_of(
    _names.map(cst.Name),
    st.integers(0, 99).map(lambda i: cst.Integer(str(i))),
    st.sampled_from(["1.5", "0.0", "1e-05"]).map(cst.Float),
    st.sampled_from(['"""doc"""', "'s'"]).map(cst.SimpleString),
)

_BINOPS = [cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.MatrixMultiply, cst.Power, cst.FloorDivide, cst.BitAnd]
_CMPOPS = [cst.LessThan, cst.GreaterThanEqual, cst.Equal, cst.NotEqual, cst.IsNot, cst.NotIn]


def _comma():
    return st.one_of(st.just(cst.MaybeSentinel.DEFAULT), st.builds(cst.Comma, _ws, _ws))


def _args(expr):
    plain = _b(lambda v, c, w: cst.Arg(v, comma=c, whitespace_after_arg=w), expr, _comma(), _ws)
    keyword = _b(lambda k, v, eq: cst.Arg(v, keyword=cst.Name(k), equal=eq), _names, expr,
                        st.one_of(st.just(cst.MaybeSentinel.DEFAULT), st.builds(cst.AssignEqual, _ws, _ws)))
    starred = _b(lambda v, s: cst.Arg(v, star=s), expr, st.sampled_from(["*", "**"]))
    return st.lists(st.one_of(plain, plain, keyword, starred), max_size=3)


def _elements(expr):
    return st.lists(_b(lambda v, c: cst.Element(v, comma=c), expr, _comma()), min_size=1, max_size=3)


def _compound(expr):
    index = st.builds(cst.Index, expr)
    slice_ = _b(lambda a, b, c: cst.Slice(lower=a, upper=b, step=c),
                       st.none() | expr, st.none() | expr, st.none() | expr)
    subscript_elements = st.lists(_b(lambda s, c: cst.SubscriptElement(s, comma=c), index | slice_, _comma()),
                                  min_size=1, max_size=3)
    return _maybe_parens(st.one_of(
        _b(lambda v, a: cst.Attribute(v, cst.Name(a)), expr, _names),
        _b(lambda f, args, w: cst.Call(f, args, whitespace_before_args=w), expr, _args(expr), _ws),
        _b(lambda l, op, r, a, b: cst.BinaryOperation(l, op(whitespace_before=a, whitespace_after=b), r),
                  expr, st.sampled_from(_BINOPS), expr, _ws, _ws),
        _b(lambda op, e: cst.UnaryOperation(op(), e), st.sampled_from([cst.Minus, cst.Not, cst.BitInvert]), expr),
        _b(lambda l, op, r: cst.Comparison(l, [cst.ComparisonTarget(op(), r)]), expr, st.sampled_from(_CMPOPS), expr),
        st.builds(cst.Tuple, _elements(expr)),
        st.builds(cst.List, _elements(expr) | st.just([])),
        _b(lambda v, s: cst.Subscript(v, s), expr, subscript_elements),
    ))


_exprs = st.recursive(_maybe_parens(_leaves), _compound, max_leaves=6)
_comments = st.lists(_b(lambda c: cst.EmptyLine(comment=cst.Comment(f"# {c}")) if c else cst.EmptyLine(),
                               st.sampled_from(["", "line 3: x = 1", "why"])), max_size=2)
_targets = _names.map(cst.Name) | _b(lambda a, b: cst.Tuple([cst.Element(cst.Name(a)), cst.Element(cst.Name(b))], lpar=[], rpar=[]), _names, _names)
_AUG = [cst.AddAssign, cst.MultiplyAssign, cst.SubtractAssign, cst.DivideAssign]

_small = st.one_of(
    _b(lambda ts, v, a: cst.Assign([cst.AssignTarget(t, whitespace_before_equal=a) for t in ts], v),
              st.lists(_targets, min_size=1, max_size=2), _exprs, _ws),
    _b(lambda t, op, v: cst.AugAssign(cst.Name(t), op(), v), _names, st.sampled_from(_AUG), _exprs),
    st.builds(cst.Expr, _exprs),
    st.builds(cst.Return, st.none() | _exprs),
    st.just(cst.Pass()),
)
_lines = _b(lambda body, lead, semi: cst.SimpleStatementLine(
    body=[s.with_changes(semicolon=cst.Semicolon()) if semi and i == 0 and len(body) > 1 else s
          for i, s in enumerate(body)], leading_lines=lead),
    st.lists(_small, max_size=3), _comments, st.booleans())


def _compound_statements(body):
    block = _b(lambda b: cst.IndentedBlock(b), st.lists(body, min_size=1, max_size=3)) | st.just(cst.IndentedBlock([]))
    orelse = st.none() | st.builds(cst.Else, block)
    return st.one_of(
        _b(lambda t, b, e, lead: cst.If(t, b, orelse=e, leading_lines=lead), _exprs, block, orelse, _comments),
        _b(lambda t, b, e: cst.If(t, b, orelse=cst.If(t, b, orelse=e)), _exprs, block, orelse),
        _b(lambda t, i, b, lead: cst.For(cst.Name(t), i, b, leading_lines=lead), _names, _exprs, block, _comments),
        _b(lambda t, b: cst.While(t, b), _exprs, block),
        _b(lambda n, ps, b: cst.FunctionDef(cst.Name(n), cst.Parameters([cst.Param(cst.Name(p)) for p in ps]), b,
                                                    leading_lines=[cst.EmptyLine(), cst.EmptyLine()]),
                  _names, st.lists(_names, max_size=3, unique=True), block),
    )


_statements = st.recursive(_lines, _compound_statements, max_leaves=5)


@settings(max_examples=fuzz_examples(24, long=60), deadline=None)
@given(st.lists(_statements, max_size=4), _comments, st.booleans())
def test_render_is_libcst_code(body, header, trailing_newline):
    module = cst.Module(body=body, header=header, has_trailing_newline=trailing_newline)
    assert render(module) == module.code


def test_generated_modules_print_as_libcst(monkeypatch):
    """The modules astad generates (loops, branches, in-place updates, tuples, slices)."""
    seen = []

    def checked(module):
        seen.append(module)
        return render(module)

    monkeypatch.setattr(codegen_module, "render", checked)

    def f(x, W, k):
        s = 0.0
        for i in range(x.shape[0]):
            if x[i] > 0.1:
                s = s + np.sin(x[i]) * k
            else:
                s = s - x[i] ** 2
        y = np.tanh(W @ x)[1:3] * -2.0
        return s + np.sum(y * y) / (1.0 + k)

    args = (np.linspace(-0.5, 0.9, 4), np.ones((4, 4)) * 0.3, 1.5)
    astad.grad(f, (0, 1, 2))(*args)
    astad.jvp(f, args, tuple(np.ones_like(a) for a in args))
    assert seen
    for module in seen:
        assert render(module) == _as_nodes(module).code


def _as_nodes(module):
    """``module`` with the plain lines of its functions' own bodies that codegen keeps as their texts (str)
    made :class:`astad.codegen.render.Line`s, which libcst's printing prints (as the str is printed)."""
    def lines(fd):
        body = [Line((), s) if type(s) is str else s for s in fd.body.body]
        return fd.with_changes(body=fd.body.with_changes(body=body))

    return module.with_changes(body=[lines(s) if type(s) is cst.FunctionDef else s for s in module.body])


# --------------------------------------------------------------------------- codegen's faster libcst helpers


class _LibcstNames(cst.CSTVisitor):
    """The variables a statement mentions, found by libcst's own visitor (what carried.names_in reads)."""

    def __init__(self):
        self.found = set()

    def visit_Name(self, node):
        self.found.add(node.value)

    def visit_Attribute(self, node):
        node.value.visit(self)
        return False

    def visit_Arg(self, node):
        node.value.visit(self)
        return False


class _LibcstRename(cst.CSTTransformer):
    """Variables renamed by libcst's own transformer (what carried.renaming does)."""

    def __init__(self, renames):
        self.renames = renames

    def leave_Name(self, original, updated):
        new = self.renames.get(updated.value)
        return updated if new is None else updated.with_changes(value=new)

    def leave_Attribute(self, original, updated):
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original, updated):
        return updated.with_changes(keyword=original.keyword)


@settings(max_examples=fuzz_examples(32, long=80), deadline=None)
@given(_statements, st.sets(_names))
def test_names_and_renaming_are_libcsts(statement, renamed):
    """codegen.carried's walks over a statement's fields find the names libcst's visitor finds and
    rename them as libcst's transformer does (an attribute's and a keyword's name kept)."""
    from astad.codegen import carried

    visitor = _LibcstNames()
    statement.visit(visitor)
    assert carried.names_in(statement) == visitor.found
    renames = {n: n + "_r" for n in renamed}
    module = cst.Module([])
    ours = carried.renaming(statement, renames)
    assert module.code_for_node(ours) == module.code_for_node(statement.visit(_LibcstRename(renames)))
    if not renames.keys() & visitor.found:
        assert ours is statement  # (nothing rebuilt)


@settings(max_examples=40, deadline=None)
@given(_exprs, _exprs, _exprs)
def test_makers_make_libcsts_nodes(a, b, c):
    """pyexpr.maker's nodes are libcst's (every field, the defaults libcst fills in)."""
    from astad import pyexpr as px

    space = cst.SimpleWhitespace("")
    pairs = [
        (px.maker(cst.BinaryOperation, "left", "operator", "right")(a, cst.Add(), b), cst.BinaryOperation(a, cst.Add(), b)),
        (px.maker(cst.Call, "func", "args")(a, [cst.Arg(b)]), cst.Call(a, [cst.Arg(b)])),
        (px.maker(cst.Arg, "value", whitespace_after_star=space, whitespace_after_arg=space)(c),
         cst.Arg(c, whitespace_after_star=space, whitespace_after_arg=space)),
        (px.maker(cst.Tuple, "elements", lpar=(), rpar=())([cst.Element(a), cst.Element(b)]),
         cst.Tuple([cst.Element(a), cst.Element(b)], lpar=[], rpar=[])),
        (px.maker(cst.Slice, "lower", "upper", "step")(a, None, c), cst.Slice(a, None, c)),
        (px.maker(cst.SimpleStatementLine, "body", "leading_lines")([cst.Expr(a)], ()),
         cst.SimpleStatementLine([cst.Expr(a)])),
        (px.maker(cst.EmptyLine, "comment")(cst.Comment("# x")), cst.EmptyLine(comment=cst.Comment("# x"))),
        # called as the class is (frontend.from_ast_expr's ``new``): positional in the class's order, keywords
        (px.maker(cst.Subscript)(a, [cst.SubscriptElement(cst.Index(b))], lpar=px._PARENS[0], rpar=px._PARENS[1]),
         cst.Subscript(a, [cst.SubscriptElement(cst.Index(b))], lpar=px._PARENS[0], rpar=px._PARENS[1])),
        (px.maker(cst.Comparison)(a, [cst.ComparisonTarget(cst.LessThan(), c)]),
         cst.Comparison(a, [cst.ComparisonTarget(cst.LessThan(), c)])),
        (px.maker(cst.Arg, "value", keyword=cst.Name("k"))(b, star=""), cst.Arg(b, keyword=cst.Name("k"))),
        (px.paren(a), a.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])),
        (px.list_([a, b]), cst.List([cst.Element(a), cst.Element(b)])),
        (px.list_([]), cst.List([])),
        (cst.Parameters([codegen_module._param(px.identifier("x"))]), cst.Parameters([cst.Param(cst.Name("x"))])),
        (px.subscript(a, [b, px.slice_(None, c, None)]),
         cst.Subscript(px._at_least(a, px._ATOM), [cst.SubscriptElement(cst.Index(b)),
                                                    cst.SubscriptElement(cst.Slice(None, c, None))])),
    ]
    for ours, theirs in pairs:
        assert ours.deep_equals(theirs)
        assert cst.Module([]).code_for_node(ours) == cst.Module([]).code_for_node(theirs)


# --------------------------------------------------------------------------- lines printed as they are made


def _printed_both_ways(monkeypatch):
    """Every reverse-mode module generated, and the same module made of libcst's nodes
    (``codegen.python.TEXT_LINES`` off: no line printed when made) printed by libcst itself
    (``Module.code``): a list of the pairs, filled as the modules are generated."""
    generate, checked = codegen.generate, []

    def both(*args, **kwargs):
        made = generate(*args, **kwargs)
        with monkeypatch.context() as m:
            m.setattr(codegen_python, "TEXT_LINES", False)
            m.setattr(codegen_module, "render", lambda module: module.code)
            checked.append((made, generate(*args, **kwargs)))
        return made

    monkeypatch.setattr(codegen, "generate", both)
    return checked


def test_text_lines_print_as_libcsts_nodes(monkeypatch):
    """Reverse mode's lines printed as they are made (:class:`astad.codegen.render.Line`) read as the
    libcst nodes they stand for, printed by libcst: every benchmark program, and loops, branches and
    in-place updates (a line in a `try` printed by libcst's own printing of the `try`)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bench import programs

    checked = _printed_both_ways(monkeypatch)
    astad.clear_caches()
    for name, (fn, make, argnums) in programs.PROGRAMS.items():
        args = make(np.random.default_rng(0))
        astad.api.Reverse(fn).derivative(args, frozenset((argnums,) if isinstance(argnums, int) else argnums))
    assert len(checked) >= len(programs.PROGRAMS)
    for text, libcsts in checked:
        assert text == libcsts
    assert any("del " in text for text, _ in checked) and any("    try:" in text for text, _ in checked)


@settings(max_examples=fuzz_examples(6, long=15), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_control_flow.programs())
def test_random_programs_text_lines_print_as_libcsts_nodes(tmp_path_factory, program):
    """As above, for random programs with loops and branches (tests/test_random_control_flow.py's)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        checked = _printed_both_ways(monkeypatch)
        if not random_control_flow.transformed_or_refused(program, tmp_path_factory.getbasetemp(), "text_lines"):
            return  # (refused)
    assert checked
    for text, libcsts in checked:
        assert text == libcsts


def _pyexpr_compound(expr):
    """Expressions as codegen builds them (pyexpr's helpers: its shared operators, whitespace, parentheses)."""
    from astad import pyexpr as px

    ops = st.sampled_from(["+", "-", "*", "/", "**", "@", "//", "%"])
    dotted = st.sampled_from(["np.exp", "np.sum", "f", "math.sin", "list_add"])
    return st.one_of(
        st.builds(px.binop, ops, expr, expr),
        st.builds(px.neg, expr),
        st.builds(lambda f, args, kw: px.call(f, args, **kw), dotted, st.lists(expr, max_size=3),
                  st.dictionaries(st.sampled_from(["axis", "out", "dtype"]), expr, max_size=2)),
        st.builds(px.method, expr, st.sampled_from(["sum", "tolist", "append"]), st.lists(expr, max_size=2)),
        st.builds(px.attr, expr, st.sampled_from(["T", "shape"])),
        st.builds(px.paren, expr),
        st.builds(px.tuple_, st.lists(expr, max_size=3)),
        st.builds(px.subscript, expr, st.lists(expr, min_size=1, max_size=2)),
    )


def _pyexpr_leaves():
    from astad import pyexpr as px

    return st.one_of(
        st.sampled_from(["x", "v1_ct", "np.pi", "residuals"]).map(px.name),
        st.one_of(st.integers(-3, 40), st.floats(-1e3, 1e3, allow_nan=False), st.just(-0.0)).map(px.literal),
    )


_built_exprs = st.recursive(_pyexpr_leaves() | _exprs, _pyexpr_compound, max_leaves=8)


@settings(max_examples=fuzz_examples(80, long=200), deadline=None)
@given(_built_exprs)
def test_expression_text_is_libcsts(expr):
    """render_expr.text (joined strings for the nodes pyexpr makes, the token printers for any other)
    prints an expression as libcst does, for expressions built by pyexpr around any libcst nodes."""
    from astad.codegen.render import text_state
    from astad.codegen.render_expr import text

    assert text(expr, text_state()) == cst.Module([]).code_for_node(expr)


def _texts_and_nodes():
    """(codegen.text_expr's expression, the same made of pyexpr's nodes), drawn alike."""
    from astad import pyexpr as px
    from astad.codegen import text_expr as tx
    from astad.codegen.render import text_state

    state = text_state()
    names = st.sampled_from(["x", "v1_ct", "t12"]).map(lambda n: (tx.name(n), px.name(n)))
    numbers = st.one_of(st.integers(-3, 40), st.floats(-1e3, 1e3, allow_nan=False), st.just(-0.0), st.tuples(
        st.integers(0, 3), st.integers(-1, 2))).map(px.literal).map(lambda node: (tx.of(node, state), node))
    others = _exprs.map(lambda node: (tx.of(node, state), node))  # (another rule's expression: any node)

    def compound(pair):
        ops = st.sampled_from(["+", "-", "*", "/", "**", "@", "//", "%"])
        return st.one_of(
            st.builds(lambda op, a, b: (tx.binop(op, a[0], b[0]), px.binop(op, a[1], b[1])), ops, pair, pair),
            st.builds(lambda a: (tx.neg(a[0]), px.neg(a[1])), pair),
            st.builds(lambda f, args: (tx.call(f, [a[0] for a in args]), px.call(f, [a[1] for a in args])),
                      st.sampled_from(["np.sin", "f"]), st.lists(pair, max_size=3)),
        )
    return st.recursive(names | numbers | others, compound, max_leaves=8)


@settings(max_examples=fuzz_examples(80, long=200), deadline=None)
@given(_texts_and_nodes())
def test_text_expressions_are_pyexprs_nodes(pair):
    """An expression printed as it is made (codegen.text_expr) is the text libcst prints for the node
    pyexpr makes of the same operations, at that node's precedence; the node it makes is that node."""
    from astad import pyexpr as px

    text, node = pair
    assert text.text == cst.Module([]).code_for_node(node)
    assert text.prec == px.precedence(node)
    assert text.node().deep_equals(node)
