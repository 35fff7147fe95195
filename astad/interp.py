"""Moved to :mod:`astad.ir.interp`.  This alias keeps ``from astad import interp``
working for the branches written before the move; delete it once nothing imports it."""

from .ir.interp import CopowerValue, FunctionValue, plus_values, run, run_block, run_reverse, zero_value  # noqa: F401
