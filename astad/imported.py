"""numpy and math as astad found them when it was imported: what generated code reads as ``np`` and
``math`` (:func:`astad.pipeline.compile_source`).

Derivative code calls numpy's own functions (``np.cos`` for the derivative of ``np.sin``), which
must not be what a caller assigned since (a mock of ``np.cos``).  What the user's code reads
(``np.sin``, ``math.pi``) is a dependency of the derivative (``frontend.expressions``), read as the
object it is when transforming: a replaced function by what it is, a replaced constant as a number.
"""

from __future__ import annotations

import math
import types
from typing import Any

import numpy as np


def _copy(module: types.ModuleType, subs: tuple[str, ...] = ()) -> types.ModuleType:
    """A copy of ``module``'s namespace as it is now (and of its submodules ``subs``)."""
    copy = types.ModuleType(module.__name__)
    copy.__dict__.update(vars(module))
    for sub in subs:
        setattr(copy, sub, _copy(getattr(module, sub)))
    return copy


#: the copies, by the id of the module copied
MODULES: dict[int, types.ModuleType] = {id(np): _copy(np, ("linalg",)), id(math): _copy(math)}
MODULES[id(np.linalg)] = MODULES[id(np)].linalg


def as_imported(module: Any, attr: str) -> Any:
    """What ``module.attr`` was when astad was imported (None when astad has no copy of ``module``)."""
    copy = MODULES.get(id(module))
    return None if copy is None else getattr(copy, attr, None)
