"""``astad show-derivative``: the generated code from the shell (in this process, but for the
tests that run the console script and ``python -m astad.cli`` as a subprocess)."""

import contextlib
import io
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

MODULE = """\
import numpy as np


def loss(w, x):
    h = np.tanh(x @ w)
    return np.sum(h * h)


def annotated(x: float, n: int):
    return x * x * n


def half_annotated(x: float, y):
    return x * y
"""


@pytest.fixture
def workdir(tmp_path):
    (tmp_path / "cli_target_mod.py").write_text(MODULE)
    return tmp_path


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # this checkout's astad, in subprocesses too


def run(workdir, *args, command=None):
    """The command in ``workdir``: ``astad.cli.main`` in this process (the modules it
    imports and its changes to sys.path undone after), or ``command`` as a subprocess."""
    if command is None:
        return _in_process(workdir, args)
    env = dict(os.environ, ASTAD_DISK_CACHE="0", PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([*command, *args], cwd=workdir, env=env, capture_output=True, text=True, timeout=120,
                          check=False)


def _in_process(workdir, args):
    from astad import cli

    path, modules, cwd, disk = list(sys.path), set(sys.modules), os.getcwd(), os.environ.get("ASTAD_DISK_CACHE")
    out, err = io.StringIO(), io.StringIO()
    os.environ["ASTAD_DISK_CACHE"] = "0"
    os.chdir(workdir)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = cli.main(list(args))
            except SystemExit as e:  # argparse's usage errors
                status = e.code
    finally:
        os.chdir(cwd)
        sys.path[:] = path
        for name in set(sys.modules) - modules:  # the user's modules, read from the tests' temporary directories
            if str(getattr(sys.modules[name], "__file__", None) or "").startswith(tempfile.gettempdir()):
                del sys.modules[name]
        if disk is None:
            del os.environ["ASTAD_DISK_CACHE"]
        else:
            os.environ["ASTAD_DISK_CACHE"] = disk
    return subprocess.CompletedProcess(args, status, out.getvalue(), err.getvalue())


def check_source(out, name):
    compile(out, f"<show-derivative {name}>", "exec")
    ns = {}
    exec(out, ns)  # noqa: S102 - the generated code defines two functions, nothing else runs
    assert callable(ns[f"{name}_forward"]) and callable(ns[f"{name}_backward"])
    assert f"def {name}_forward(" in out and f"def {name}_backward(" in out


def check_failure(proc):
    assert proc.returncode != 0
    assert proc.stdout == ""
    lines = proc.stderr.strip("\n").splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("astad: ") and len(lines[0]) > len("astad: ")
    assert "Traceback" not in proc.stderr


def test_module_target(workdir):
    proc = run(workdir, "show-derivative", "cli_target_mod:loss", "--arg", "f64[3,4]", "--arg", "f64[2,3]")
    assert proc.returncode == 0, proc.stderr
    check_source(proc.stdout, "loss")
    assert "f64[3,4]" in proc.stdout and "f64[2,3]" in proc.stdout  # the signature in the header


def test_file_target(workdir):
    for target in ("cli_target_mod.py:loss", "./cli_target_mod.py:loss", f"{workdir}/cli_target_mod.py:loss"):
        proc = run(workdir, "show-derivative", target, "--arg", "f32[5,2]", "--arg", "f32[3,5]")
        assert proc.returncode == 0, proc.stderr
        check_source(proc.stdout, "loss")


def test_file_target_from_another_directory(workdir, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    proc = run(elsewhere, "show-derivative", f"{workdir / 'cli_target_mod.py'}:loss", "--arg", "f64[3,4]",
               "--arg", "f64[2,3]")
    assert proc.returncode == 0, proc.stderr
    check_source(proc.stdout, "loss")


def test_annotated_parameters_need_no_arg(workdir):
    proc = run(workdir, "show-derivative", "cli_target_mod:annotated")
    assert proc.returncode == 0, proc.stderr
    check_source(proc.stdout, "annotated")


def test_scalar_arg_specs(workdir):
    proc = run(workdir, "show-derivative", "cli_target_mod:half_annotated", "--arg", "float", "--arg", "f64[4]")
    assert proc.returncode == 0, proc.stderr
    check_source(proc.stdout, "half_annotated")


def test_structural_stage_shows_dup(workdir):
    proc = run(workdir, "show-derivative", "cli_target_mod:annotated", "--stage", "structural")
    assert proc.returncode == 0, proc.stderr
    assert "dup" in proc.stdout
    proc = run(workdir, "show-derivative", "cli_target_mod:loss", "--stage", "structural",
               "--arg", "f64[3,4]", "--arg", "f64[2,3]")
    assert proc.returncode == 0, proc.stderr
    assert "dup h" in proc.stdout


@pytest.mark.parametrize("stage", ["core", "ad", "optimised", "source"])
def test_other_stages(workdir, stage):
    proc = run(workdir, "show-derivative", "cli_target_mod:annotated", "--stage", stage)
    assert proc.returncode == 0, proc.stderr
    assert "annotated" in proc.stdout
    if stage == "source":
        check_source(proc.stdout, "annotated")


@pytest.mark.parametrize("target", [
    "cli_target_mod:no_such_function",
    "no_such_module_anywhere:loss",
    "cli_target_mod",
    "missing_file.py:loss",
    ":loss",
], ids=["no attribute", "no module", "no colon", "no file", "empty module"])
def test_bad_target(workdir, target):
    check_failure(run(workdir, "show-derivative", target, "--arg", "float"))


def test_missing_arg(workdir):
    proc = run(workdir, "show-derivative", "cli_target_mod:loss")
    check_failure(proc)
    assert "--arg" in proc.stderr
    check_failure(run(workdir, "show-derivative", "cli_target_mod:half_annotated"))


def test_too_few_args(workdir):
    check_failure(run(workdir, "show-derivative", "cli_target_mod:loss", "--arg", "f64[3,4]"))


def test_unreadable_arg_spec(workdir):
    proc = run(workdir, "show-derivative", "cli_target_mod:loss", "--arg", "matrix", "--arg", "f64[2,3]")
    check_failure(proc)
    assert "matrix" in proc.stderr


def test_shape_error_points_at_the_source(workdir):
    proc = run(workdir, "show-derivative", "cli_target_mod:loss", "--arg", "f64[3,4]", "--arg", "f64[5,6]")
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    first = proc.stderr.splitlines()[0]
    assert first.startswith("astad: ") and "cli_target_mod.py:5:17: " in first


def test_console_script(workdir):
    exe = shutil.which("astad")
    if exe is None:
        pytest.skip("the `astad` console script is not on PATH")
    proc = run(workdir, "show-derivative", "cli_target_mod:annotated", command=[exe])
    assert proc.returncode == 0, proc.stderr
    check_source(proc.stdout, "annotated")
    check_failure(run(workdir, "show-derivative", "cli_target_mod:nothing_here", command=[exe]))


def test_same_output_as_the_api(workdir, monkeypatch):
    import importlib.util

    import numpy as np

    import astad

    proc = run(workdir, "show-derivative", "cli_target_mod:loss", "--arg", "f64[3,4]", "--arg", "f64[2,3]")
    assert proc.returncode == 0, proc.stderr
    spec = importlib.util.spec_from_file_location("cli_target_mod_api", workdir / "cli_target_mod.py")
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "cli_target_mod_api", mod)
    spec.loader.exec_module(mod)
    assert astad.reverse(mod.loss).transform(np.ones((3, 4)), np.ones((2, 3))).source == proc.stdout


def test_help():
    proc = subprocess.run([sys.executable, "-m", "astad.cli", "show-derivative", "--help"], capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 0
    assert "--stage" in proc.stdout and "--arg" in proc.stdout


def test_module_that_fails_to_import_gives_a_one_line_message(tmp_path):
    (tmp_path / "badsyn.py").write_text("def f(x:\n    return x\n")
    (tmp_path / "boom.py").write_text("raise RuntimeError('no')\n")
    for target in ("badsyn:f", "boom:f"):
        proc = run(tmp_path, "show-derivative", target, "--arg", "float")
        assert proc.returncode != 0
        assert proc.stderr.startswith("astad: cannot import") and "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1


# --------------------------------------------------------------------------- types, not arrays (in process)


@pytest.fixture
def in_process(workdir, monkeypatch):
    """Runs ``astad.cli.main`` here; returns (exit status, stdout, stderr)."""
    from astad import cli

    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setitem(sys.modules, "cli_target_mod", None)
    monkeypatch.setenv("ASTAD_DISK_CACHE", "0")

    def main(capsys, *argv):
        status = cli.main(["show-derivative", f"{workdir / 'cli_target_mod.py'}:{argv[0]}", *argv[1:]])
        out, err = capsys.readouterr()
        return status, out, err

    return main


def load_mod(workdir, monkeypatch):
    import importlib.util

    spec = importlib.util.spec_from_file_location("cli_target_mod_api", workdir / "cli_target_mod.py")
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "cli_target_mod_api", mod)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("spec, example", [
    ("float", 0.5), ("int", 1), ("bool", True),
    ("f64", "np.ones((), 'float64')"), ("float64", "np.float64(2.0)"), ("f32", "np.ones((), 'float32')"),
    ("f64[3,4]", "np.ones((3, 4))"), ("f32[ 10 ]", "np.ones(10, 'float32')"), ("int[2,3]", "np.ones((2, 3), int)"),
    ("bool[5]", "np.ones(5, bool)"), ("float[7]", "np.ones(7)"), ("f64[]", "np.ones(())"),
])
def test_arg_type_is_the_type_of_an_example_value(spec, example):
    import numpy as np

    from astad import cli, frontend

    value = eval(example, {"np": np}) if isinstance(example, str) else example  # noqa: S307 - test table
    assert cli.arg_type(spec) == frontend.abstract(value, "x")


def test_huge_arg_builds_no_array(workdir, monkeypatch, capsys, in_process):
    import tracemalloc

    import numpy as np

    import astad

    tracemalloc.start()
    try:
        status, out, err = in_process(capsys, "half_annotated", "--arg", "float", "--arg", "f64[200000,1000]")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert status == 0, err
    assert peak < 64 * 2**20  # a 1.6 GB example array would be traced (numpy reports its data to tracemalloc)
    check_source(out, "half_annotated")
    # the same code as the API makes for a real array of that shape (a broadcast view: no 1.6 GB either)
    mod = load_mod(workdir, monkeypatch)
    big = np.broadcast_to(np.float64(1.0), (200000, 1000))
    assert type(big) is np.ndarray
    assert astad.reverse(mod.half_annotated).transform(0.5, big).source == out


@pytest.mark.parametrize("stage", ["source", "core", "optimised"])
def test_in_process_same_output_as_the_api(workdir, monkeypatch, capsys, in_process, stage):
    import numpy as np

    import astad

    status, out, err = in_process(capsys, "loss", "--arg", "f64[3,4]", "--arg", "f64[2,3]", "--stage", stage)
    assert status == 0, err
    rev = astad.reverse(load_mod(workdir, monkeypatch).loss)
    args = (np.ones((3, 4)), np.ones((2, 3)))
    assert out == (rev.transform(*args).source if stage == "source" else rev.ir(stage, *args) + "\n")
    status, out, err = in_process(capsys, "annotated")  # types from the annotations
    assert status == 0, err
    assert out == astad.reverse(load_mod(workdir, monkeypatch).annotated).transform(0.5, 1).source


def test_in_process_wrong_number_of_args(workdir, capsys, in_process):
    status, out, err = in_process(capsys, "loss", "--arg", "f64[3,4]")
    assert status == 2 and out == "" and "the type of `x` of loss is not known" in err  # a usage error
    status, out, err = in_process(capsys, "loss", "--arg", "f64[3,4]", "--arg", "f64[2,3]", "--arg", "float")
    assert status == 2 and out == "" and "loss takes 2 arguments (w, x), got 3 --arg" in err


def test_forward_mode_prints_the_jvp(workdir):
    proc = run(workdir, "show-derivative", "cli_target_mod:loss", "--mode", "forward", "--arg", "f64[3,4]",
               "--arg", "f64[2,3]")
    assert proc.returncode == 0, proc.stderr
    compile(proc.stdout, "<forward>", "exec")
    ns = {}
    exec(proc.stdout, ns)  # noqa: S102 - defines loss_jvp
    import numpy as np
    rng = np.random.default_rng(0)
    w, x, tw = rng.standard_normal((3, 4)), rng.standard_normal((2, 3)), rng.standard_normal((3, 4))
    value, tangent = ns["loss_jvp"](w, x, tw, np.zeros((2, 3)))
    eps = 1e-6

    def loss(w):
        h = np.tanh(x @ w)
        return np.sum(h * h)
    assert abs(value - loss(w)) < 1e-12
    assert abs(tangent - (loss(w + eps * tw) - loss(w - eps * tw)) / (2 * eps)) < 1e-6
    assert "def loss_jvp(" in proc.stdout and "_backward" not in proc.stdout


def test_forward_mode_stages_and_annotations(workdir):
    proc = run(workdir, "show-derivative", "cli_target_mod:annotated", "--mode", "forward", "--stage", "forward")
    assert proc.returncode == 0, proc.stderr
    assert "x_t" in proc.stdout
    check_failure(run(workdir, "show-derivative", "cli_target_mod:loss", "--stage", "forward", "--arg", "f64[3,4]",
                      "--arg", "f64[2,3]"))
    check_failure(run(workdir, "show-derivative", "cli_target_mod:loss", "--mode", "forward", "--stage", "ad",
                      "--arg", "f64[3,4]", "--arg", "f64[2,3]"))
