"""examples/tour.ipynb runs (nbclient + ipykernel, as CI runs it) and says what
it promises; Jupyter's rich display of a decorated function shows its code and
every stage's IR."""

import html
import json
import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import astad
from astad import pipeline

ROOT = Path(__file__).resolve().parent.parent
TOUR = ROOT / "examples" / "tour.ipynb"


def text_of(markup):
    """The text a browser shows of some HTML (tags dropped, entities read)."""
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def outputs(cell):
    """A cell's printed text and its HTML, each joined."""
    printed = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
    markup = "".join(o.get("data", {}).get("text/html", "") for o in cell.outputs)
    return printed, markup


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    # a kernel of this interpreter, named so that no kernel installed elsewhere is taken for it
    kernels = tmp_path_factory.mktemp("jupyter")
    spec = kernels / "kernels" / "astad-test"
    spec.mkdir(parents=True)
    spec.joinpath("kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "astad test", "language": "python"}))
    saved = dict(os.environ)
    os.environ.update(JUPYTER_PATH=str(kernels), ASTAD_DISK_CACHE="0", PYDEVD_DISABLE_FILE_VALIDATION="1",
                      PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    try:
        nb = nbformat.read(TOUR, as_version=4)
        nbclient.NotebookClient(nb, kernel_name="astad-test", timeout=120,
                                resources={"metadata": {"path": str(ROOT / "examples")}}).execute()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return [c for c in nb.cells if c.cell_type == "code"]


def cell_with(cells, source_start):
    found = [c for c in cells if c.source.startswith(source_start)]
    assert len(found) == 1, source_start
    return found[0]


def test_no_cell_fails(executed):
    for cell in executed:
        assert all(o.output_type != "error" for o in cell.outputs), cell.source
        assert cell.execution_count is not None


def test_gradient_equals_finite_differences(executed):
    printed, _ = outputs(cell_with(executed, "grad = astad.grad(loss"))
    found = dict(re.findall(r"^(reverse mode|forward mode|central differences):\s+(\S+)$", printed, re.M))
    assert set(found) == {"reverse mode", "forward mode", "central differences"}, printed
    fd = float(found["central differences"])
    for mode in ("reverse mode", "forward mode"):
        assert abs(float(found[mode]) - fd) <= 1e-6 * max(1.0, abs(fd)), printed


def test_other_libraries_agree_or_are_skipped(executed):
    printed, _ = outputs(cell_with(executed, "def best_time"))
    for library in ("autograd", "JAX"):
        skipped = f"{library} is not installed: skipped" in printed
        match = re.search(rf"^{library}\s+gradient differs from astad's by (\S+)$", printed, re.M)
        assert skipped != (match is not None), printed
        if match:
            assert float(match.group(1)) < 1e-10
    assert re.search(r"^astad\s+[\d.]+ µs per gradient$", printed, re.M), printed


def test_rich_display_and_stages(executed):
    _, markup = outputs(next(c for c in executed if c.source.strip() == "loss"))
    shown = text_of(markup)
    assert "def loss_forward(W, b, x, y):" in shown and "def loss_backward(" in shown
    assert markup.count("<details>") == len(pipeline.STAGES)
    printed, _ = outputs(cell_with(executed, "for stage in loss.stages"))
    assert [line[len("---- after "):-len(" ----")] for line in printed.splitlines() if line.startswith("---- after")] \
        == list(pipeline.STAGES)
    assert "dup r" in printed  # the structural stage's copy
    _, markup = outputs(cell_with(executed, "loss_fwd = astad.forward"))
    assert "def loss_jvp(" in text_of(markup) and markup.count("<details>") == len(pipeline.FORWARD_STAGES)


def test_command_line_cell(executed):
    printed, _ = outputs(cell_with(executed, "from astad import cli"))
    assert "def loss_jvp(W, b, x, y, W_t, b_t, x_t, y_t):" in printed
    assert "n: x.shape[0], y.shape[0]" in printed and "shape-polymorphic" in printed


def test_stored_notebook_has_no_outputs():
    """The notebook is kept without outputs (CI makes them), so its diffs show only what a person wrote."""
    nb = json.loads(TOUR.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code and all(not c["outputs"] and c["execution_count"] is None for c in code)


# --------------------------------------------------------------------------- the rich display, in process


def tanh_loss(w, x):
    h = np.tanh(x @ w)
    return np.sum(h * h)


@pytest.mark.parametrize("transform", [astad.reverse, astad.forward])
def test_html_shows_the_code_and_every_stage(transform):
    f = transform(tanh_loss)
    w, x = np.ones((3, 2)), np.ones((4, 3))
    before = f._repr_html_()
    assert "not called yet" in before and "def tanh_loss(w, x):" in text_of(before)
    f(w, x)
    markup = f._repr_html_()
    shown = text_of(markup)
    assert f.source in shown
    assert f.stages == (pipeline.STAGES if transform is astad.reverse else pipeline.FORWARD_STAGES)
    assert markup.count("<details>") == len(f.stages)
    for stage in f.stages:
        assert f"IR after the stage {stage}" in shown
        assert f.ir(stage) in shown


def test_html_without_pygments(monkeypatch):
    monkeypatch.setitem(sys.modules, "pygments", None)  # import pygments fails
    f = astad.reverse(tanh_loss)
    f(np.ones((3, 2)), np.ones((4, 3)))
    markup = f._repr_html_()
    assert "<span" not in markup and markup.count("<pre>") == 1 + len(f.stages)
    assert f.source in text_of(markup)
