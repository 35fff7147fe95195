"""Generated code does not depend on the hash seed: the reverse and forward source
of random programs (the generators of test_random_programs and
test_random_control_flow, a fixed derandomized sample) is the same in two
processes with different ``PYTHONHASHSEED`` (the order of a set of names or keys
follows the seed: any choice of order or name made from it would differ)."""

import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings

import test_random_control_flow
import test_random_programs

ROOT = Path(__file__).resolve().parents[1]

#: run in each process: every program's generated reverse and forward source (or its refusal)
SCRIPT = """
import importlib.util, os, pickle, sys
os.environ["ASTAD_DISK_CACHE"] = "0"
import astad
from astad import api
from astad.api_forward import forward_of
for path, args in pickle.load(open(sys.argv[1], "rb")):
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for mode, make in (("reverse", api.Reverse), ("forward", forward_of)):
        print("=" * 20, path, mode)
        try:
            print(make(module.f).derivative(args).source)
        except astad.AstadError as e:
            print("refused:", type(e).__name__)
"""


def _collect(strategy, n):
    found = []

    @settings(max_examples=n, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(program):
        found.append(program)

    collect()
    return found[:n]


def _programs(directory):
    out = []
    for i, (source, params, seed) in enumerate(_collect(test_random_programs.programs(), int(os.environ.get("HASH_SEED_PLAIN", 12)))):
        path = directory / f"hash_seed_plain_{i}.py"
        path.write_text(source)
        out.append((str(path), test_random_programs._arguments(params, seed)))
    for i, (source, _, params, dynamic, seed) in enumerate(_collect(test_random_control_flow.programs(), int(os.environ.get("HASH_SEED_FLOW", 8)))):
        path = directory / f"hash_seed_flow_{i}.py"
        path.write_text(source)
        args = test_random_programs._arguments(params, seed)
        if dynamic:
            args[-1] = np.int64(args[-1])
        out.append((str(path), args))
    return out


def _generated(listing, *hash_seeds):
    """What SCRIPT prints, in one process per hash seed (run at the same time, each writing to a file:
    a full pipe would stop one while the other is read)."""
    procs, outs = [], []
    try:
        for seed in hash_seeds:
            env = dict(os.environ, PYTHONHASHSEED=str(seed), PYTHONPATH=str(ROOT), ASTAD_DISK_CACHE="0")
            out = listing.with_name(f"hash_seed_{seed}.out")
            with open(out, "w") as stdout:
                procs.append((subprocess.Popen([sys.executable, "-c", SCRIPT, str(listing)], env=env, stdout=stdout,
                                               stderr=subprocess.PIPE, text=True), out))
        for proc, out in procs:
            _, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err[-3000:]
            outs.append(out.read_text())
    finally:
        for proc, _ in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return outs


def test_generated_code_independent_of_hash_seed(tmp_path):
    listing = tmp_path / "programs.pkl"
    listing.write_bytes(pickle.dumps(_programs(tmp_path)))
    first, second = _generated(listing, 1, 2)
    assert first.count("refused:") < first.count("=" * 20) // 2  # (most programs make code)
    if first != second:
        a, b = first.split("=" * 20), second.split("=" * 20)
        diff = next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)
        assert a[diff] == b[diff]
    assert first == second
