"""The caches: in memory (no work the second time) and on disk (a fresh process
skips the transformation; bad, unwritable or stale entries never give a crash or
a wrong result)."""

import importlib.util
import itertools
import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import astad
import astad.pipeline
from astad import cachefiles
from conftest import known_to_inspect

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(astad.__file__)))  # this checkout, for subprocesses
_ids = itertools.count()


def load_module(tmp_path, text, monkeypatch, name=None):
    """Write ``text`` to a module in ``tmp_path`` (uniquely named unless ``name``) and import it."""
    name = name or f"astad_cache_case_{os.getpid()}_{next(_ids)}"
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, mod)
    spec.loader.exec_module(mod)
    known_to_inspect(mod)
    return mod


@pytest.fixture
def transforms(monkeypatch):
    """Counts the calls of astad.pipeline.transform (the whole transformation)."""
    calls = []
    original = astad.pipeline.transform

    def counting(*args, **kwargs):
        calls.append(args[0].name)
        return original(*args, **kwargs)

    monkeypatch.setattr(astad.pipeline, "transform", counting)
    return calls


def entries(d):
    """The entries astad wrote in cache directory ``d``."""
    return sorted(p for p in (d / cachefiles.SUBDIR).glob("*.json") if cachefiles.ENTRY.match(p.name))


def forget_in_memory():
    """As if in a fresh process, as far as astad's caches go."""
    astad.clear_caches(memory=True, disk=False)


LOSS = """\
    import numpy as np

    W = -1.5


    def loss(x):
        h = np.tanh(x * W)
        return np.sum(h * h)
    """


def expected(x):
    w = -1.5
    h = np.tanh(x * w)
    return np.sum(h * h), 2 * h * (1 - h * h) * w


X = np.array([0.3, -0.7, 1.1])


def check_loss(value, grad):
    want_value, want_grad = expected(X)
    np.testing.assert_allclose(value, want_value, rtol=1e-12)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-12)


# --------------------------------------------------------------------------- (a) memory


def test_memory_cache_second_object_does_no_work(tmp_path, monkeypatch, transforms):
    mod = load_module(tmp_path, LOSS, monkeypatch)
    first = astad.reverse(mod.loss)
    value1, pb1 = first(X)
    assert transforms == ["loss"]
    first(X)
    assert transforms == ["loss"]
    second = astad.reverse(mod.loss)  # a new object: its first call must not transform again
    value2, pb2 = second(X)
    assert transforms == ["loss"]
    assert value2 == value1
    np.testing.assert_array_equal(pb2(1.0)[0], pb1(1.0)[0])
    astad.vjp(mod.loss, X)
    assert transforms == ["loss"]
    assert second.source == first.source
    # grad may build its own derivative (only the requested cotangents), but once
    check_loss(*astad.value_and_grad(mod.loss)(X))
    n = len(transforms)
    check_loss(*astad.value_and_grad(mod.loss)(X))
    np.testing.assert_allclose(astad.grad(mod.loss)(X), expected(X)[1], rtol=1e-12)
    assert len(transforms) == n
    # a new signature is new work, once
    astad.reverse(mod.loss)(np.ones((2, 3)))
    astad.reverse(mod.loss)(np.ones((2, 3)))
    assert len(transforms) == n + 1


def test_memory_cache_is_keyed_by_dtype(tmp_path, monkeypatch, transforms):
    mod = load_module(tmp_path, LOSS, monkeypatch)
    astad.reverse(mod.loss)(X)
    astad.reverse(mod.loss)(X.astype(np.float32))
    assert transforms == ["loss", "loss"]


def test_clear_caches_forgets(tmp_path, monkeypatch, transforms):
    mod = load_module(tmp_path, LOSS, monkeypatch)
    rev = astad.reverse(mod.loss)
    rev(X)
    astad.clear_caches(memory=True, disk=False)
    check_loss(*astad.value_and_grad(rev)(X))
    assert transforms == ["loss", "loss"]


# --------------------------------------------------------------------------- disk, in process


def test_disk_hit_after_forgetting_memory(tmp_path, monkeypatch, transforms, disk_cache):
    mod = load_module(tmp_path, LOSS, monkeypatch)
    rev = astad.reverse(mod.loss)
    rev(X)
    check_loss(*astad.value_and_grad(rev)(X))
    source = rev.source
    n = len(transforms)
    assert len(entries(disk_cache)) == n
    forget_in_memory()
    rev2 = astad.reverse(mod.loss)
    value, pullback = rev2(X)
    check_loss(value, pullback(1.0)[0])
    check_loss(*astad.value_and_grad(rev2)(X))
    assert len(transforms) == n
    assert rev2.source == source
    # the stages are recomputed on demand for an entry loaded from disk
    assert "dup" in rev2.ir("structural")


def sign(cache, entry, payload):
    """Seal ``payload`` as ``entry`` with the cache's own key, as astad would."""
    secret = bytes.fromhex((cache / cachefiles.SUBDIR / cachefiles.KEY).read_text().strip())
    entry.write_bytes(cachefiles.seal(secret, entry.name, payload))


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty", "wrong json", "signed wrong json",
                                    "signed bad type", "signed non-json"])
def test_damaged_entry_is_recomputed_and_rewritten(tmp_path, monkeypatch, transforms, disk_cache, damage):
    mod = load_module(tmp_path, LOSS, monkeypatch)
    astad.grad(mod.loss)(X)
    (entry,) = entries(disk_cache)
    good = entry.read_bytes()
    data = json.loads(good.split(b"\n", 2)[2])
    if damage.startswith("signed"):
        sign(disk_cache, entry, {
            "signed wrong json": json.dumps({"format": 2, "key": 42}).encode(),
            "signed bad type": json.dumps({**data, "out_type": "Num((), 'float64')"}).encode(),
            "signed non-json": b"\x00\xff not json",
        }[damage])
    else:
        entry.write_bytes({
            "garbage": b"\x00\xff not json at all {{{",
            "truncated": good[: len(good) // 2],
            "empty": b"",
            "wrong json": json.dumps({"format": 2, "key": 42}).encode(),
        }[damage])
    forget_in_memory()
    check_loss(*astad.value_and_grad(mod.loss)(X))
    assert transforms == ["loss", "loss"]
    # rewritten, valid, and used next time
    assert entry.read_bytes() == good
    forget_in_memory()
    check_loss(*astad.value_and_grad(mod.loss)(X))
    assert transforms == ["loss", "loss"]
    assert not list((disk_cache / cachefiles.SUBDIR).glob(".tmp-*"))


def test_entry_whose_source_does_not_compile_is_recomputed(tmp_path, monkeypatch, transforms, disk_cache):
    mod = load_module(tmp_path, LOSS, monkeypatch)
    astad.grad(mod.loss)(X)
    (entry,) = entries(disk_cache)
    data = json.loads(entry.read_bytes().split(b"\n", 2)[2])
    data["source"] = data["source"].replace("def ", "df ", 1)
    sign(disk_cache, entry, json.dumps(data).encode())
    forget_in_memory()
    check_loss(*astad.value_and_grad(mod.loss)(X))
    assert transforms == ["loss", "loss"]


def test_unwritable_cache_dir(tmp_path, monkeypatch, transforms):
    monkeypatch.setenv("ASTAD_DISK_CACHE", "1")
    mod = load_module(tmp_path, LOSS, monkeypatch)
    # a directory that cannot be created, even by root: its parent is a regular file
    afile = tmp_path / "afile"
    afile.write_text("not a directory")
    monkeypatch.setenv("ASTAD_CACHE_DIR", str(afile / "cache"))
    check_loss(*astad.value_and_grad(mod.loss)(X))
    forget_in_memory()
    check_loss(*astad.value_and_grad(mod.loss)(X))
    astad.clear_caches()  # clearing an impossible directory is fine too
    assert afile.read_text() == "not a directory"
    if os.geteuid() == 0:
        return  # root writes into read-only directories: the case above stands for it
    # a read-only directory holding a valid entry: read it, do not fail to write
    ro = tmp_path / "ro"
    monkeypatch.setenv("ASTAD_CACHE_DIR", str(ro))
    forget_in_memory()
    astad.grad(mod.loss)(X)
    calls = len(transforms)
    sub = ro / cachefiles.SUBDIR
    sub.chmod(0o500)
    try:
        forget_in_memory()
        check_loss(*astad.value_and_grad(mod.loss)(X))
        assert len(transforms) == calls  # loaded
        forget_in_memory()
        astad.grad(mod.loss)(np.ones((2, 3)))  # a new entry cannot be written: no crash
        assert entries(ro) and not list(sub.glob(".tmp-*"))
    finally:
        sub.chmod(0o700)


def test_disk_cache_off_writes_nothing(tmp_path, monkeypatch, transforms):
    mod = load_module(tmp_path, LOSS, monkeypatch)
    d = tmp_path / "cache"
    monkeypatch.setenv("ASTAD_CACHE_DIR", str(d))
    for off in ("0", "false", "no", "off"):
        monkeypatch.setenv("ASTAD_DISK_CACHE", off)
        forget_in_memory()
        check_loss(*astad.value_and_grad(mod.loss)(X))
    assert not d.exists() or not any(d.iterdir())
    # the config switch too
    monkeypatch.setenv("ASTAD_DISK_CACHE", "1")
    monkeypatch.setattr(astad.config, "disk_cache", False)
    forget_in_memory()
    check_loss(*astad.value_and_grad(mod.loss)(X))
    assert not d.exists() or not any(d.iterdir())
    assert len(transforms) == 5


def test_clear_caches_disk(tmp_path, monkeypatch, transforms, disk_cache):
    mod = load_module(tmp_path, LOSS, monkeypatch)
    astad.grad(mod.loss)(X)
    assert entries(disk_cache)
    astad.clear_caches(memory=True, disk=True)
    assert not entries(disk_cache)
    check_loss(*astad.value_and_grad(mod.loss)(X))
    assert len(transforms) == 2


# --------------------------------------------------------------------------- (g) in process: globals change


HELPERS = """\
    import numpy as np

    C = 2.5


    def helper(x):
        return np.sin(x)


    def other_helper(x):
        return np.cos(x) * 3.0


    def f(x):
        return np.sum(helper(x) * C)
    """


@pytest.mark.parametrize("disk", [False, True], ids=["memory only", "with disk cache"])
def test_rebinding_globals_in_process(tmp_path, monkeypatch, disk):
    if disk:
        monkeypatch.setenv("ASTAD_DISK_CACHE", "1")
        monkeypatch.setenv("ASTAD_CACHE_DIR", str(tmp_path / "cache"))
    mod = load_module(tmp_path, HELPERS, monkeypatch)
    x = np.array([0.1, 0.2, 0.3])
    rev = astad.reverse(mod.f)

    def check(h, dh, c):
        value, pb = rev(x)
        np.testing.assert_allclose(value, np.sum(h(x) * c), rtol=1e-12)
        np.testing.assert_allclose(pb(1.0)[0], dh(x) * c, rtol=1e-12)
        _, grad = astad.value_and_grad(mod.f)(x)
        np.testing.assert_allclose(grad, dh(x) * c, rtol=1e-12)

    check(np.sin, np.cos, mod.C)
    mod.helper = mod.other_helper  # redefine the helper
    check(lambda v: 3.0 * np.cos(v), lambda v: -3.0 * np.sin(v), mod.C)
    mod.C = -0.75  # rebind a constant, same type
    check(lambda v: 3.0 * np.cos(v), lambda v: -3.0 * np.sin(v), mod.C)
    mod.C = 4  # another type
    check(lambda v: 3.0 * np.cos(v), lambda v: -3.0 * np.sin(v), mod.C)
    mod.helper = mod.other_helper  # the same again: nothing changes
    check(lambda v: 3.0 * np.cos(v), lambda v: -3.0 * np.sin(v), mod.C)


# --------------------------------------------------------------------------- fresh processes


RUNNER = """\
import importlib.util, json, sys
import numpy as np
import astad, astad.pipeline

calls = []
_original = astad.pipeline.transform


def counting(*args, **kwargs):
    calls.append(1)
    return _original(*args, **kwargs)


astad.pipeline.transform = counting
path, name = sys.argv[1], sys.argv[2]
spec = importlib.util.spec_from_file_location("astad_cached_module", path)
mod = importlib.util.module_from_spec(spec)
sys.modules["astad_cached_module"] = mod
spec.loader.exec_module(mod)
fn = getattr(mod, name)
x = np.array([0.3, -0.7, 1.1])
rev = astad.reverse(fn)
value, pullback = rev(x)
grad = pullback(1.0)[0]
value2, grad2 = astad.value_and_grad(rev)(x)
assert value2 == value and np.allclose(grad2, grad, rtol=1e-12, atol=0)
eps = 1e-6
fd = [float((fn(x + eps * e) - fn(x - eps * e)) / (2 * eps)) for e in np.eye(3)]
print(json.dumps({"transforms": len(calls), "value": float(value), "plain": float(fn(x)),
                  "grad": np.asarray(grad).tolist(), "fd": fd, "source": rev.source}))
"""


def run_fresh(tmp_path, module_path, name, cache_dir, disk="1"):
    runner = tmp_path / "cache_runner.py"
    if not runner.exists():
        runner.write_text(RUNNER)
    env = dict(os.environ, ASTAD_DISK_CACHE=disk, ASTAD_CACHE_DIR=str(cache_dir), PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, str(runner), str(module_path), name], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["value"] == out["plain"]
    np.testing.assert_allclose(out["grad"], out["fd"], rtol=1e-6, atol=1e-8)
    return out


def test_disk_hit_in_a_fresh_process(tmp_path):
    module = tmp_path / "fresh_loss.py"
    module.write_text(textwrap.dedent(LOSS))
    cache = tmp_path / "cache"
    first = run_fresh(tmp_path, module, "loss", cache)
    assert first["transforms"] >= 1
    assert len(entries(cache)) == first["transforms"]
    second = run_fresh(tmp_path, module, "loss", cache)
    assert second["transforms"] == 0  # loaded from disk, not transformed
    assert second["value"] == first["value"]
    assert second["grad"] == first["grad"]
    assert second["source"] == first["source"]
    check_loss(second["value"], second["grad"])


EDIT_BASE = """\
    import numpy as np

    W = 0.5


    def helper(v):
        return np.sin(v)


    def f(x):
        y = helper(x * W)
        return np.sum(y * y)
    """

EDITS = {
    # the function's own body
    "body": ("return np.sum(y * y)", "return np.sum(y * y * y)"),
    # only a helper it calls
    "helper": ("return np.sin(v)", "return np.cos(v)"),
    # a module-level constant's type (same function source)
    "constant type": ("W = 0.5", "W = 3"),
    # a module-level constant's value only
    "constant value": ("W = 0.5", "W = -1.25"),
}


@pytest.fixture(scope="module")
def unedited(tmp_path_factory):
    """A module written from EDIT_BASE and its disk cache after two fresh processes: the first
    transforms, the second loads every entry (valid before any edit); a copy of the cache is kept,
    for each edit to start from (the same file and cache path: entries are keyed by the file)."""
    where = tmp_path_factory.mktemp("edited")
    module, cache = where / "edited_module.py", where / "cache"
    module.write_text(textwrap.dedent(EDIT_BASE))
    first = run_fresh(where, module, "f", cache)
    assert first["transforms"] >= 1
    again = run_fresh(where, module, "f", cache)
    assert again["transforms"] == 0  # the entry is valid before the edit
    shutil.copytree(cache, where / "cache before the edit", symlinks=True)
    return where, first


@pytest.mark.parametrize("edit", list(EDITS))
def test_editing_the_source_is_not_stale(unedited, edit):
    where, first = unedited
    module, cache = where / "edited_module.py", where / "cache"
    shutil.rmtree(cache)  # the state after the two processes of `unedited`, whatever an edit before did
    shutil.copytree(where / "cache before the edit", cache, symlinks=True)
    module.write_text(textwrap.dedent(EDIT_BASE))
    old, new = EDITS[edit]
    text = module.read_text()
    assert old in text
    module.write_text(text.replace(old, new))
    after = run_fresh(where, module, "f", cache)  # value == plain function, grad == FD
    assert after["value"] != first["value"]
    if edit != "constant value":
        assert after["transforms"] == first["transforms"]
    reused = run_fresh(where, module, "f", cache)
    assert reused["transforms"] == 0
    assert reused["value"] == after["value"]


def test_disk_cache_off_in_a_fresh_process(tmp_path):
    module = tmp_path / "off_module.py"
    module.write_text(textwrap.dedent(LOSS))
    cache = tmp_path / "cache"
    out = run_fresh(tmp_path, module, "loss", cache, disk="0")
    assert out["transforms"] >= 1
    assert not cache.exists() or not any(cache.iterdir())


def test_array_constant_is_read_and_rebinding_it_is_seen(tmp_path, monkeypatch):
    mod = load_module(tmp_path, """
        import numpy as np
        W = np.array([1.0, 2.0, 3.0])

        def f(x):
            return np.sum(x * W)
    """, monkeypatch)
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(astad.grad(mod.f)(x), mod.W)
    mod.W = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, 0.0]])  # a new constant of another shape
    np.testing.assert_allclose(astad.grad(mod.f)(x), mod.W.sum(axis=0))


def test_identical_functions_in_two_files_keep_their_own_source(tmp_path, monkeypatch):
    text = """
        import numpy as np

        def f(x):
            return np.sin(x)
    """
    a = load_module(tmp_path, text, monkeypatch)
    b = load_module(tmp_path, text, monkeypatch)
    astad.reverse(a.f)(1.0)
    rb = astad.reverse(b.f)
    rb(1.0)
    assert b.__file__ in rb.source and a.__file__ not in rb.source


def test_moving_a_function_in_its_file_refreshes_line_numbers(tmp_path, disk_cache):
    path = tmp_path / "moved_mod.py"
    body = "import numpy as np\n\ndef f(x):\n    return np.sin(x) * x\n"
    script = ("import sys; sys.path.insert(0, %r); import astad, moved_mod; r = astad.reverse(moved_mod.f); "
              "r(1.0); print(r.source)" % str(tmp_path))
    env = {**os.environ, "ASTAD_DISK_CACHE": "1", "ASTAD_CACHE_DIR": str(disk_cache),
           "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
    path.write_text(body)
    first = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True).stdout
    assert "moved_mod.py:3." in first
    path.write_text("# a new first line\n" + body)
    second = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True).stdout
    assert "moved_mod.py:4." in second and "# line 5:" in second
