"""The elementwise type rule's memo keys parameters with their classes: True == 1 and
0.0 == -0.0 as dict keys, but numpy's result type may differ between such parameters."""

import numpy as np

from astad.ir import Num
from astad.rules.types import elementwise


def _by_parameter_class(x, k):
    return x > 0 if isinstance(k, bool) else np.round(x, k)


def test_a_bool_parameter_is_not_taken_for_an_int_one():
    infer = elementwise(_by_parameter_class)
    x = Num((3,), "float64")
    assert infer([x], {"k": 1}) == Num((3,), "float64")
    assert infer([x], {"k": True}) == Num((3,), "bool")
    assert infer([x], {"k": 1}) == Num((3,), "float64")
