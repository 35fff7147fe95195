"""Looking at what astad generates: the IR of each stage, the generated source,
its rendering in Jupyter, its determinism, and golden copies of small examples.

Regenerate the golden files with ``ASTAD_UPDATE_GOLDEN=1 pytest tests/test_inspect.py``.
"""

import html
import importlib.util
import itertools
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import astad
from conftest import known_to_inspect

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("ASTAD_UPDATE_GOLDEN") == "1"

_ids = itertools.count()

PROGRAMS = {
    # the example of DESIGN.md (CHAD paper, Fig. 1b/1d)
    "design_example": ("""\
        import numpy as np


        def f(x1, x2, x3, x4):
            y = x1 * x4 + 2.0 * x2
            z = y * x3
            w = z + x4
            return np.sin(w)
        """, "f", lambda: (0.5, -1.25, 2.0, 0.75)),
    # a small tanh layer with a loss
    "tanh_layer": ("""\
        import numpy as np


        def loss(w, b, x, n):
            h = np.tanh(x @ w + b)
            return np.sum(h * h) / n
        """, "loss", lambda: (np.linspace(-1, 1, 12).reshape(4, 3), np.array([0.1, -0.2, 0.3]),
                              np.linspace(0, 2, 8).reshape(2, 4), 3)),
    # an unused parameter and a helper function that is inlined
    "helper_and_unused": ("""\
        import numpy as np


        def square(v):
            return v * v


        def g(x, unused, s):
            e = np.exp(x * s)
            return np.sum(square(e)) + s
        """, "g", lambda: (np.array([0.1, 0.2, 0.3]), np.ones(2), 0.5)),
}


def load(tmp_path, key, monkeypatch):
    """The example ``key``, written to ``tmp_path/<key>.py`` and imported: (module, function, args)."""
    text, fname, args = PROGRAMS[key]
    path = tmp_path / f"{key}.py"
    path.write_text(textwrap.dedent(text))
    name = f"astad_inspect_{key}_{os.getpid()}_{next(_ids)}"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, mod)
    spec.loader.exec_module(mod)
    known_to_inspect(mod)
    return mod, getattr(mod, fname), args()


def normalise(source, path):
    return source.replace(str(path), "<file>")


# --------------------------------------------------------------------------- IR stages


def test_ir_of_each_stage(tmp_path, monkeypatch):
    _, f, args = load(tmp_path, "design_example", monkeypatch)
    rev = astad.reverse(f)
    rev(*args)
    texts = {}
    for stage in astad.STAGES:
        text = rev.ir(stage)
        assert isinstance(text, str) and text.strip()
        assert "x1" in text and "x4" in text
        texts[stage] = text
    assert set(astad.STAGES) == {"core", "structural", "activity", "ad", "optimised"}
    assert "let" in texts["core"] and "sin" in texts["core"]
    assert "dup" not in texts["core"]  # contraction is implicit before the structural pass
    assert "dup x4" in texts["structural"]
    assert "f_backward" in texts["ad"] and "f_backward" in texts["optimised"]
    assert "cos" in texts["ad"]
    # the default stage is the optimised one
    assert rev.ir() == texts["optimised"]


def test_ir_with_example_arguments(tmp_path, monkeypatch):
    _, f, args = load(tmp_path, "tanh_layer", monkeypatch)
    rev = astad.reverse(f)  # not called: example arguments give the types
    text = rev.ir("core", *args)
    assert "f64[4,3]" in text and "tanh" in text
    assert rev.ir("structural", *args).count("dup") >= 1


def test_unknown_stage(tmp_path, monkeypatch):
    _, f, args = load(tmp_path, "design_example", monkeypatch)
    rev = astad.reverse(f)
    rev(*args)
    with pytest.raises((ValueError, astad.AstadError)) as info:
        rev.ir("parsed")
    assert "core" in str(info.value)


def test_dup_for_a_variable_used_twice_drop_for_an_unused_one(tmp_path, monkeypatch):
    _, g, args = load(tmp_path, "helper_and_unused", monkeypatch)
    rev = astad.reverse(g)
    rev(*args)
    structural = rev.ir("structural")
    assert re.search(r"\bdrop unused\b", structural), structural
    assert re.search(r"\bdup s\b", structural), structural  # s is read twice
    assert "dup" in structural  # e * e inside the inlined helper
    core = rev.ir("core")
    assert "drop" not in core and "dup" not in core


def test_transform_returns_a_derivative(tmp_path, monkeypatch):
    _, f, args = load(tmp_path, "tanh_layer", monkeypatch)
    d = astad.reverse(f).transform(*args)
    assert isinstance(d, astad.Derivative)
    value, residuals = d.forward(*args)
    assert value == f(*args)
    cts = d.backward(residuals, 1.0)
    assert len(cts) == 4 and cts[3] is None
    assert all(np.shape(c) == np.shape(a) for c, a in zip(cts[:3], args[:3]))
    assert "def loss_forward(" in d.source
    if d.stages is not None:
        assert "dup" in d.stages.text("structural")


# --------------------------------------------------------------------------- generated source


@pytest.mark.parametrize("key", list(PROGRAMS))
def test_source_compiles_and_runs(tmp_path, monkeypatch, key):
    _, fn, args = load(tmp_path, key, monkeypatch)
    rev = astad.reverse(fn)
    value, pullback = rev(*args)
    source = rev.source
    code = compile(source, "<generated>", "exec")
    ns = {}
    exec(code, ns)  # noqa: S102
    name = fn.__name__
    forward, backward = ns[f"{name}_forward"], ns[f"{name}_backward"]
    v, residuals = forward(*args)
    assert v == fn(*args) == value
    for mine, theirs in zip(backward(residuals, 1.0), pullback(1.0)):
        if theirs is None:
            assert mine is None
        else:
            np.testing.assert_array_equal(mine, theirs)


def test_repr_markdown(tmp_path, monkeypatch):
    _, f, args = load(tmp_path, "tanh_layer", monkeypatch)
    rev = astad.reverse(f)
    before = rev._repr_markdown_()
    assert "```python" in before and "def loss(w, b, x, n):" in before  # not called yet: the user's source
    rev(*args)
    md = rev._repr_markdown_()
    assert f"```python\n{rev.source}" in md
    assert md.rstrip().endswith("```")
    assert "loss_forward" in md and "loss_backward" in md


def test_repr_html(tmp_path, monkeypatch):
    _, f, args = load(tmp_path, "tanh_layer", monkeypatch)
    rev = astad.reverse(f)
    assert "loss" in rev._repr_html_()
    rev(*args)
    out = rev._repr_html_()
    assert out.lstrip().startswith("<")
    assert "loss_forward" in out and "loss_backward" in out
    text = html.unescape(re.sub(r"<[^>]+>", "", out))
    for line in rev.source.splitlines():
        assert line in text
    try:
        import pygments  # noqa: F401
    except ImportError:
        return
    assert "<span" in out  # syntax-highlighted


def test_repr_does_not_raise_before_a_call(tmp_path, monkeypatch):
    _, f, _ = load(tmp_path, "design_example", monkeypatch)
    rev = astad.reverse(f)
    assert "f" in repr(rev)
    rev._repr_markdown_()
    rev._repr_html_()


DETERMINISM = """\
import importlib.util, sys
import numpy as np
import astad
spec = importlib.util.spec_from_file_location("det_mod", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
sys.modules["det_mod"] = mod
spec.loader.exec_module(mod)
for name, args in zip(sys.argv[2::2], sys.argv[3::2]):
    rev = astad.reverse(getattr(mod, name))
    rev(*eval(args, {"np": np}))
    sys.stdout.write("=" * 20 + "\\n")  # (before each function's output)
    sys.stdout.write(rev.source)
    for stage in astad.STAGES:
        sys.stdout.write(rev.ir(stage))
"""


def test_generated_source_is_identical_across_processes(tmp_path):
    module = tmp_path / "det_example.py"
    module.write_text(textwrap.dedent(PROGRAMS["helper_and_unused"][0]) + textwrap.dedent("""\


        def h(w, b, x):
            z = np.tanh(x @ w + b) * 2.0
            u = np.sum(z * z, axis=1)
            return np.mean(u * np.exp(-u)), z
        """))
    runner = tmp_path / "det_runner.py"
    runner.write_text(DETERMINISM)
    outputs = []
    for seed in ("1", "2"):  # (one process per seed transforms both functions)
        env = dict(os.environ, ASTAD_DISK_CACHE="0", PYTHONHASHSEED=seed,  # (this checkout's astad)
                   PYTHONPATH=os.pathsep.join(filter(None, [str(GOLDEN.parents[1]), os.environ.get("PYTHONPATH")])))
        proc = subprocess.run([sys.executable, str(runner), str(module),
                               "g", "(np.ones(3), np.ones(2), 0.5)",
                               "h", "(np.ones((4, 3)), np.ones(3), np.ones((2, 4)))"], env=env,
                              capture_output=True, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr.decode()
        _, g, h = proc.stdout.split(b"=" * 20 + b"\n")
        outputs += [g, h]
    assert outputs[0] == outputs[2]
    assert outputs[1] == outputs[3]
    assert b"def g_forward(" in outputs[0] and b"def h_backward(" in outputs[1]


# --------------------------------------------------------------------------- golden files


@pytest.mark.parametrize("key", list(PROGRAMS))
def test_golden_source(tmp_path, monkeypatch, key):
    # a fresh transformation: the in-memory cache is keyed by code-object equality, which
    # ignores the file, so it would hand back the derivative (and header) of the identical
    # function another test in this module wrote to its own tmp_path
    astad.clear_caches(memory=True, disk=False)
    _, fn, args = load(tmp_path, key, monkeypatch)
    rev = astad.reverse(fn)
    rev(*args)
    got = normalise(rev.source, tmp_path / f"{key}.py")
    assert str(tmp_path) not in got
    golden = GOLDEN / f"{key}.py"
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        golden.write_text(got)
        return
    assert golden.exists(), f"{golden} is missing: run with ASTAD_UPDATE_GOLDEN=1 to create it"
    want = golden.read_text()
    assert got == want, (f"the generated source of {key} changed; if intended, regenerate with "
                         f"ASTAD_UPDATE_GOLDEN=1\n--- golden\n{want}\n--- now\n{got}")
