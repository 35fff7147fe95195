"""The printing of plain lines: the operations a long function is mostly made of (``t3 = a * b``,
``v1 = np.sin(v)``), printed as text by one loop over the bindings.

An operation of :data:`astad.codegen.python._PLAIN` (printed as text by :mod:`.text_expr`, with no
form of its own) is printed by :meth:`PlainPrinting.bind_plain` without a call per step: its
operands' texts, its text (a binary operator's or a call's, by its :func:`form`), then either a
line ``name = text`` or the text kept to be inlined into the expression reading it (then made a
:class:`.text_expr.Text`; a value assigned needs none).  What it prints is what
:meth:`astad.codegen.python.Printer.bind` prints (tests/test_codegen_plain.py); an operation it does not
apply to (one that may be written in place, a view pending) goes to :meth:`PlainPrinting.plain`, the
same steps one at a time, or to ``bind``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable, NamedTuple, Sequence

from .. import pyexpr as px
from .. import rules
from ..ir import Bind, ListT, Num, Plus, Prim, Var
from ..names import Namer
from . import inplace, order
from . import text_expr as tx
from .memory import FRESH
from .render import Line, comment_lines
from .text_expr import Text

#: generated expressions nest at most this many inlined temporaries (a deeper
#: one is named by a statement of its own), so the text stays readable and
#: libcst and Python's compiler never recurse deeply on it
MAX_INLINED = 6

#: terms of a sum of cotangents in one statement (more go on in the next)
MAX_TERMS = 8

_BINOP, _CALL, _SUMS, _OTHER = "binop", "call", "sum", "other"
_BIG, _ARRAY, _LIST, _SCALAR = "big", "array", "list", "scalar"  # (and _OTHER: the kinds of a result's type
# for bind_plain; _OTHER: a Python number, _SCALAR: a numpy scalar or another value)


class Form(NamedTuple):
    """How :meth:`PlainPrinting.bind_plain` prints one operation: ``kind`` ``binop`` (``left token
    right`` at precedence ``prec``), ``call`` (``token(args)``) or ``other`` (``printer``'s text);
    its Text's node is ``make(head, *operands)``; ``fresh``: its result is new memory (:data:`.memory.FRESH`);
    ``raises_np`` (``raises_py``): it may raise where its result is a numpy value (a Python number, :mod:`.order`)."""

    printer: Callable[[list[Text]], Text]
    kind: str
    prec: int
    token: str
    make: Callable[..., Any]
    head: str
    fresh: bool
    raises_np: str | None = order.ANY
    raises_py: str | None = order.ANY


#: what bind_plain's read of ``forms`` gives for an operation it does not hold yet
_UNSEEN = object()
#: a sum (``Plus``) of at most MAX_TERMS terms, as bind_plain prints it (``forms[Plus]``)
SUM = Form(lambda texts: texts[0], _SUMS, tx.BINOPS["+"][0], tx.BINOPS["+"][1], px.binop, "+", True, None, None)


def form(op: str, emit: Callable, printer: Callable[[list[Text]], Text]) -> Form:
    """The form of operation ``op``, printed by the table's ``emit`` as ``printer`` prints it."""
    kind, what = rules.emit.TEXT_FORMS[emit]
    fresh = op in FRESH
    raises = order.raises(op, False), order.raises(op, True)
    if kind == "binop" and what != "**":  # (`**`: right-associative, printed by its printer)
        p, token = tx.BINOPS[what]
        return Form(printer, _BINOP, p, token, px.binop, what, fresh, *raises)
    if kind == "call":
        return Form(printer, _CALL, px._ATOM, what, tx.call_node, what, fresh, *raises)
    return Form(printer, _OTHER, 0, "", px.binop, "", fresh, *raises)


class PlainPrinting:
    """The printing of plain lines, a part of :class:`astad.codegen.python.Printer`."""

    state: Any
    uses: Counter
    inlined: dict
    depth: dict
    reach: int
    copied: Counter
    pending_reads: list
    views: dict
    fresh: set
    lines: list
    residuals: set
    in_if: int
    in_place: bool
    big_types: dict
    type_kinds: dict
    typed: list
    deferred: dict
    constant_atoms: dict
    fast: Any
    text_plain: bool
    zipped: Any
    last_loc: Any
    raising: dict
    top: bool

    def bind_plain(self, binds: Sequence[Bind], forms: dict[str, Form | None]) -> None:
        """``bind`` each of ``binds``; an operation of ``forms`` and a short sum (most bindings) printed here,
        in one step each (``bind``'s steps for them, where they apply, in its order)."""
        bind, plain, st, residuals = self.bind, self.plain, self.state, self.residuals  # type: ignore[attr-defined]
        text_atom, comment, names = self.text_atom, self.comment, tx.NAMES  # type: ignore[attr-defined]
        direct = self.fast is None and self.text_plain and not self.zipped  # (what only a loop's bind changes)
        stale = True  # the printer's containers are to be read again (another method may have replaced them)
        uses, views, constants, deferred = self.uses, self.views, self.constant_atoms, self.deferred  # (never replaced)
        kinds, held, raising = self.type_kinds, self.typed, self.raising  # (raising: changed in place, never replaced)
        read = self.pending_reads.append  # the variables read into new memory: counted in `copied` when asked for
        new_text = Text.__new__
        form_of = forms.get  # (dict's own get: a read of a dict subclass's item is not specialised by the interpreter)
        for b in binds:
            rhs = b.rhs
            cls = type(rhs)
            if cls is Prim and direct:
                f = form_of(rhs.op, _UNSEEN)
                if f is _UNSEEN:  # (an operation not met before: ``forms`` finds its form)
                    f = forms[rhs.op]
                if f is None:
                    bind(b)
                    stale = True
                    direct = self.fast is None and self.text_plain and not self.zipped
                    continue
                operands = rhs.args
                printer, kind, prec, token, make, head, counted, raises_np, raises_py = f  # (a tuple's items
                # read at once: a NamedTuple's fields are descriptors, a read of each not specialised by the interpreter)
            elif cls is Plus and direct:
                f = forms[Plus]
                if f is None:
                    bind(b)
                    stale = True
                    continue
                operands = rhs.items
                printer, kind, prec, token, make, head, _, raises_np, raises_py = f
                counted = len(operands) > 1
            else:  # (what bind_plain does not print: bind's)
                bind(b)
                stale = True
                direct = self.fast is None and self.text_plain and not self.zipped
                continue
            if stale:  # (what printing a loop or a branch, or flushing, replaces)
                inlined, depth, fresh_set, lines = self.inlined, self.depth, self.fresh, self.lines
                top = self.top
                last_loc, seen = self.last_loc, None  # (seen: a Loc at last_loc, most lines of a group share it)
                in_if = self.in_if
                stale = False
            (target,) = b.targets
            t = target.type
            of_type = kinds.get(id(t))
            if of_type is None:
                held.append(t)
                of_type = kinds[id(t)] = _BIG if self.in_place and inplace.big(t) else \
                    _ARRAY if type(t) is Num and t.shape else _LIST if type(t) is ListT else \
                    _OTHER if order.python_number(t) else _SCALAR
            if of_type is _BIG or views or not counted or raising:  # (may be written in place; a view pending; a
                # copy; an expression pending may raise: Python's order kept, .order)
                if cls is Prim:
                    self.reach = 0
                    plain(b, rhs, f)
                else:
                    bind(b)
                stale = True
                continue
            if cls is Plus and (deferred or of_type is _LIST or len(operands) > MAX_TERMS
                                or not target.name.isidentifier()):
                bind(b)  # (a scatter waiting, a sum of lists, a long sum: bind's)
                stale = True
                continue
            # the operands (count_copies' and text_atoms', at once)
            reach, texts = 0, []
            for a in operands:
                if type(a) is Var:
                    n = a.name
                    read(n)
                    if n in inlined:  # (pending's)
                        d = depth.pop(n)
                        if d > reach:
                            reach = d
                        v = inlined.pop(n)
                        texts.append(v if type(v) is Text else tx.of(v, st))
                    else:
                        texts.append(names[n])
                else:  # (text_atom's, for a constant read before)
                    known = constants.get(id(a))
                    texts.append(known[1] if known is not None and known[0] is a else text_atom(a))
            value = None
            if kind is _BINOP:  # (text_expr.binop_of's)
                left, right = texts
                text = f"{left.text if left.prec >= prec else f'({left.text})'}{token}" \
                    f"{right.text if right.prec > prec else f'({right.text})'}"  # (one string made, not two)
            elif kind is _CALL:  # (text_expr.call's)
                text = f"{token}({', '.join([a.text for a in texts])})"
            elif kind is _SUMS:  # (Printer.sum's: binop_of's, the sum so far on the left)
                first = texts[0]
                text = first.text if first.prec >= prec else "(" + first.text + ")"
                for a in texts[1:]:
                    text += token + a.text if a.prec > prec else token + "(" + a.text + ")"
            else:
                value = printer(texts)
                text, prec = value.text, value.prec
            name = target.name
            if of_type is _ARRAY or kind is _SUMS:  # (a sum's result is new memory whatever its type)
                fresh_set.add(name)
            # (put's; Namer.is_temp's; a sum is assigned)
            if kind is not _SUMS and uses[name] == 1 and name[:1] == "t" and name[1:].isdigit() \
                    and reach < MAX_INLINED and not (in_if and name in residuals):
                if value is None:  # (Text's own __init__, inlined: no frame of its own)
                    value = new_text(Text)
                    value.text, value.prec, value._node, value._make, value._parts = \
                        text, prec, None, make, (head, *texts)
                inlined[name] = value
                depth[name] = reach + 1
                if raises_py if of_type is _OTHER else raises_np:  # (it may raise: .order; none pending that may)
                    what = order.may_raise(rhs, t) if of_type is _OTHER else raises_np  # (an int's division: .order)
                    if what:
                        raising[name] = what
            elif name.isidentifier():  # (assign_line's)
                loc, lead = b.loc, ()  # (comment's, inlined)
                if loc is not None and loc is not seen:
                    seen = loc
                    if last_loc is None or loc.line != last_loc[1] or loc.file != last_loc[0]:
                        self.last_loc = last_loc = (loc.file, loc.line)  # type: ignore[attr-defined]
                        lead = comment_lines(loc.line, loc.text)
                if not top:
                    lines.append(Line(lead, f"{name} = {text}"))
                elif lead:  # (the comment's line, then the line: each printed by render's _block as a str)
                    lines += (lead.comment, f"{name} = {text}")
                else:
                    lines.append(f"{name} = {text}")
            else:
                self.assign_line((name,), value or Text(text, prec, None, make, (head, *texts)),  # type: ignore[attr-defined]
                                 comment(b.loc))
                last_loc, seen = self.last_loc, None

    def plain(self, b: Bind, rhs: Prim, f: Form) -> None:
        """``bind`` of an operation of :data:`astad.codegen.python._PLAIN` where ``bind_plain`` does not
        print it (it may be written in place, a view is pending, it is not a computation of its operands):
        ``bind``'s steps for it alone, in its order, without the tests that cannot apply to it."""
        fresh = f.fresh
        if self.views or not fresh:
            self.count_copies(rhs)  # type: ignore[attr-defined]
        else:  # (count_copies', inlined)
            copied = self.copied
            for a in rhs.args:
                if type(a) is Var:
                    name = a.name
                    copied[name] = copied.get(name, 0) + 1
        (target,) = b.targets
        t = target.type
        if self.in_place:
            big = self.big_types.get(id(t))
            if big is None or big[0] is not t:
                big = self.big_types[id(t)] = (t, inplace.big(t))
            if big[1] and self.in_place_form(b, rhs):  # type: ignore[attr-defined]
                return
        if self.raising:
            order.keep_order(self, [a.name for a in rhs.args if type(a) is Var], order.may_raise(rhs, t), b.loc)
        value, name = f.printer(self.text_atoms(rhs.args)), target.name  # type: ignore[attr-defined]
        if fresh and type(t) is Num and t.shape:
            self.fresh.add(name)
        # (put's, inlined)
        if self.uses[name] == 1 and Namer.is_temp(name) and self.reach < MAX_INLINED \
                and not (self.in_if and name in self.residuals):
            self.inlined[name], self.depth[name] = value, self.reach + 1
            raises = self.raised(rhs, t)  # type: ignore[attr-defined]  (assigned, it raises where it is)
            if raises:
                self.raising[name] = raises
        elif name.isidentifier():  # (assign_line's)
            self.lines.append(Line(self.comment(b.loc), name + " = " + value.text))  # type: ignore[attr-defined]
        else:
            self.assign_line((name,), value, self.comment(b.loc))  # type: ignore[attr-defined]
