"""Every script in examples/ runs to the end (each asserts its own results:
convergence, agreement with finite differences) and prints what it promises."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted((ROOT / "examples").glob("*.py"))


def test_there_are_examples():
    assert {p.name for p in SCRIPTS} >= {"mlp.py", "newton_hessian.py", "implicit_euler_jacobian.py"}


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_example_runs(script):
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env=dict(os.environ, ASTAD_DISK_CACHE="0",
                                   PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert proc.stdout.strip()
