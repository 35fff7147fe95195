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


# --------------------------------------------------------------------------- random: a global read as a
# number where it is used, rebound between the entry's writing and its loading (in one process: the
# memory caches forgotten, the disk entry's checks then decide, as in a fresh process)

import shutil  # noqa: E402

import numpy as np  # noqa: E402
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

import astad  # noqa: E402
from conftest import central_differences, fuzz_examples  # noqa: E402
from test_cache import forget_in_memory, load_module  # noqa: E402

#: uses of a module-level number G, each with the values G may take there
USES = {
    "ord": ("np.linalg.norm(x, ord=G)", [1.0, 2.0, 3.0, 4.5, np.inf, np.float64(3.0), 1, 2, 3]),
    "folded": ("np.sum(x * (G * 2.0 - 1.0))", [0.5, -1.25, 3.0, np.float64(2.5), 2, True, False]),
    "factor": ("np.sum(np.sin(x) * G)", [0.5, -1.25, np.float64(2.5), 3, True]),
    "slice": ("np.sum(np.sin(x[:G]))", [1, 2, 3]),
    "power": ("np.sum(x ** G)", [2, 3, 2.0, 3.0, np.float64(2.0)]),
    "branch": ("np.sum(x * x) if G > 1.0 else np.sum(np.cos(x))", [0.5, 1.5, 2, np.float64(0.25), True]),
    "flag": ("np.sum(x * x) if G else np.sum(np.cos(x))", [True, False, np.True_, np.False_, 0.0, 1.0,
                                                            np.float64(0.0), np.float64(2.0), 0, 1]),
    "axis": ("np.sum(np.cumsum(np.outer(x, x), axis=G) ** 2)", [0, 1, -1]),
}

_dirs = iter(range(10**9))


@settings(max_examples=fuzz_examples(5, long=12), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_global_numbers_rebound_between_storing_and_loading(tmp_path, monkeypatch, data):
    use = data.draw(st.sampled_from(sorted(USES)), label="use")
    text, values = USES[use]
    first, second = data.draw(st.lists(st.sampled_from(values), min_size=2, max_size=2), label="values")
    where = tmp_path / f"case{next(_dirs)}"
    where.mkdir()
    monkeypatch.setenv("ASTAD_DISK_CACHE", "1")
    monkeypatch.setenv("ASTAD_CACHE_DIR", str(where / "cache"))
    monkeypatch.setattr(astad.config, "disk_cache", True)
    mod = load_module(where, f"""\
        import numpy as np

        G = 0


        def f(x):
            return {text}
        """, monkeypatch)
    x = np.array([0.3, 0.7, 1.1])
    try:
        for value in (first, second):
            mod.G = value
            forget_in_memory()  # (the first time too: each call loads from disk what it can)
            got_value, grad = astad.value_and_grad(mod.f)(x)
            np.testing.assert_allclose(got_value, mod.f(x), rtol=1e-12, atol=1e-14, err_msg=f"G = {value!r}")
            np.testing.assert_allclose(grad, central_differences(mod.f, x), rtol=1e-5, atol=1e-7,
                                       err_msg=f"G = {value!r}")
    finally:
        forget_in_memory()
        shutil.rmtree(where, ignore_errors=True)  # (monkeypatch restores the environment after the test)
