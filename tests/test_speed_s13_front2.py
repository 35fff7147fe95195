"""Session 13 (front2): straight-line code lowered from Python's tree gives an assignment's binding
the user's name when it is made (astad/frontend/fast.py, core.emit's ``name``), not by renaming a
temporary's binding afterwards (core.name_result): both ways must give the same IR, names, places
and errors as the lowering of libcst's nodes, at the edges of the renaming too."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import check_grad
from test_frontend_s12 import X, W, _lowering, _program, assert_same_lowering


@pytest.mark.parametrize("body", [
    # user names shaped like the temporaries (t1, t2, ...): the renaming draws them as fresh names
    ["t1 = x * 2.0", "t2 = t1 + x", "t3 = -t2 * t1", "return np.sum(t3 * t1)"],
    ["a = x * 2.0", "t1 = a - x", "t1 = t1 * t1", "return np.sum(t1)"],
    # a name assigned twice (its second binding a fresh name: a_2)
    ["a = x + 1.0", "a = a * a", "a = a - x", "return np.sum(a)"],
    # a value folded (a constant: no binding) and a name bound to a constant
    ["c = 2.0 * 3.0", "a = x * c", "d = c - 1.0", "return np.sum(a * d)"],
    # a Python power that may be complex: tested where it runs (its test reads the temporary)
    ["q = s * 2.0", "p = q ** 0.5", "r = p * q", "return np.sum(x) * r"],
    ["k = 2.0 - 0.5", "a = np.abs(x) ** k", "return np.sum(a) + s"],
    # a binary operation whose operands are themselves assignments' names, not temporaries
    ["a = x", "b = a + a", "c = b", "d = c * b", "return np.sum(d)"],
    # a product of matrices, a unary operation and a call at a statement's own level
    ["a = W @ x", "b = -a", "c = np.tanh(b) * a", "return np.sum(c)"],
])
def test_names_given_when_bound_agree_with_the_general_lowering(tmp_path, body):
    f = _program(tmp_path, body, params="x, W, s=1.5")
    assert assert_same_lowering(f, [X, W, 1.5])  # (lowered from Python's tree to the end)
    check_grad(f, [X, W, 1.5])


def test_a_power_of_a_negative_python_number_is_still_refused_where_it_is(tmp_path):
    f = _program(tmp_path, ["a = x * 2.0", "b = (-2.0) ** 0.5", "return np.sum(a) * b"])
    straight, _ = _lowering(f, [X, W], True)
    general, _ = _lowering(f, [X, W], False)
    assert straight == general


def test_the_names_given_are_the_users(tmp_path):
    f = _program(tmp_path, ["a = x * 2.0", "b = a + x", "a = b * a", "return np.sum(a)"])
    got, used = _lowering(f, [X, W], True)
    assert used  # (lowered from Python's tree to the end)
    binds = [text for text, _ in got[0]]
    assert binds[:3] == ["let a = mul(x, 2.0)", "let b = add(a, x)", "let a_2 = mul(b, a)"], binds


def test_a_products_type_is_one_object_per_value_and_still_checked():
    from astad import rules
    from astad.ir import Num
    from astad.rules.table import ShapeError
    infer = rules.TABLE["matmul"].infer
    m, v = Num((32, 32), "float64"), Num((32,), "float64")
    first = infer([m, v], {})
    again = infer([Num((32, 32), "float64"), Num((32,), "float64")], {})  # (equal types, other objects)
    assert first == Num((32,), "float64") and again is first
    assert infer([v, m], {}) is first  # (v @ m: the same type)
    assert infer([m, Num((32, 4), "float32")], {}) == Num((32, 4), "float64")
    assert infer([Num((3, 2), "float32"), Num((2,), "float32")], {}) == Num((3,), "float32")
    with pytest.raises(ShapeError, match="not aligned"):
        infer([m, Num((31,), "float64")], {})
    with pytest.raises(ShapeError, match="not aligned"):  # (again: a refusal is not remembered as a type)
        infer([m, Num((31,), "float64")], {})
    with pytest.raises(ShapeError, match="at least one dimension"):
        infer([m, Num((), "float64", py=True)], {})
