"""The README's Python blocks run as written (each on its own, as a file, as a
reader would paste it), and the README links nothing outside the repository."""

from __future__ import annotations

import contextlib
import io
import pathlib
import re
import runpy

import pytest

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_the_readme_has_python_blocks():
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("k", range(len(BLOCKS)))
def test_each_python_block_runs_as_written(k, tmp_path):
    path = tmp_path / f"readme_block_{k}.py"
    path.write_text(BLOCKS[k])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        runpy.run_path(str(path), run_name="__main__")


def test_the_readme_links_nothing_outside_the_repository():
    text = README.read_text()
    assert not re.findall(r"\]\((?:https?:|/|\.\./)", text), "a link outside the repository"
    assert "../" not in text, "a path outside the repository"
    for target in re.findall(r"\]\(([^)#]+)", text):
        assert (README.parent / target).exists(), f"README links {target}, which is not in the repository"
