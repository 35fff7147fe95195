"""Chains of constant slices and an index, ``x[a:b:c][d:e:f][i]``, are read as
one index of ``x`` (the cotangent goes to ``x`` in one step).  Random chains,
against Python and central finite differences."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import check_grad, check_stages, load_program

bound = st.one_of(st.none(), st.integers(-7, 7))
step = st.one_of(st.none(), st.sampled_from([1, 2, 3, -1, -2]))


def _slice_text(a, b, c):
    return ":".join("" if v is None else str(v) for v in (a, b, c))


@settings(max_examples=60, deadline=None)
@given(first=st.tuples(bound, bound, step), second=st.tuples(bound, bound, step),
       last=st.one_of(st.none(), st.integers(-3, 3)), rows=st.sampled_from([(6,), (6, 2)]))
def test_slice_chains(tmp_path_factory, first, second, last, rows):
    x = np.linspace(-1.0, 1.5, int(np.prod(rows))).reshape(rows)
    picked = x[slice(*first)][slice(*second)]
    if last is not None:
        if not -len(picked) <= last < len(picked):
            last = None
        else:
            picked = picked[last]
    if np.size(picked) == 0:
        return
    chain = f"x[{_slice_text(*first)}][{_slice_text(*second)}]" + (f"[{last}]" if last is not None else "")
    source = f"import numpy as np\n\n\ndef f(x):\n    v = {chain}\n    return np.sum(np.sin(v) * v)\n"
    mod = load_program(source, tmp_path_factory.mktemp("chains"), "chain")
    check_grad(mod.f, [x])
    check_stages(mod.f, (x,))
