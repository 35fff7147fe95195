"""Random everyday numpy expressions for tests/test_random_numpy_breadth.py: chains of reductions
(axis tuples, negative axes, keepdims, ddof), indexing (negative indices, negative-step slices,
Ellipsis, None, boolean masks, integer arrays with repeated entries, ``x[i, :, j]`` mixes),
gathers (``np.take``, ``np.take_along_axis``, ``np.sort``), shape changes, broadcasting against
size-1 axes, einsum, reductions with ``initial=`` and ``where=``, ``np.diff`` with ``prepend=`` and
``append=``, and in-place updates through such indexes (``y[[0, 0, 1]] += v``, ``np.add.at(y, idx, v)``;
an index array of two dimensions, values of shape (2,) broadcast over it: numpy 2.4's ``np.add.at``
adds memory past the values there, refused).

Each step is drawn, written as text and run in numpy on a sample to learn the shape it gives
(a step numpy rejects is drawn again), so every program is one plain Python runs."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

SAMPLE_SEED = 7


@st.composite
def axis_spec(draw, ndim, allow_none=True, allow_tuple=True):
    kinds = ["int"] + (["none"] if allow_none else []) + (["tuple"] if allow_tuple and ndim > 1 else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "none" or ndim == 0:
        return None
    if kind == "int":
        return draw(st.integers(-ndim, ndim - 1))
    axes = draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True))
    return tuple(a - ndim if draw(st.booleans()) else a for a in axes)


@st.composite
def reduction(draw, e, shape):
    nd = len(shape)
    op = draw(st.sampled_from(["sum", "mean", "prod", "max", "min", "std", "var", "cumsum", "cumprod",
                               "norm", "ptp", "logsumexp", "method_sum", "method_max", "masked", "masked", "diff"]))
    if op == "diff":  # np.diff with prepend=/append= (a number, or a slice of the array itself)
        if not nd:
            return f"np.sum({e})"
        axis = draw(st.integers(-nd, nd - 1))
        ends = {"prepend": draw(st.sampled_from([None, "0.5", "w[1]", f"np.take({e}, [-1], axis={axis})"])),
                "append": draw(st.sampled_from([None, "-1.0", f"np.take({e}, [0], axis={axis})"]))}
        given = "".join(f", {k}={v}" for k, v in ends.items() if v is not None)
        return f"np.diff({e}, n={draw(st.integers(1, 2))}, axis={axis}{given})"
    if op in ("cumsum", "cumprod"):
        axis = draw(st.one_of(st.none(), st.integers(-nd, nd - 1))) if nd else None
        return f"np.{op}({e}, axis={axis})" if axis is not None else f"np.{op}({e})"
    if op == "ptp":
        return f"np.ptp({e}, axis={draw(st.integers(-nd, nd - 1)) if nd else None})"
    axis = draw(axis_spec(nd))
    keep = draw(st.booleans())
    if op == "norm":
        if axis is None or isinstance(axis, tuple) and len(axis) > 2:
            return f"np.linalg.norm({e})"
        if isinstance(axis, tuple) and len(axis) == 2:
            ord_ = draw(st.sampled_from(["None", "'fro'", "1", "np.inf", "2"]))
        else:
            ord_ = draw(st.sampled_from(["None", "1", "np.inf", "-np.inf", "3"]))
        return f"np.linalg.norm({e}, ord={ord_}, axis={axis!r}, keepdims={keep})"
    if op == "logsumexp":
        return (f"(np.max({e}, axis={axis!r}, keepdims=True) + np.log(np.sum(np.exp({e} - "
                f"np.max({e}, axis={axis!r}, keepdims=True)), axis={axis!r}, keepdims=True)))")
    if op in ("std", "var"):
        return f"np.{op}({e}, axis={axis!r}, ddof={draw(st.integers(0, 1))}, keepdims={keep})"
    if op == "method_sum":
        return f"({e}).sum({axis!r}, keepdims={keep})" if axis is not None else f"({e}).sum()"
    if op == "method_max":
        return f"({e}).max(axis={axis!r}, keepdims={keep})"
    if op == "masked":  # initial= and where= (max and min need initial=, as in numpy)
        which = draw(st.sampled_from(["sum", "prod", "max", "min"]))
        where = draw(st.sampled_from([f"({e}) > 0.1", f"({e}) < 0.5", "True"]))
        initial = draw(st.sampled_from(["w[2]", "0.5", "-1.0"] + (["None"] if which in ("sum", "prod") else [])))
        given = f", initial={initial}" if initial != "None" else ""
        if draw(st.booleans()):
            return f"({e}).{which}(axis={axis!r}, keepdims={keep}, where={where}{given})"
        return f"np.{which}({e}, axis={axis!r}, keepdims={keep}, where={where}{given})"
    return f"np.{op}({e}, axis={axis!r}, keepdims={keep})"


@st.composite
def index_item(draw, n):
    kind = draw(st.sampled_from(["int", "slice", "slice", "array", "none", "all"]))
    if kind == "int":
        return str(draw(st.integers(-n, n - 1)))
    if kind == "slice":
        a = draw(st.one_of(st.none(), st.integers(-n, n)))
        b = draw(st.one_of(st.none(), st.integers(-n - 1, n)))
        c = draw(st.sampled_from([None, 1, 2, -1, -2]))
        return ":".join("" if v is None else str(v) for v in (a, b, c))
    if kind == "array":
        k = draw(st.integers(1, 4))
        return repr(draw(st.lists(st.integers(-n, n - 1), min_size=k, max_size=k)))
    if kind == "none":
        return "None"
    return ":"


@st.composite
def indexing(draw, e, shape):
    nd = len(shape)
    if nd and draw(st.integers(0, 4)) == 0:  # a boolean mask of the leading axes
        k = draw(st.integers(1, nd))
        c = draw(st.sampled_from(["> 0", "< 0.3", "!= 0", "> 5"]))  # (> 5: none)
        return f"({e})[({e})[{', '.join([':'] * k + ['0'] * (nd - k))}] {c}]"
    items = [draw(index_item(n)) for n in shape[:draw(st.integers(0, nd))]]
    if draw(st.booleans()):
        at = draw(st.integers(0, len(items)))
        items.insert(at, "...")
    if draw(st.integers(0, 3)) == 0:
        items.insert(draw(st.integers(0, len(items))), "None")
    if not items:
        items = ["..."]
    return f"({e})[{', '.join(items)}]"


@st.composite
def gather(draw, e, shape):
    nd = len(shape)
    op = draw(st.sampled_from(["take", "take_flat", "sort", "along"]))
    if op == "take_flat":
        size = int(np.prod(shape))
        idx = draw(st.lists(st.integers(-size, size - 1), min_size=1, max_size=5))
        return f"np.take({e}, {idx!r})"
    axis = draw(st.integers(-nd, nd - 1))
    if op == "take":
        n = shape[axis]
        idx = draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=4))
        return f"np.take({e}, {idx!r}, axis={axis})"
    kind = draw(st.sampled_from(["", "", ", kind='stable'", ", stable=True"]))  # (kind='stable': an internal error)
    if op == "sort":
        return f"np.sort({e}, axis={axis}{kind})"
    return f"np.take_along_axis({e}, np.argsort({e}, axis={axis}{kind}), axis={axis})"


@st.composite
def reshaping(draw, e, shape):
    nd = len(shape)
    op = draw(st.sampled_from(["T", "transpose", "swapaxes", "moveaxis", "ravel", "expand", "flip", "reshape"]))
    if op == "T":
        return f"({e}).T"
    if op == "transpose":
        perm = draw(st.permutations(range(nd)))
        return f"np.transpose({e}, {tuple(p - nd if draw(st.booleans()) else p for p in perm)!r})"
    if op == "swapaxes":
        return f"np.swapaxes({e}, {draw(st.integers(-nd, nd - 1))}, {draw(st.integers(-nd, nd - 1))})"
    if op == "moveaxis":
        return f"np.moveaxis({e}, {draw(st.integers(-nd, nd - 1))}, {draw(st.integers(-nd, nd - 1))})"
    if op == "ravel":
        return f"({e}).reshape(-1)"
    if op == "expand":
        return f"np.expand_dims({e}, {draw(st.integers(-nd - 1, nd))})"
    if op == "flip":
        return f"np.flip({e}, axis={draw(st.integers(-nd, nd - 1))})"
    if nd >= 2:
        return f"({e}).reshape({shape[0]}, -1)"
    return f"({e}).reshape(1, -1)"


@st.composite
def w_like(draw, shape):
    """A view of the parameter ``w`` that broadcasts against ``shape`` (a suffix of its axes, each
    of its size or 1, or larger where ``shape`` has 1)."""
    k = draw(st.integers(0, len(shape)))
    wshape = tuple(draw(st.sampled_from([1, n] if n != 1 else [1, 2, 3])) for n in shape[len(shape) - k:])
    return f"w[:{max(1, int(np.prod(wshape)))}].reshape({wshape!r})", len(wshape)


@st.composite
def broadcast_with(draw, e, shape):
    """``e`` combined with a view of ``w`` that broadcasts against it."""
    w, _ = draw(w_like(shape))
    op = draw(st.sampled_from(["*", "+", "-", "maximum", "where"]))
    if op == "maximum":
        return f"np.maximum({e}, {w})"
    if op == "where":
        return f"np.where({e} > {w}, {e}, {w} * 2.0)"
    return f"({e} {op} {w})"


@st.composite
def contraction(draw, e, shape):
    nd = len(shape)
    letters = "abcde"[:nd]
    kept = "".join(c for c in letters if draw(st.booleans()))
    out = "".join(draw(st.permutations(kept)))
    other = "".join(draw(st.permutations(letters)))
    kind = draw(st.sampled_from(["one", "self", "w"]))
    if kind == "one":
        return f"np.einsum('{letters}->{out}', {e})"
    if kind == "self":
        return f"np.einsum('{letters},{other}->{out}', {e}, np.transpose({e}, {tuple(letters.index(c) for c in other)!r}))"
    w, k = draw(w_like(shape))  # size-1 axes broadcast against each other
    return f"np.einsum('{letters},{letters[nd - k:]}->{out}', {e}, {w})"


STEPS = [reduction, indexing, gather, reshaping, broadcast_with, contraction]


def shape_of(text, x, w):
    """The shape ``text`` gives in numpy on the sample (None where numpy rejects it or it is empty)."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            v = eval(text, {"np": np}, {"x": x, "w": w})
    except Exception:
        return None
    v = np.asarray(v)
    if v.dtype.kind != "f" or v.ndim > 4 or v.size > 40:
        return None
    return v.shape


@st.composite
def update(draw, shape):
    """A statement ``y[index] op= value`` on a copy ``y`` of the current value."""
    nd = len(shape)
    k = draw(st.integers(1, nd))
    items = []
    for n in shape[:k]:
        kind = draw(st.sampled_from(["int", "slice", "array", "all", "grid", "grid"]))
        if kind == "int":
            items.append(str(draw(st.integers(-n, n - 1))))
        elif kind == "slice":
            items.append(draw(st.sampled_from(["::-1", "1:", ":-1", "::2", "-2::-1"])))
        elif kind == "array":
            items.append(repr(draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=3))))
        elif kind == "grid":  # an index array of two dimensions (no blank: update_statement splits at ", ")
            a, b, c, d = (draw(st.integers(-n, n - 1)) for _ in range(4))
            items.append(f"np.array([[{a},{b}],[{c},{d}]])")
        else:
            items.append(":")
    if draw(st.integers(0, 3)) == 0:
        where = "y > 0.2"
    else:
        where = ", ".join(items)
    grid = any(i.startswith("np.array([[") for i in items) and not where.startswith("y >")
    op = draw(st.sampled_from(["add.at", "add.at", "+="] if grid else ["=", "+=", "-=", "*=", "add.at"]))
    rhs = draw(st.sampled_from(["2.0 * w[0]", "np.sin(y[{w}])", "w[-1] ** 2"] + ["w[1:3]"] * (3 if grid else 1)))
    # (w[1:3]: values broadcast over the selection, often over an index array of two dimensions)
    return where, op, rhs


def update_statement(where: str, op: str, rhs: str) -> str:
    """``y[where] op= rhs``, or ``np.add.at(y, where, rhs)`` (its index a tuple of the parts: a slice
    is written ``slice(...)``, as ``np.add.at`` takes it)."""
    if op != "add.at":
        return f"y[{where}] {op} {rhs}"
    parts = [p.strip() for p in where.split(", ")] if not where.startswith("y >") else [where]
    if any(p == ":" or ":" in p for p in parts):
        return f"y[{where}] += {rhs}"  # (a slice in np.add.at's index: numpy's np.s_[...]; not drawn)
    index = parts[0] if len(parts) == 1 else "(" + ", ".join(parts) + ")"
    return f"np.add.at(y, {index}, {rhs})"


@st.composite
def programs(draw):
    """(source of ``f(x, w)``, x, w)."""
    rng = np.random.default_rng(SAMPLE_SEED)
    shape = draw(st.sampled_from([(2, 3, 4), (3, 4), (4,), (2, 1, 3), (3, 1)]))
    x = rng.standard_normal(shape)
    w = rng.standard_normal(72)
    lines, e, cur = [], "x", shape
    for _ in range(draw(st.integers(1, 6))):
        empty = 0 in cur  # (a mask that selected nothing: no index of it to draw)
        if draw(st.integers(0, 4)) == 0 and len(cur) >= 1 and not empty:
            where, op, rhs = draw(update(cur))
            rhs = rhs.replace("{w}", where)
            stmt = [f"y = ({e}).copy()", update_statement(where, op, rhs)]
            env = {"np": np, "x": x, "w": w}
            try:
                import warnings
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    exec("\n".join(lines + stmt), env)
            except Exception:
                continue
            lines += stmt
            name = f"v{len(lines)}"
            lines.append(f"{name} = y")
            e = name
            continue
        step = draw(st.sampled_from(STEPS if not empty else [reduction, reshaping, broadcast_with, contraction]))
        if len(cur) == 0 and step is not broadcast_with:
            continue
        text = draw(step(e, cur))
        env = {"np": np, "x": x, "w": w}
        try:
            exec("\n".join(lines), env)
        except Exception:
            continue
        new = shape_of(text, env["x"] if e == "x" else None, w) if not lines else None
        if lines:
            try:
                import warnings
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    v = np.asarray(eval(text, env))
                new = v.shape if v.dtype.kind == "f" and v.size <= 40 and v.ndim <= 4 else None
            except Exception:
                new = None
        if new is None:
            continue
        name = f"v{len(lines)}"
        lines.append(f"{name} = {text}")
        e, cur = name, new
    body = "\n".join("    " + line for line in lines) or "    pass"
    ret = f"np.sum(np.sin({e}) * {e})" if e != "x" else "np.sum(np.sin(x) * x)"
    return f"import numpy as np\n\n\ndef f(x, w):\n{body}\n    return {ret}\n", x, w
