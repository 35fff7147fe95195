"""Negations in the backward pass taken by what reads them (``absorb_negations``).

The transposes of ``-x``, ``a - b`` and ``cos`` negate a cotangent, and the
next cotangent sum reads the negation: ``t = -(ct / d)`` then
``u = -(t * y)``, ``ct2 = -t1`` then ``a_ct = b_ct + ct2``.  On small arrays
each negation is a numpy call of its own (about as dear as a product), so a
negation whose every reader can take it is not computed: a sum takes it
(``a + -x`` -> ``a - x``, ``-x + b`` -> ``b - x``, ``a - -x`` -> ``a + x``, a
cotangent sum of many terms likewise, term by term in its order), a negation
cancels it, a product by a literal takes it into the literal
(``-x * 0.2`` -> ``x * -0.2``), a negation of a negation that is computed
(some other reader cannot take it) reads as what it negates, and an operation linear in the argument
(products, quotients, matrix products, sums, views: ``signs._EACH`` and
``signs._FIRST``) negates its result instead, when that result is in turn
taken by all its readers.  A negation some reader cannot take (a tuple, a
loop, a nested block, a return) is left as it is.

Every rewrite is exact in floating point: negation is, rounding is symmetric,
``a + -b`` is ``a - b`` by definition, and the terms of a sum are added in
their order.  It runs on each block of the backward pass (every binding there
is derivative code), after the passes that look for sums of a given shape
(``accumulate``, ``arrays.outer_sums``), and never makes a program longer:
a negation of a result appears only where two negations it replaces meet.
"""

from __future__ import annotations

from collections import Counter

from ..blocks import NESTING, same_or_new, with_branches
from ..ir import Atom, Bind, Block, Const, Plus, Prim, Var, atoms_of, kinds, substitute, use_counts, vars_of
from ..ir.walk import NESTING_KINDS
from ..names import Namer
from .signs import _EACH, _FIRST

Signed = tuple[bool, Atom]  # (negated, atom): the value is -atom when negated


def absorb_negations(block: Block, namer: Namer) -> Block:
    """``block`` (a backward block) with the negations its readers take removed."""
    return absorbed(block, namer)[0]


def absorbed(block: Block, namer: Namer) -> tuple[Block, bool]:
    """``absorb_negations``, and whether a binding may be left unread that was read before
    (False only where the block has no nested blocks and no computed negation lost its
    last reader to a negation of it read as what it negates: a negation not computed
    leaves what it negated read by the negation's readers, a negation of a negation
    not computed leaves it read by its own readers, and nothing else is read less;
    then of ``dce``'s output, the output is ``dce``'s output too)."""
    found = kinds(block)  # (remembered on the block: ``tiles`` and ``unit_axes`` asked)
    if found.isdisjoint(NESTING_KINDS):  # (no walk: ``found`` has the ops of the block's own primitives)
        if "neg" not in found:
            return block, False
        absorb = _Absorb(block, namer)
        out = absorb.run()
        known = block.__dict__.get("_outside_reads")
        if REMEMBER_READS and known is not None and not absorb.unread and out is not block:
            # (each atom the new block reads from outside is one the old block read, and each read of an
            # outside name stays a read of it: by the negation's readers where a negation is not computed, by
            # the readers of a negation of a negation read as what it negates, or by the binding as rewritten.
            # Remembered as ``outside_reads`` would find it, without a walk: ``optimise.residuals`` asks)
            out.__dict__.setdefault("_outside_reads", known)
        return out, absorb.unread
    # (a block nested at some depth is nested in a binding of this one)
    block = same_or_new(block, [with_branches(b, b.rhs, lambda blk: absorb_negations(blk, namer))
                                if type(b.rhs) in NESTING else b for b in block.binds])
    if "neg" not in {b.rhs.op for b in block.binds if type(b.rhs) is Prim}:
        return block, True
    return _Absorb(block, namer).run(), True


#: whether ``absorbed`` remembers the outside reads of a block it rewrote, without nested blocks, as its
#: input's (tests turn it off)
REMEMBER_READS = True


def _reads_any(args: tuple[Atom, ...], names: dict[str, Atom]) -> bool:
    for a in args:
        if type(a) is Var and a.name in names:
            return True
    return False


def _literal(a: Atom) -> bool:
    """A float literal (its negation is another literal)."""
    return isinstance(a, Const) and a.name is None and type(a.value) is float


def _asked(rhs: Prim | Plus, read: int, readers: dict[str, list[Bind]]) -> bool:
    """Whether ``taken`` may ask about the target of a binding of ``rhs`` (``read``: how many of its reads are of
    names it may ask about, ``readers``' keys): of a negation (``negation``); of a primitive its ``_takes`` asks
    about (linear in an argument read, no literal factor); of one ``signed_prim`` or ``plus`` may find the negation
    of (``negative``: a sum all of whose terms, an addition both of whose arguments, a subtraction whose first
    argument, a primitive linear in an argument that may be negated, a name ``taken`` asked about)."""
    if type(rhs) is Plus:
        return read == len(rhs.items)  # (a read of those names is of a variable)
    op, args = rhs.op, rhs.args
    if op == "neg":
        return True
    if op == "add" or op == "sub":
        if len(args) != 2:
            return False
        if op == "add":
            return read == 2 and type(args[0]) is Var and type(args[1]) is Var
        return type(args[0]) is Var and args[0].name in readers
    if op in _EACH:
        return not (op in ("mul", "div") and len(args) == 2 and (_literal(args[0]) or _literal(args[1])))
    if op in _FIRST:
        return bool(args) and type(args[0]) is Var and args[0].name in readers
    return False


class _Absorb:
    def __init__(self, block: Block, namer: Namer) -> None:
        self.block, self.namer = block, namer
        # the primitives and sums of this block reading a name (a reader once per read of it), of the names
        # ``taken`` may ask about (``_asked``): a negation's target and, in turn, the target of a primitive or sum
        # reading such names that may be negated, or whose ``_takes`` asks about its target
        self.readers: dict[str, list[Bind]] = {}
        readers = self.readers
        others: list[str] = []  # the reads of those names by the rest (with the readers, their ``use_counts``
        # where no block is nested)
        # where ``run`` looks (where no block is nested): the negations, the primitives and sums reading those
        # names, and the bindings of anything else.  (Each other binding is kept as it is: it reads no name
        # negated or renamed, those being names of negations and of readers of them)
        visit: list[int] = []
        flat = True
        get = readers.get
        for at, b in enumerate(block.binds):
            rhs = b.rhs
            cls = type(rhs)
            if cls is Prim:
                read = 0  # (how many of its reads are of those names)
                for a in rhs.args:  # type: ignore[union-attr]
                    if type(a) is Var:
                        found = get(a.name)  # (one lookup)
                        if found is not None:
                            found.append(b)
                            read += 1
                if read:
                    visit.append(at)
                    op = rhs.op  # type: ignore[union-attr]
                    if op == "mul" or op == "div":  # (the most common: ``_asked``, and ``_literal``, written out)
                        args = rhs.args  # type: ignore[union-attr]
                        if len(args) != 2:
                            asked = True
                        else:
                            a, c = args
                            asked = not ((type(a) is Const and a.name is None and type(a.value) is float)
                                         or (type(c) is Const and c.name is None and type(c.value) is float))
                    else:
                        asked = _asked(rhs, read, readers)  # type: ignore[arg-type]
                    if asked:
                        for t in b.targets:  # (a name is read only after its binding: its reads are all seen)
                            readers[t.name] = []
                elif rhs.op == "neg":  # type: ignore[union-attr]
                    visit.append(at)
                    for t in b.targets:
                        readers[t.name] = []
            elif cls is Plus:
                read = 0
                for a in rhs.items:  # type: ignore[union-attr]
                    if type(a) is Var:
                        found = get(a.name)
                        if found is not None:
                            found.append(b)
                            read += 1
                if read:
                    visit.append(at)
                    # (``_asked``: each of its reads is of those names)
                    if read == len(rhs.items):  # type: ignore[union-attr]
                        for t in b.targets:
                            readers[t.name] = []
            elif cls in NESTING:
                flat = False
            else:
                visit.append(at)
                if readers:
                    others.extend([v.name for v in vars_of(rhs) if v.name in readers])
        self.visit: list[int] | None = visit if flat else None
        if flat:  # (the reads of those names by the rest and the result: with their readers, their use counts)
            self.elsewhere: Counter | None = Counter(others)
            if isinstance(block.result, Var) and block.result.name in readers:
                self.elsewhere[block.result.name] += 1
            self.counts: Counter | None = None
        else:
            self.elsewhere, self.counts = None, use_counts(block)
        self.memo: dict[str, bool] = {}
        self.negated: dict[str, Atom] = {}  # a name whose negation was not computed -> what it is the negation of
        self.env: dict[str, Atom] = {}  # a negation of a negation -> what it negates
        self.computed: dict[str, Atom] = {}  # a negation computed as it was (some reader cannot take it) -> its operand
        self.out: list[Bind] = []
        self.flipped: dict[object, Const] = {}  # a literal's key -> its negation
        self.unread = False  # whether a binding kept may be read no more (see ``absorbed``)

    def read_elsewhere(self, name: str) -> bool:
        """Whether ``name`` is read by something of this block other than a primitive or a sum (or not at all)."""
        if self.elsewhere is not None:
            return name in self.elsewhere or name not in self.readers
        return len(self.readers.get(name, ())) != self.counts[name]  # type: ignore[index]

    def uses(self, name: str) -> int:
        """``use_counts`` of ``name``, of the names the readers are known of."""
        if self.elsewhere is not None:
            return len(self.readers.get(name, ())) + self.elsewhere[name]
        return self.counts[name]  # type: ignore[index]

    def taken(self, name: str) -> bool:
        """Whether every read of ``name`` is by a binding of this block that takes its negation."""
        memo = self.memo
        known = memo.get(name)
        if known is not None:
            return known
        memo[name] = False  # (a block binds each name once: no cycle; the guard costs nothing)
        readers = self.readers.get(name)
        if not readers or self.read_elsewhere(name):
            return False
        takes = self._takes
        for b in readers:
            if not takes(b, name):
                return False
        memo[name] = True
        return True

    def _takes(self, b: Bind, name: str) -> bool:
        rhs = b.rhs
        if len(b.targets) != 1:
            return False
        if type(rhs) is Plus:
            return True
        assert isinstance(rhs, Prim)
        op, args = rhs.op, rhs.args
        if op == "mul" or op == "div":  # (the most common; linear in each argument: ``_EACH``)
            if len(args) == 2:
                a, c = args  # (``_literal``, written out)
                if (type(a) is Const and a.name is None and type(a.value) is float) or \
                        (type(c) is Const and c.name is None and type(c.value) is float):
                    return True
            return self.taken(b.targets[0].name)
        if op == "neg" or (op in ("add", "sub") and len(args) == 2):
            return True
        if op not in _EACH:  # (linear in each argument: no argument to look at)
            linear = (0,) if op in _FIRST else ()
            for i, a in enumerate(args):
                if type(a) is Var and a.name == name and i not in linear:
                    return False
        return self.taken(b.targets[0].name)

    def run(self) -> Block:
        negated, out = self.negated, self.out
        env = self.env
        binds = self.block.binds
        visit = self.visit
        done = 0  # (the bindings before it are in ``out``, or looked at)
        for at in range(len(binds)) if visit is None else visit:
            if at != done:  # (those not looked at, kept as they are: copied at once)
                out += binds[done:at]
            done = at + 1
            b = binds[at]
            rhs = b.rhs
            if type(rhs) is Prim and len(b.targets) == 1:
                renamed = read = False  # (whether it reads a name of ``env``, of ``negated``)
                for a in rhs.args:
                    if type(a) is Var:
                        if a.name in env:
                            renamed = True
                        elif a.name in negated:
                            read = True
                if not (renamed or read) and rhs.op != "neg":
                    out.append(b)  # (the most common: no argument renamed or negated, kept as it is)
                    continue
                if renamed:  # (what it reads then, read again)
                    rhs = substitute(rhs, env)
                    read = _reads_any(rhs.args, negated)
                if read:
                    self.signed_prim(b, rhs, b.targets[0])  # (``prim``'s first rule, the test made once)
                elif rhs.op != "neg":
                    out.append(b if rhs is b.rhs else Bind(b.targets, rhs, b.loc))
                else:
                    self.negation(b, rhs)
                continue
            if env:
                rhs = substitute(rhs, env)
            if type(rhs) is Plus and len(b.targets) == 1:
                self.plus(b, rhs)
            else:
                self.materialise(rhs)
                self.out.append(b if rhs is b.rhs else Bind(b.targets, rhs, b.loc))
        out += binds[done:]
        result = self.env.get(self.block.result.name, self.block.result) if isinstance(self.block.result, Var) \
            else self.block.result
        self.materialise(Prim("result", (result,)))
        return same_or_new(self.block, self.out, result)

    def materialise(self, rhs: object) -> None:
        """A negation read where it cannot be taken (not expected: see ``taken``) is computed after all."""
        for a in atoms_of(rhs) if not isinstance(rhs, Prim) else rhs.args:  # type: ignore[arg-type]
            if isinstance(a, Var) and a.name in self.negated:
                self.out.append(Bind((a,), Prim("neg", (self.negated.pop(a.name),))))

    def emit(self, b: Bind, rhs: Prim | Plus) -> None:
        self.out.append(b if rhs is b.rhs else Bind(b.targets, rhs, b.loc))  # (a binding left as it was is kept)

    def negative(self, b: Bind, rhs: Prim | Plus) -> None:
        """``b``'s target is ``-rhs``: computed as that when its readers cannot take the negation."""
        target = b.targets[0]
        inner = Var(self.namer.temp(), target.type)
        self.out.append(Bind((inner,), rhs, b.loc))
        if self.taken(target.name):
            self.negated[target.name] = inner
        else:
            self.out.append(Bind((target,), Prim("neg", (inner,)), b.loc))

    def negation(self, b: Bind, rhs: Prim) -> None:
        """A negation of an argument not negated (``signed_prim`` takes the others)."""
        target = b.targets[0]
        inner = rhs.args[0]
        if isinstance(inner, Var) and inner.name in self.computed:  # -(-u), the inner one computed: u
            self.env[target.name] = self.computed[inner.name]
            self.unread |= self.uses(inner.name) < 2  # (the computed negation may be read no more)
        elif self.taken(target.name):
            self.negated[target.name] = inner
        else:
            self.computed[target.name] = inner
            self.emit(b, rhs)

    def signed_prim(self, b: Bind, rhs: Prim, target: Var) -> None:
        negated = self.negated
        args = rhs.args
        if len(args) == 2:  # (the most common: each argument's sign without a list made)
            a, c = args
            na = type(a) is Var and a.name in negated
            if na:
                a = negated[a.name]  # type: ignore[union-attr]
            nb = type(c) is Var and c.name in negated
            if nb:
                c = negated[c.name]  # type: ignore[union-attr]
            plain: tuple[Atom, ...] = (a, c)
            odd = na is not nb
        else:
            signs = [type(a) is Var and a.name in negated for a in args]
            plain = tuple([negated[a.name] if n else a for n, a in zip(signs, args)])  # type: ignore[union-attr]
            odd = signs.count(True) % 2 == 1
        if rhs.op == "neg":  # -(-u) is u
            self.env[target.name] = plain[0]
            return
        if rhs.op in ("add", "sub") and len(args) == 2:
            if rhs.op == "add":
                if na and nb:
                    return self.negative(b, Prim("add", (a, c), rhs.params))
                return self.emit(b, Prim("sub", (c, a) if na else (a, c), rhs.params))
            if na and nb:  # -a - -c = c - a
                return self.emit(b, Prim("sub", (c, a), rhs.params))
            if nb:
                return self.emit(b, Prim("add", (a, c), rhs.params))
            return self.negative(b, Prim("add", (a, c), rhs.params))  # -a - c = -(a + c)
        if not odd:
            return self.emit(b, Prim(rhs.op, plain, rhs.params))
        if rhs.op in ("mul", "div") and len(plain) == 2 and (_literal(a) or _literal(c)):
            lit = a if _literal(a) else c  # (the first literal)
            assert isinstance(lit, Const)
            flipped = self.flipped.get(lit.key)  # (each literal's negation made once)
            if flipped is None:
                flipped = self.flipped[lit.key] = Const.literal(-lit.value, lit.type)
            return self.emit(b, Prim(rhs.op, (flipped, c) if lit is a else (a, flipped), rhs.params))
        self.negative(b, Prim(rhs.op, plain, rhs.params))

    def plus(self, b: Bind, rhs: Plus) -> None:
        """A cotangent sum of signed terms, added in their order: runs of positive
        terms stay one sum; a negated term is subtracted."""
        negated = self.negated
        for a in rhs.items if negated else ():
            if type(a) is Var and a.name in negated:
                break
        else:
            return self.emit(b, rhs)
        terms: list[Signed] = [(True, negated[a.name]) if type(a) is Var and a.name in negated else (False, a)
                               for a in rhs.items]
        if all(n for n, _ in terms):
            return self.negative(b, Plus(tuple(a for _, a in terms)))
        target = b.targets[0]
        steps: list[tuple[str, Atom]] = []  # ("add" | "sub", term) after the first positive partial sum
        neg_acc, acc = terms[0]
        rest = terms[1:]
        if neg_acc:  # -u + (positive run) ...: start from the first positive term
            k = next(i for i, (n, _) in enumerate(rest) if not n)
            # -u0 - u1 ... + p: the negated terms before p are added into one negated partial sum
            negs = [acc] + [a for _, a in rest[:k]]
            acc_neg: Atom = negs[0]
            for a in negs[1:]:
                acc_neg = self.temp_bind(b, Prim("add", (acc_neg, a)), target)
            acc = self.temp_bind(b, Prim("sub", (rest[k][1], acc_neg)), target)
            rest = rest[k + 1:]
        run: list[Atom] = [acc]
        for n, a in rest:
            if n:
                steps.append(("sub", a))
            else:
                steps.append(("add", a))
        # fold: consecutive additions stay a Plus (its printing adds in place, splits long sums)
        cur: list[Atom] = run
        for i, (op, a) in enumerate(steps):
            if op == "add":
                cur.append(a)
                continue
            base = cur[0] if len(cur) == 1 else self.temp_bind(b, Plus(tuple(cur)), target)
            if i == len(steps) - 1:  # the last step, a subtraction: it binds the target itself (the name of the
                self.namer.temp()  # temporary it would have bound taken all the same: later names are as they were)
                self.out.append(Bind(b.targets, Prim("sub", (base, a)), b.loc))
                return
            cur = [self.temp_bind(b, Prim("sub", (base, a)), target)]
        if len(cur) == 1:  # the last binding made (of ``acc``, no step after it) binds the target itself
            last = self.out.pop()
            self.out.append(Bind(b.targets, last.rhs, b.loc))
        else:
            self.emit(b, Plus(tuple(cur)))

    def temp_bind(self, b: Bind, rhs: Prim | Plus, target: Var) -> Var:
        v = Var(self.namer.temp(), target.type)
        self.out.append(Bind((v,), rhs, b.loc))
        return v

