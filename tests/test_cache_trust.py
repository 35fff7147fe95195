"""The disk cache's trust model: only entries this user sealed with their own
key, in directories only they can write, are compiled; everything else is
ignored (recomputed), planted code never runs; clearing and eviction delete
only astad's own files.

The oracle for "planted code did not run" is a marker file the planted code
would write; each planted entry has a control: the same entry sealed with the
user's real key does run (so the plant is well formed and only the check
stops it)."""

import json
import os
import secrets
import stat
import subprocess
import sys
import textwrap
import threading
import time
import warnings

import numpy as np
import pytest

import astad
from astad import cachefiles
from test_cache import (LOSS, ROOT, RUNNER, X, check_loss, entries,  # noqa: F401 - fixtures
                        forget_in_memory, load_module, transforms)

FOREIGN_UID = 54321


def sub(cache):
    return cache / cachefiles.SUBDIR


def key_file(cache):
    return sub(cache) / cachefiles.KEY


def real_key(cache):
    return bytes.fromhex(key_file(cache).read_text())


def payload_of(entry):
    return json.loads(entry.read_bytes().split(b"\n", 2)[2])


def mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def cached(tmp_path, monkeypatch, transforms, disk_cache):
    """A module whose derivative is in the disk cache (one entry), forgotten in memory."""
    mod = load_module(tmp_path, LOSS, monkeypatch)
    astad.grad(mod.loss)(X)
    forget_in_memory()
    assert transforms == ["loss"]
    return mod


def planted(entry, marker):
    """The entry's payload with its source replaced by code that writes ``marker``
    and returns a wrong value and gradient."""
    data = payload_of(entry)
    data["source"] = textwrap.dedent(f"""\
        open({str(marker)!r}, "w").write("planted code ran")


        def loss_forward(x):
            return 42.0, None


        def loss_backward(residuals, ct):
            return (0.0 * {X.tolist()!r}[0],)
        """)
    return json.dumps(data).encode()


def loads_cleanly(mod, transforms, n):
    """The derivative is right and was transformed ``n`` times in all."""
    check_loss(*astad.value_and_grad(mod.loss)(X))
    assert len(transforms) == n


def test_control_a_planted_entry_sealed_with_the_users_key_runs(tmp_path, cached, transforms, disk_cache):
    (entry,) = entries(disk_cache)
    marker = tmp_path / "marker"
    entry.write_bytes(cachefiles.seal(real_key(disk_cache), entry.name, planted(entry, marker)))
    value, _ = astad.value_and_grad(cached.loss)(X)
    assert marker.exists() and value == 42.0 and transforms == ["loss"]


SEALS = {
    "no seal (the old format)": lambda key, name, payload: payload,
    "garbage seal": lambda key, name, payload: cachefiles.MAGIC + b"0" * 64 + b"\n" + payload,
    "another key": lambda key, name, payload: cachefiles.seal(secrets.token_bytes(32), name, payload),
    "the user's key, another entry's name": lambda key, name, payload: cachefiles.seal(key, "f-" + "0" * 32 + ".json",
                                                                                       payload),
    "the user's key, payload appended": lambda key, name, payload: cachefiles.seal(key, name, b"{}")[:-2] + payload,
}


@pytest.mark.parametrize("how", list(SEALS))
def test_planted_entry_without_a_valid_seal_does_not_run(tmp_path, cached, transforms, disk_cache, how):
    (entry,) = entries(disk_cache)
    marker = tmp_path / "marker"
    entry.write_bytes(SEALS[how](real_key(disk_cache), entry.name, planted(entry, marker)))
    loads_cleanly(cached, transforms, 2)
    assert not marker.exists()
    # the planted file was replaced by a valid entry: the next fresh start loads it
    assert payload_of(entry)["source"] != json.loads(planted(entry, marker))["source"]
    forget_in_memory()
    loads_cleanly(cached, transforms, 2)
    assert not marker.exists()


@pytest.mark.parametrize("where", ["cache directory", "astad's subdirectory"])
@pytest.mark.parametrize("perm", [0o777, 0o770, 0o702, 0o1777])
def test_directory_writable_by_others_is_refused(tmp_path, cached, transforms, disk_cache, where, perm):
    """Even a planted entry sealed with the user's real key is not read from a
    directory others can write (they could have replaced the key too)."""
    (entry,) = entries(disk_cache)
    marker = tmp_path / "marker"
    entry.write_bytes(cachefiles.seal(real_key(disk_cache), entry.name, planted(entry, marker)))
    target = disk_cache if where == "cache directory" else sub(disk_cache)
    target.chmod(perm)
    before = sorted(p.name for p in sub(disk_cache).iterdir())
    with pytest.warns(cachefiles.CacheWarning, match="writable by"):
        loads_cleanly(cached, transforms, 2)
    assert not marker.exists()
    assert sorted(p.name for p in sub(disk_cache).iterdir()) == before  # nothing written there either
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one warning per directory and process
        forget_in_memory()
        loads_cleanly(cached, transforms, 3)
    target.chmod(0o700)
    forget_in_memory()
    value, _ = astad.value_and_grad(cached.loss)(X)  # private again: the entry (untouched) is read, which shows
    assert marker.exists() and value == 42.0 and len(transforms) == 3  # the refusal was the directory check's


def foreign(path):
    """Give ``path`` to another user (needs root; else the test is skipped)."""
    if os.geteuid() != 0:
        pytest.skip("changing a file's owner needs root; test_directory_of_another_user covers the check")
    os.chown(path, FOREIGN_UID, -1, follow_symlinks=False)


@pytest.mark.parametrize("what", ["cache directory", "astad's subdirectory", "entry"])
def test_files_of_another_user_are_refused(tmp_path, cached, transforms, disk_cache, what):
    (entry,) = entries(disk_cache)
    marker = tmp_path / "marker"
    entry.write_bytes(cachefiles.seal(real_key(disk_cache), entry.name, planted(entry, marker)))
    foreign({"cache directory": disk_cache, "astad's subdirectory": sub(disk_cache), "entry": entry}[what])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loads_cleanly(cached, transforms, 2)
    assert not marker.exists()
    if what != "entry":
        assert any(issubclass(w.category, cachefiles.CacheWarning) and "owned by uid 54321" in str(w.message)
                   for w in caught)
    else:  # the foreign entry was replaced by one of the user's own
        assert os.lstat(entry).st_uid == os.geteuid()


def test_directory_of_another_user(tmp_path, cached, transforms, disk_cache, monkeypatch):
    """As another user (simulated): the victim's directory is not theirs: not used."""
    monkeypatch.setattr(os, "geteuid", lambda: os.stat(disk_cache).st_uid + 1)
    before = {p: p.read_bytes() for p in sub(disk_cache).iterdir()}
    with pytest.warns(cachefiles.CacheWarning, match="not by the current user"):
        loads_cleanly(cached, transforms, 2)
    assert {p: p.read_bytes() for p in sub(disk_cache).iterdir()} == before


def test_entry_writable_by_others_is_refused(tmp_path, cached, transforms, disk_cache):
    (entry,) = entries(disk_cache)
    marker = tmp_path / "marker"
    entry.write_bytes(cachefiles.seal(real_key(disk_cache), entry.name, planted(entry, marker)))
    entry.chmod(0o622)
    loads_cleanly(cached, transforms, 2)
    assert not marker.exists()
    assert mode(entry) == 0o600  # replaced by the user's own entry


def test_symlinked_entry_is_not_followed(tmp_path, cached, transforms, disk_cache):
    (entry,) = entries(disk_cache)
    marker = tmp_path / "marker"
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_bytes(cachefiles.seal(real_key(disk_cache), entry.name, planted(entry, marker)))
    elsewhere.chmod(0o600)
    entry.unlink()
    entry.symlink_to(elsewhere)
    loads_cleanly(cached, transforms, 2)
    assert not marker.exists()
    assert not entry.is_symlink() and entry.is_file()
    assert json.loads(elsewhere.read_bytes().split(b"\n", 2)[2])["source"].startswith("open(")  # untouched


def test_symlinked_subdirectory_is_refused(tmp_path, cached, transforms, disk_cache):
    real = tmp_path / "real_subdir"
    sub(disk_cache).rename(real)
    sub(disk_cache).symlink_to(real)
    with pytest.warns(cachefiles.CacheWarning, match="symbolic link"):
        loads_cleanly(cached, transforms, 2)
    assert sub(disk_cache).is_symlink() and len(list(real.glob("*.json"))) == 1


def test_symlinked_key_is_replaced_not_followed(tmp_path, cached, transforms, disk_cache):
    """A key that is a link to a file someone else knows: entries sealed with
    it are not trusted, and the link is replaced by a key of the user's own."""
    (entry,) = entries(disk_cache)
    marker = tmp_path / "marker"
    known = secrets.token_bytes(32)
    theirs = tmp_path / "their_key"
    theirs.write_text(known.hex() + "\n")
    theirs.chmod(0o600)
    key_file(disk_cache).unlink()
    key_file(disk_cache).symlink_to(theirs)
    entry.write_bytes(cachefiles.seal(known, entry.name, planted(entry, marker)))
    loads_cleanly(cached, transforms, 2)
    assert not marker.exists()
    assert not key_file(disk_cache).is_symlink() and real_key(disk_cache) != known
    assert theirs.read_text() == known.hex() + "\n"


@pytest.mark.parametrize("damage", ["missing", "truncated", "not hex", "readable by others", "writable by group",
                                    "another user's", "a directory"])
def test_bad_key_is_regenerated_and_old_entries_recomputed(tmp_path, cached, transforms, disk_cache, damage):
    key = key_file(disk_cache)
    old = key.read_bytes()
    if damage == "missing":
        key.unlink()
    elif damage == "truncated":
        key.write_bytes(old[:20])
    elif damage == "not hex":
        key.write_bytes(b"z" * 64 + b"\n")
    elif damage == "readable by others":
        key.chmod(0o644)
    elif damage == "writable by group":
        key.chmod(0o620)
    elif damage == "another user's":
        foreign(key)
    else:
        key.unlink()
        key.mkdir()
    loads_cleanly(cached, transforms, 2)  # the entry cannot be trusted with that key: recomputed
    if damage == "a directory":  # not replaceable by a file: no disk cache, no crash
        return
    assert key.is_file() and not key.is_symlink() and mode(key) == 0o600 and key.read_bytes() != old
    assert os.lstat(key).st_uid == os.geteuid() and len(key.read_bytes()) == 65
    forget_in_memory()
    loads_cleanly(cached, transforms, 2)  # the rewritten entry is sealed with the new key


def _grad_under_umask_000(tmp_path, cache, monkeypatch):
    """A gradient with the disk cache at ``cache``, under umask 000; the module it came from."""
    monkeypatch.setenv("ASTAD_DISK_CACHE", "1")
    monkeypatch.setenv("ASTAD_CACHE_DIR", str(cache))
    mod = load_module(tmp_path, LOSS, monkeypatch)
    old = os.umask(0)
    try:
        astad.grad(mod.loss)(X)
    finally:
        os.umask(old)
    return mod


def test_umask_000_still_makes_private_files(tmp_path, monkeypatch, transforms):
    cache = tmp_path / "fresh" / "cache"
    mod = _grad_under_umask_000(tmp_path, cache, monkeypatch)
    (entry,) = entries(cache)
    assert mode(cache) == 0o700 and mode(sub(cache)) == 0o700
    assert mode(key_file(cache)) == 0o600 and mode(entry) == 0o600
    forget_in_memory()
    loads_cleanly(mod, transforms, 1)


def test_no_eval_of_cached_text(tmp_path, cached, transforms, disk_cache, monkeypatch):
    """Loading an entry evaluates no text: the output type is JSON data."""
    import builtins

    def no_eval(*args, **kwargs):
        raise AssertionError("eval called while loading a cache entry")

    monkeypatch.setattr(builtins, "eval", no_eval)
    loads_cleanly(cached, transforms, 1)


# --------------------------------------------------------------------------- the constants a backward unpacks

HELD = """\
    import numpy as np

    W = np.array([-1.5, 0.5, 2.0])


    def loss(x):
        h = np.tanh(x * W)
        return np.sum(h * h)
    """


def held_value_and_grad(x):
    w = np.array([-1.5, 0.5, 2.0])
    h = np.tanh(x * w)
    return np.sum(h * h), 2 * h * (1 - h * h) * w


def plant_held(tmp_path, monkeypatch, disk_cache, held, constants, name):
    """The module HELD with its entry sealed with the user's key, saying ``held`` and ``constants``,
    its backward binding ``name`` (reading only what generated code may) and returning a zero gradient."""
    mod = load_module(tmp_path, HELD, monkeypatch)
    astad.grad(mod.loss)(X)
    (entry,) = entries(disk_cache)
    data = payload_of(entry)
    assert data["held"] == ["W"] and "W" in data["constants"]  # the derivative's own list
    data["held"] = held
    data["constants"] = {**data["constants"], **constants}
    source = data["source"].replace("= residuals\n", f"= residuals\n    {name} = W\n", 1)
    data["source"] = source.replace("return x_ct,", "return 0.0 * x_ct,")
    assert f"    {name} = W\n" in data["source"] and "return 0.0 * x_ct," in data["source"]
    entry.write_bytes(cachefiles.seal(real_key(disk_cache), entry.name, json.dumps(data).encode()))
    forget_in_memory()
    return mod


# each: what an entry sealed with the user's key says; its backward binds the second name held (a local
# shadowing numpy, a helper or a builtin, which check_generated refuses without the list; the residuals'
# parameter or a temporary, which it allows): a list naming anything but a constant the code reads is
# refused, and the entry recomputed
HELD_PLANTS = {
    "numpy's name": (["W", "np"], {}),
    "a helper's name": (["W", "sum_to_shape"], {}),
    "a builtin's name": (["W", "len"], {}),
    "the residuals' name": (["W", "residuals"], {}),
    "a name not a constant": (["W", "t9"], {}),
    "numpy's name as a constant": (["W", "np"], {"np": ["np"]}),
}


@pytest.mark.parametrize("what", list(HELD_PLANTS))
def test_held_list_of_an_entry_lets_a_backward_bind_only_its_constants(tmp_path, monkeypatch, transforms, disk_cache,
                                                                       what):
    held, constants = HELD_PLANTS[what]
    mod = plant_held(tmp_path, monkeypatch, disk_cache, held, constants, held[1])
    value, grad = astad.value_and_grad(mod.loss)(X)
    want_value, want_grad = held_value_and_grad(X)
    np.testing.assert_allclose(value, want_value, rtol=1e-12)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-12)
    assert len(transforms) == 2


def test_held_list_of_an_entry_control(tmp_path, monkeypatch, transforms, disk_cache):
    """The same edit binding the held constant's own name runs (the refusals above are the check's)."""
    mod = plant_held(tmp_path, monkeypatch, disk_cache, ["W"], {}, "W")
    value, grad = astad.value_and_grad(mod.loss)(X)
    assert len(transforms) == 1 and not np.any(grad)


# --------------------------------------------------------------------------- clearing and eviction


def plant_foreign_files(cache):
    files = {
        cache / "notes.json": b'{"mine": true}',
        cache / "loss-0123456789abcdef0123456789abcdef.json": b"an old-style name, not in astad's directory",
        cache / "other" / "x.json": b"[]",
        sub(cache) / "README.json": b"not an entry name",
        sub(cache) / "loss-NOTHEX.json": b"not an entry name either",
    }
    for path, data in files.items():
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
    return files


def test_clear_caches_deletes_only_astads_entries(tmp_path, cached, transforms, disk_cache):
    astad.grad(cached.loss)(np.ones((2, 2)))
    assert len(entries(disk_cache)) == 2
    (sub(disk_cache) / ".tmp-0123456789abcdef").write_bytes(b"a crashed writer's temporary file")
    files = plant_foreign_files(disk_cache)
    astad.clear_caches()
    assert not entries(disk_cache) and not list(sub(disk_cache).glob(".tmp-*"))
    assert {p: p.read_bytes() for p in files} == files
    assert key_file(disk_cache).exists()
    loads_cleanly(cached, transforms, 3)


def test_clear_caches_in_a_foreign_directory_deletes_nothing(tmp_path, cached, transforms, disk_cache, monkeypatch):
    before = sorted(p.name for p in sub(disk_cache).iterdir())
    monkeypatch.setattr(os, "geteuid", lambda: os.stat(disk_cache).st_uid + 1)
    with pytest.warns(cachefiles.CacheWarning):
        astad.clear_caches()
    assert sorted(p.name for p in sub(disk_cache).iterdir()) == before


def test_eviction_keeps_the_most_recently_used(tmp_path, cached, transforms, disk_cache, monkeypatch):
    monkeypatch.setattr(astad.config, "disk_cache_max_entries", 3)
    files = plant_foreign_files(disk_cache)
    for n in (1, 2):  # with X's (3,): three entries, (3,) the oldest
        time.sleep(0.02)
        astad.grad(cached.loss)(np.ones(n))
    assert len(entries(disk_cache)) == 3
    time.sleep(0.02)
    forget_in_memory()
    loads_cleanly(cached, transforms, 3)  # the oldest entry is used: now the most recent
    time.sleep(0.02)
    astad.grad(cached.loss)(np.ones(4))  # a fourth: the least recently used, (1,), goes
    assert len(entries(disk_cache)) == 3
    forget_in_memory()
    for n, hit in [(3, True), (2, True), (4, True), (1, False)]:
        before = len(transforms)
        astad.grad(cached.loss)(np.ones(n))
        assert len(transforms) == before + (not hit), n
    assert {p: p.read_bytes() for p in files} == files


def test_eviction_by_size(tmp_path, cached, transforms, disk_cache, monkeypatch):
    (entry,) = entries(disk_cache)
    size = entry.stat().st_size
    monkeypatch.setattr(astad.config, "disk_cache_max_bytes", int(2.5 * size))
    for n in range(2, 7):
        astad.grad(cached.loss)(np.ones(n))
        total = sum(e.stat().st_size for e in entries(disk_cache))
        assert total <= 2.5 * size and len(entries(disk_cache)) >= 1


# --------------------------------------------------------------------------- concurrency


def test_threads_creating_the_key_agree(tmp_path):
    base = tmp_path / "cache"
    found = []

    def make():
        with cachefiles.private_dir(base, create=True) as dfd:
            found.append(cachefiles.key(dfd, create=True))

    threads = [threading.Thread(target=make) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(found) == 8 and len(set(found)) == 1 and found[0] == real_key(base)
    assert [p.name for p in sub(base).iterdir()] == [cachefiles.KEY]  # no temporary file left


def test_concurrent_fresh_processes_share_one_cache(tmp_path, monkeypatch, transforms):
    """Two processes start on an empty cache at once: one key, valid entries,
    which this process then loads without transforming."""
    import importlib.util

    module = tmp_path / "concurrent_loss.py"
    module.write_text(textwrap.dedent(LOSS))
    runner = tmp_path / "cache_runner.py"
    runner.write_text(RUNNER)
    cache = tmp_path / "cache"
    env = dict(os.environ, ASTAD_DISK_CACHE="1", ASTAD_CACHE_DIR=str(cache), PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    cmd = [sys.executable, str(runner), str(module), "loss"]
    procs = [subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e for _, e in outs]
    results = [json.loads(o.strip().splitlines()[-1]) for o, _ in outs]
    assert len({r["source"] for r in results}) == 1
    assert [p.name for p in sub(cache).iterdir() if not p.name.endswith(".json")] == [cachefiles.KEY]
    monkeypatch.setenv("ASTAD_DISK_CACHE", "1")
    monkeypatch.setenv("ASTAD_CACHE_DIR", str(cache))
    spec = importlib.util.spec_from_file_location("concurrent_loss", module)
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "concurrent_loss", mod)
    spec.loader.exec_module(mod)
    value, pullback = astad.reverse(mod.loss)(X)
    check_loss(value, pullback(1.0)[0])
    loads_cleanly(mod, transforms, 0)
    assert astad.reverse(mod.loss).source == results[0]["source"]


def test_missing_parents_are_created_private(tmp_path, monkeypatch, transforms):
    cache = tmp_path / "a" / "b" / "cache"
    _grad_under_umask_000(tmp_path, cache, monkeypatch)
    assert [mode(p) for p in (tmp_path / "a", tmp_path / "a" / "b", cache)] == [0o700] * 3


@pytest.mark.parametrize("name", ["f", "ﬁ", "a·b", "x" * 300, "_1"])
def test_entry_names_are_astads_own(name):
    assert cachefiles.ENTRY.match(cachefiles.entry_name(name, "0123456789abcdef" * 4))
