"""Adversary, session 14, round 2: the production path of the IR's nodes (``ASTAD_FROZEN_IR`` unset: the
suite's conftest sets it, so the suite never runs ``replay.run_named``'s nodes made by ``object.__new__``),
and the other round-1 changes (structural's remembered kinds, rule_Prim's inline keys and rule_Dup's naming,
the ``prim_rhss`` memo, outer_sums/unit_axes, codegen's ``_called_helpers`` and ``release``).

Programs with user names shaped like astad's own (``t3``, ``t3_ct``, ``v_ct``, ``x_1_ct``, ``t2_1``, ``t4_a``,
non-ASCII ones), statements repeated so that the reverse macro replays its rules, loops, branches, closures,
and user functions whose names end a runtime helper's (``_sum_to``, ``my_sum_to_shape``) are transformed in a
fresh interpreter without ``ASTAD_FROZEN_IR``; the oracles are independent: central finite differences in
float64 and forward mode's ``<u, J v> == <J^T u, v>`` (both in this process, on the subprocess's
derivatives), the IR interpreter on the subprocess's own stages, and this process's transform with frozen
nodes, which must give byte-identical generated code and the same values."""

from __future__ import annotations

import ast
import json
import os
import pickle
import random
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import astad
from astad import api, api_forward
from conftest import import_file

ROOT = Path(__file__).resolve().parents[1]

HAND = {
    # user names that are astad's names: temporaries, cotangents, copies
    "names": """
import numpy as np
def ARGS():
    r = np.random.default_rng(0); return [r.standard_normal(5) * 0.5, r.standard_normal((5, 5)) * 0.3, 0.7]
def f(x, W, s):
    t3 = np.sin(x) * s
    t3_ct = np.cos(t3) * x
    v_ct = W @ t3 + t3_ct
    x_1_ct = v_ct * v_ct + t3
    t1 = np.tanh(x_1_ct) * t3_ct
    t1_2 = np.tanh(x_1_ct) * t3_ct
    t2_ct = np.exp(-t1 * t1) + t1_2
    x_ct = t2_ct * s + W @ t2_ct
    s_ct = np.sum(x_ct * t3) * s
    return np.sum(x_ct * x_ct) + s_ct + np.sum(t3 * t3_ct)
""",
    # statements repeated: the macro replays its rules (run_named makes the nodes)
    "replay": """
import numpy as np
def ARGS():
    r = np.random.default_rng(1); return [r.standard_normal(4) * 0.5, r.standard_normal(4) * 0.5]
def f(x, y):
    a = np.sin(x) * y
    b = np.sin(a) * y
    c = np.sin(b) * y
    d = np.sin(c) * x
    e = np.sin(d) * x
    a1 = a * b + c * d
    a2 = b * c + d * e
    a3 = c * d + e * a
    a4 = d * e + a * b
    t9 = a1 * a2 - a3 * a4
    t9_2 = a1 * a2 - a3 * a4
    return np.sum(t9 * t9_2 + a1 + a2 * a3)
""",
    "loop_branch": """
import numpy as np
def ARGS():
    r = np.random.default_rng(2); return [r.standard_normal(3) * 0.5, 0.3, 3]
def f(x, s, k):
    t1 = x
    t1_ct = x * s
    for i in range(k):
        t1 = np.sin(t1) * s + t1_ct
        t1_ct = t1_ct * np.cos(t1)
        if i % 2 == 0:
            t2 = t1 * t1
        else:
            t2 = t1 * s
        t1 = t1 + t2
    return np.sum(t1 * t1_ct)
""",
    "closure": """
import numpy as np
def ARGS():
    r = np.random.default_rng(3); return [r.standard_normal(4) * 0.5, 0.4]
def f(x, s):
    def g(v):
        t3 = np.sin(v) * s
        v_ct = t3 * v
        return v_ct + t3
    h = lambda t3_ct: g(t3_ct) * s
    u = g(x)
    w = h(u)
    w2 = h(w)
    return np.sum(w * w2 + g(w))
""",
    # user functions whose names end a runtime helper's, and the helpers themselves called
    "helper_names": """
import numpy as np
def _sum_to(a, b):
    return a * b + np.sin(a)
def my_sum_to_shape(a):
    return np.cumsum(a) * a
def sum_to_shape_2(a):
    return a * 2.0
def ARGS():
    r = np.random.default_rng(4); return [r.standard_normal((3, 4)) * 0.5, r.standard_normal(4) * 0.5]
def f(x, y):
    a = x + y
    b = _sum_to(a, y)
    c = my_sum_to_shape(y) + np.sum(b, axis=0)
    d = sum_to_shape_2(c) * np.prod(y)
    e = np.linalg.det(x[:, :3]) * np.sum(d)
    return e + np.sum(np.cumsum(b, axis=1) * y)
""",
    # a parameter named like a copy (t2_1), a user's t2_2, sums of one variable read many times (rule_Dup)
    "dup_names": """
import numpy as np
def ARGS():
    r = np.random.default_rng(6); return [r.standard_normal(5) * 0.5, r.standard_normal(5) * 0.5]
def f(t2_1, y):
    t2 = t2_1 * y
    t2_2 = t2 * t2 * t2_1
    q = t2 + t2 + t2 * t2_2 + t2_1 * t2_1 + np.sin(t2_1)
    t4_a = q * q + q
    y_ct = t4_a * y + t4_a * t4_a + y * y
    return np.sum(y_ct * q + t2_2 + t4_a)
""",
    # non-ASCII names, and names that differ only by a suffix
    "unicode": """
import numpy as np
def ARGS():
    r = np.random.default_rng(7); return [r.standard_normal(4) * 0.5, 0.6]
def f(x, σ):
    t1 = np.sin(x) * σ
    t1ʹ = t1 * t1
    é = t1ʹ + x
    é_ct = é * σ
    x_ct = np.exp(é_ct) * t1
    σ_ct = np.sum(x_ct) * σ
    x_ct_2 = x_ct * x_ct_2_ct if False else x_ct * σ_ct
    return np.sum(é_ct * x_ct) + σ_ct + np.sum(é) + np.sum(x_ct_2)
""",
    # a matrix outer-product sum (outer_sums), unit axes (unit_axes), a reduction kept with keepdims
    "outer_unit": """
import numpy as np
def ARGS():
    r = np.random.default_rng(8); return [r.standard_normal(4) * 0.5, r.standard_normal(3) * 0.5,
                                          r.standard_normal((4, 3)) * 0.4]
def f(x, y, A):
    B = A + np.outer(x, y) + np.outer(np.sin(x), y) + np.outer(x, np.cos(y)) + np.outer(x * x, y * y)
    c = np.sum(B, axis=0, keepdims=True) * B
    d = (x[:, None] * c) @ y[:, None]
    return np.sum(d * d) + np.sum(B @ y)
""",
}

_UN = ["np.sin", "np.cos", "np.tanh", "np.exp", "-", "np.square"]
_POOL = ["t1", "t2", "t3", "t3_ct", "t1_2", "t2_1", "v_ct", "x_1_ct", "x_ct", "y_ct", "t4_a", "a", "a_2", "a_ct",
         "σ", "ψ_ct", "é", "t10", "t10_ct", "out_ct", "residuals_2", "b_ct_2", "t7_1_ct", "s_ct", "t5_2_ct"]


def _random_source(seed: int, lo: int = 4, hi: int = 14, branches: float = 0.0, ascii_only: bool = False) -> str:
    """A straight-line program of ``lo``-``hi`` statements, a third of them repeats of earlier right-hand sides
    (the macro replays them), most targets names shaped like astad's; a loop now and then, an ``if`` after a
    statement with probability ``branches``."""
    R = random.Random(seed)
    pool = [n for n in _POOL if n.isascii()] if ascii_only else _POOL
    env, lines, pats = ["x", "y", "s"], [], []
    for k in range(R.randint(lo, hi)):
        tgt = R.choice(pool) if R.random() < 0.7 * 14 / hi else f"w{k}" if ascii_only or R.random() < 0.8 else f"ω{k}"
        if pats and R.random() < 0.35:
            e = R.choice(pats)
        else:
            a, b, u, op = R.choice(env), R.choice(env), R.choice(_UN), R.choice("+-*")
            e = f"-{a} {op} {b}" if u == "-" else f"{u}({a}) {op} {b}" if R.random() < 0.5 else \
                f"{u}({a} {op} {b}) * 0.5"
            pats.append(e)
        lines.append(f"    {tgt} = {e}")
        if tgt not in env:
            env.append(tgt)
        if R.random() < branches:
            v = R.choice([n for n in env if n != "s"])
            lines += [f"    if np.sum({v}) > 0:", f"        {v} = {v} * s", "    else:",
                      f"        {v} = np.sin({v}) + y"]
    if R.random() < 0.3:
        v = R.choice(env[3:] or ["x"])
        lines += ["    acc = x", "    for i in range(k):", f"        acc = np.sin(acc) * s + {v}",
                  f"        {v} = acc * {R.choice(env)}"]
        env.append("acc")
    ret = " + ".join(f"np.sum({v} * {R.choice(env)})" for v in R.sample(env, 3))
    return (f"import numpy as np\ndef ARGS():\n    r = np.random.default_rng({seed})\n"
            f"    return [r.standard_normal(4) * 0.5, r.standard_normal(4) * 0.5, 0.7, 2]\n"
            f"def f(x, y, s, k):\n" + "\n".join(lines) + f"\n    return {ret}\n")


#: what the subprocess computes of each program, without ASTAD_FROZEN_IR: generated code (reverse and
#: forward), value, cotangents of a fixed output cotangent, jvp of fixed tangents, the IR interpreter's
#: cotangents of the AD and optimised stages, every stage's .ir() text, and how many nodes run_named made
_SCRIPT = r"""
import importlib.util, os, pickle, sys, traceback
os.environ["ASTAD_DISK_CACHE"] = "0"
import numpy as np, astad
from astad import api, api_forward
from astad.ad import replay
from astad.ir import interp
from astad.ir.types import FROZEN_NODES
assert not FROZEN_NODES and replay._NEW is object.__new__
made = []
replay._NEW = lambda cls: made.append(cls) or object.__new__(cls)
out = {}
for path in sys.argv[2:]:
    stem = os.path.basename(path)[:-3]
    spec = importlib.util.spec_from_file_location("adv2_" + stem, path)
    m = importlib.util.module_from_spec(spec); sys.modules[spec.name] = m; spec.loader.exec_module(m)
    args = m.ARGS()
    wrt = frozenset(i for i, a in enumerate(args) if not isinstance(a, int))
    r = {}
    try:
        made.clear()
        astad.clear_caches(disk=False)
        r["rev_src"] = api.Reverse(m.f).derivative(args, wrt).source
        r["made"] = len(made)
        r["fwd_src"] = api_forward.Forward(m.f).derivative(args, wrt).source
        value, pullback = astad.reverse(m.f)(*args)
        rng = np.random.default_rng(1)
        u = float(rng.standard_normal())
        cts = pullback(u)
        tans = tuple(0 if isinstance(a, int) else rng.standard_normal(np.shape(a)) if np.ndim(a) else
                     float(rng.standard_normal()) for a in args)
        r.update(value=value, u=u, cts=cts, tans=tans, jvp=astad.jvp(m.f, tuple(args), tans))
        d = astad.reverse(m.f).transform(*args)
        r["interp"] = [interp.run_reverse(getattr(d.stages, st), list(args), u)[1] for st in ("ad", "optimised")]
        rv = astad.reverse(m.f)
        r["ir"] = {st: rv.ir(st, *args) for st in rv.stages}
        fv = api_forward.Forward(m.f)
        r["fir"] = {st: fv.ir(st, *args) for st in fv.stages}
    except astad.InternalError:
        r["error"] = "internal: " + traceback.format_exc()
    except astad.AstadError as e:
        r["refused"] = str(e)
    out[stem] = r
sys.stdout.buffer.write(pickle.dumps(out))
"""


def _production(paths: list[Path]) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("ASTAD_FROZEN_IR", "PYTHONPATH")}
    env.update(ASTAD_DISK_CACHE="0", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", _SCRIPT, "-", *map(str, paths)], cwd=ROOT, env=env,
                          capture_output=True, timeout=600)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    return pickle.loads(done.stdout)


def _inner(u, v) -> float:
    return float(np.sum(np.asarray(u) * np.asarray(v)))


def _check(stem: str, path: Path, got: dict) -> None:
    assert "error" not in got, got.get("error")
    module = import_file(path, f"adversary_s14_r2_{stem}_{os.getpid()}")  # (the file the subprocess read)
    f, args = module.f, module.ARGS()
    if "refused" in got:  # (refused there, refused here, as astad's own error)
        with pytest.raises(astad.AstadError):
            astad.reverse(f)(*args)
        return
    wrt = frozenset(i for i, a in enumerate(args) if not isinstance(a, int))
    # the frozen nodes' transform (this process): the same generated code, the same IR at every stage
    assert api.Reverse(f).derivative(args, wrt).source == got["rev_src"], stem
    assert api_forward.Forward(f).derivative(args, wrt).source == got["fwd_src"], stem
    rv, fv = astad.reverse(f), api_forward.Forward(f)
    assert {st: rv.ir(st, *args) for st in rv.stages} == got["ir"], stem
    assert {st: fv.ir(st, *args) for st in fv.stages} == got["fir"], stem
    # the value: Python's
    np.testing.assert_allclose(got["value"], f(*args), rtol=1e-12, atol=1e-12)
    u, cts, tans = got["u"], got["cts"], got["tans"]
    # the cotangents: central differences of <u, f> along each coordinate
    eps = 1e-6
    for i, (a, ct) in enumerate(zip(args, cts)):
        if isinstance(a, int):
            assert ct is None
            continue
        if np.ndim(a) == 0:
            moved = [[a + s * eps if j == i else b for j, b in enumerate(args)] for s in (1, -1)]
            fd = u * (f(*moved[0]) - f(*moved[1])) / (2 * eps)
        else:
            fd = np.zeros(np.shape(a))
            for idx in np.ndindex(*np.shape(a)):
                plus, minus = np.array(a, float), np.array(a, float)
                plus[idx] += eps
                minus[idx] -= eps
                fd[idx] = u * (f(*[plus if j == i else b for j, b in enumerate(args)]) -
                               f(*[minus if j == i else b for j, b in enumerate(args)])) / (2 * eps)
        np.testing.assert_allclose(ct, fd, rtol=1e-5, atol=1e-6, err_msg=f"{stem} argument {i}")
    # forward mode (made there too): <u, J t> == <J^T u, t>
    lhs = u * got["jvp"][1]
    rhs = sum(_inner(c, t) for c, t, a in zip(cts, tans, args) if not isinstance(a, int))
    assert np.isclose(lhs, rhs, rtol=1e-9, atol=1e-12), stem
    # the IR interpreter, on the subprocess's own stages (nodes made there)
    for stage_cts in got["interp"]:
        for p, q in zip(stage_cts, cts):
            assert (p is None) == (q is None)
            if q is not None:
                np.testing.assert_allclose(p, q, rtol=1e-10, atol=1e-12)


@pytest.fixture(scope="module")
def hand_results(tmp_path_factory):
    d = tmp_path_factory.mktemp("adversary_s14_r2_hand")
    paths = []
    for name, source in HAND.items():
        p = d / f"{name}.py"
        p.write_text(source)
        paths.append(p)
    return d, _production(paths)


@pytest.mark.parametrize("name", sorted(HAND))
def test_production_nodes_hand_written(hand_results, name):
    d, results = hand_results
    _check(name, d / f"{name}.py", results[name])


def test_the_replay_made_nodes_in_production(hand_results):
    """The programs with repeated statements were replayed, their nodes made by object.__new__ (else the
    tests above check nothing of it)."""
    _, results = hand_results
    assert results["replay"]["made"] > 100 and results["names"]["made"] > 0


_SEEDS = list(range(1000, 1000 + int(os.environ.get("ASTAD_R2_PROGRAMS", "24"))))


def test_production_nodes_random_programs(tmp_path_factory):
    d = tmp_path_factory.mktemp("adversary_s14_r2_random")
    paths = []
    for seed in _SEEDS:
        p = d / f"r{seed}.py"
        p.write_text(_random_source(seed))
        paths.append(p)
    results = _production(paths)
    replayed = 0
    for p in paths:
        _check(p.stem, p, results[p.stem])
        replayed += results[p.stem].get("made", 0) > 0
    assert replayed >= len(paths) // 3  # (replay ran: run_named's nodes are what is checked)


_NODES = r"""
import copy, dataclasses, os, pickle, sys
os.environ["ASTAD_DISK_CACHE"] = "0"
import importlib.util
import numpy as np, astad
from astad.ad import replay
from astad.ir import Bind, Block, Prim, Var
made = []
replay._NEW = lambda cls: made.append(cls) or object.__new__(cls)
spec = importlib.util.spec_from_file_location("adv2_nodes", sys.argv[1])
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
args = m.ARGS()
prog = astad.reverse(m.f).transform(*args).stages.ad
seen = set()
def walk(block):
    for b in block.binds:
        yield b
        for attr in ("then", "orelse", "body"):
            x = getattr(b.rhs, attr, None)
            if isinstance(x, Block):
                yield from walk(x)
n = 0
for b in walk(prog.backward):
    if type(b.rhs) is not Prim or len(b.targets) != 1:
        continue
    v, p = b.targets[0], b.rhs
    v2, p2 = Var(v.name, v.type), Prim(p.op, p.args, p.params)
    b2 = Bind((v2,), p2, b.loc)
    for x, y in ((v, v2), (p, p2), (b, b2)):
        assert x == y and hash(x) == hash(y) and str(x) == str(y) and repr(x) == repr(y), (x, y)
        assert pickle.loads(pickle.dumps(x)) == x and copy.deepcopy(x) == x and dataclasses.replace(x) == x
        assert dataclasses.astuple(x) == dataclasses.astuple(y)
    n += 1
assert pickle.loads(pickle.dumps(prog)) == prog
print(n, len(made))
"""


def test_nodes_made_by_object_new_are_the_classes_own(hand_results):
    """Each Var, Prim and Bind of a replayed program's backward block (run_named's, in production) equals one
    made by its class: equality, hash, str, repr, pickling, copying, dataclasses' replace and astuple."""
    d, _ = hand_results
    env = {k: v for k, v in os.environ.items() if k not in ("ASTAD_FROZEN_IR", "PYTHONPATH")}
    env.update(ASTAD_DISK_CACHE="0", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", _NODES, str(d / "replay.py")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    checked, made = map(int, done.stdout.split())
    assert checked > 30 and made > 100


# ---------------------------------------------------------------- del lines of long reversed functions

_WORDS = re.compile(r"\w+")
_TARGETS = re.compile(r"    (\w+(?:, \w+)*) (?:[-+*/@%|&^]|//|\*\*)?= ")


def _functions(src: str):
    for chunk in re.split(r"\n(?=def )", src):
        if chunk.startswith("def "):
            yield chunk[4:chunk.find("(")], chunk.split("\n")[1:]


def _dels_never_before_a_read(src: str) -> list[str]:
    """Each top-level ``del`` of a generated function (ast): the name bound before it, and not read after it
    unless bound again first (a read after it would be a NameError on some path, or a later value lost)."""
    problems = []
    for fn in [n for n in ast.parse(src).body if isinstance(n, ast.FunctionDef)]:
        bound = {a.arg for a in fn.args.args}
        for k, st in enumerate(fn.body):
            if not isinstance(st, ast.Delete):
                bound |= {n.id for n in ast.walk(st) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
                continue
            for t in st.targets:
                if t.id not in bound:
                    problems.append(f"{fn.name}: del {t.id} of a name not bound (statement {k})")
                bound.discard(t.id)
                for later in fn.body[k + 1:]:
                    names = [n for n in ast.walk(later) if isinstance(n, ast.Name) and n.id == t.id]
                    reads = [n for n in names if isinstance(n.ctx, ast.Load)]
                    stores = [n for n in names if isinstance(n.ctx, ast.Store)]
                    rebinds = isinstance(later, ast.Assign) and stores and not any(
                        isinstance(n, ast.Name) and n.id == t.id for n in ast.walk(later.value))
                    if reads and not rebinds:
                        problems.append(f"{fn.name}: {t.id} read after its del (statement {k})")
                    if stores:
                        break
    return problems


def _dels_missing(src: str) -> list[str]:
    """release.py's promise (its docstring), read independently: in a function binding at least 64 names at its
    top level (the residuals' unpacking aside), each such name whose last mention is before the group that
    returns is deleted after that mention and before the next group's header comment."""
    problems = []
    for fname, lines in _functions(src):
        bound, last, dels, headers = set(), {}, {}, []
        for i, line in enumerate(lines):
            if line.startswith("    del "):
                for n in line[8:].split(", "):
                    dels.setdefault(n.strip(), []).append(i)
                continue
            if line.startswith("    # "):
                headers.append(i)
                continue
            m = _TARGETS.match(line)
            if m and not line.endswith("= residuals"):
                bound.update(m.group(1).split(", "))
            for w in _WORDS.findall(line):
                last[w] = i
        if len(bound) < 64:
            continue
        ret = max(i for i, line in enumerate(lines) if line.startswith("    return "))
        last_header = max([h for h in headers if h < ret], default=-1)
        for n in sorted(bound):
            at = last[n]
            if at > last_header:
                continue  # (read in the group that returns: the return frees it)
            nxt = min([h for h in headers if h > at] + [ret])
            if not any(at < j < nxt for j in dels.get(n, [])):
                problems.append(f"{fname}: {n} last mentioned on line {at}, not deleted before line {nxt}")
    return problems


@pytest.mark.parametrize("ascii_only", [True, False])
def test_del_lines_of_long_programs(tmp_path_factory, ascii_only):
    """Long programs (60-160 statements, names shaped like astad's, non-ASCII ones or none, an ``if`` now and
    then), transformed in production: the reversed functions' ``del`` lines free every name read for the last
    time before the returning group, and none before a read; derivatives as central differences'."""
    d = tmp_path_factory.mktemp(f"adversary_s14_r2_long_{ascii_only}")
    paths = []
    for seed in range(5000, 5000 + int(os.environ.get("ASTAD_R2_LONG", "10"))):
        p = d / f"long{seed}.py"
        p.write_text(_random_source(seed, 60, 160, 0.03, ascii_only))
        paths.append(p)
    results = _production(paths)
    with_dels = 0
    for p in paths:
        got = results[p.stem]
        _check(p.stem, p, got)
        if "rev_src" in got:
            src = got["rev_src"]
            assert _dels_never_before_a_read(src) == [], p.stem
            assert _dels_missing(src) == [], p.stem
            with_dels += "\n    del " in src
    assert with_dels >= 2


def _chain_source(name, seed: int = 3) -> str:
    """90 statements, each binding ``name(k)``, reading two earlier names."""
    R = random.Random(seed)
    env, lines = ["x", "y"], []
    for k in range(90):
        a, b = R.choice(env), R.choice(env)
        lines.append(f"    {name(k)} = np.sin({a}) * {b} + {a} * 0.5")
        env.append(name(k))
    return ("import numpy as np\ndef ARGS():\n    r = np.random.default_rng(1)\n"
            "    return [r.standard_normal(3) * 0.5, r.standard_normal(3) * 0.5]\ndef f(x, y):\n" + "\n".join(lines)
            + f"\n    return np.sum({env[-1]} * {env[-2]}) + np.sum({env[5]})\n")


def test_del_lines_of_long_names(tmp_path):
    """Names longer than a del line (110 characters), long non-ASCII names, and temporaries' names taken by
    the user (``t3``, ``t4_ct``): every del line as promised, none before a read; derivatives as central
    differences'."""
    names = {"long": lambda k: "v" * 110 + str(k), "accented": lambda k: "é" * 60 + f"_{k}",
             "temporaries": lambda k: f"t{k}_ct" if k % 2 else f"t{k}"}
    paths = []
    for stem, name in names.items():
        p = tmp_path / f"{stem}.py"
        p.write_text(_chain_source(name))
        paths.append(p)
    results = _production(paths)
    for p in paths:
        got = results[p.stem]
        _check(p.stem, p, got)
        src = got["rev_src"]
        assert "\n    del " in src
        assert _dels_never_before_a_read(src) == [] and _dels_missing(src) == [], p.stem
