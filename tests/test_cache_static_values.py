"""The disk cache and values read when transforming: a float that the transformation reads (as
``ord=P`` of ``np.linalg.norm``) is part of the generated code, so a fresh process in which it
was edited (a module-level float, a float a helper closure captured) must not load the entry
written before the edit (the value and gradient of the plain function, central differences)."""

import textwrap

import pytest

from test_cache import run_fresh

CASES = {
    "global float": """\
        import numpy as np

        P = 3.0


        def f(x):
            return np.linalg.norm(x, ord=P)
        """,
    "float captured by a helper's closure": """\
        import numpy as np

        P = 3.0


        def make(k):
            def h(y):
                return np.linalg.norm(y, ord=k)
            return h


        H = make(P)


        def f(x):
            return H(x) * 2.0
        """,
}


@pytest.mark.parametrize("case", list(CASES))
def test_float_read_when_transforming_edited_between_processes(tmp_path, case):
    module, cache = tmp_path / "static_value_module.py", tmp_path / "cache"
    module.write_text(textwrap.dedent(CASES[case]))
    first = run_fresh(tmp_path, module, "f", cache)  # (each run: value == plain, grad == FD)
    assert run_fresh(tmp_path, module, "f", cache)["transforms"] == 0  # the entry is used before the edit
    module.write_text(module.read_text().replace("P = 3.0", "P = 4.0"))
    after = run_fresh(tmp_path, module, "f", cache)
    assert after["value"] != first["value"]
