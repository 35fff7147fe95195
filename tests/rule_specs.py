"""Argument specs of the primitive-table tests (tests/test_primitive_rules.py,
tests/test_rules_both_directions.py and the per-family sample files
``tests/samples_*.py``): how to draw each argument of an entry's sample call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from astad.ir import ListT, Num


# --------------------------------------------------------------------------- argument specs


@dataclass(frozen=True)
class A:
    """A float64 array (shape ()) is a 0-d numpy scalar) with entries in (lo, hi), each of random sign if ``signed``."""
    shape: tuple = (3,)
    lo: float = -2.0
    hi: float = 2.0
    signed: bool = False

    def type(self) -> Num:
        return Num(self.shape, "float64")

    def draw(self, rng: np.random.Generator) -> Any:
        x = rng.uniform(self.lo, self.hi, self.shape)
        if self.signed:
            x = x * rng.choice([-1.0, 1.0], self.shape)
        return np.float64(x) if self.shape == () else x


@dataclass(frozen=True)
class P:
    """A Python float in (lo, hi), of random sign if ``signed``."""
    lo: float = -2.0
    hi: float = 2.0
    signed: bool = False

    def type(self) -> Num:
        return Num((), "float64", py=True)

    def draw(self, rng: np.random.Generator) -> Any:
        return float(A((), self.lo, self.hi, self.signed).draw(rng))


@dataclass(frozen=True)
class I:
    """An int64 array (a Python int for shape None) drawn from lo..hi: a discrete argument."""
    shape: tuple | None = (3,)
    lo: int = -2
    hi: int = 3

    def type(self) -> Num:
        return Num((), "int64", py=True) if self.shape is None else Num(self.shape, "int64")

    def draw(self, rng: np.random.Generator) -> Any:
        if self.shape is None:
            return int(rng.integers(self.lo, self.hi))
        return rng.integers(self.lo, self.hi, self.shape)


@dataclass(frozen=True)
class B:
    """A bool array."""
    shape: tuple = (3,)

    def type(self) -> Num:
        return Num(self.shape, "bool")

    def draw(self, rng: np.random.Generator) -> Any:
        return rng.random(self.shape) < 0.5


@dataclass(frozen=True)
class L:
    """A list of n float arrays of one shape."""
    n: int = 3
    shape: tuple = (2,)

    def type(self) -> ListT:
        return ListT(Num(self.shape, "float64"), self.n)

    def draw(self, rng: np.random.Generator) -> Any:
        return [rng.uniform(-2, 2, self.shape) for _ in range(self.n)]


@dataclass(frozen=True)
class C:
    """A constant (a literal in the program)."""
    value: Any


POS = A(lo=0.3, hi=2.5)
NZ = A(lo=0.4, hi=2.0, signed=True)  # away from 0: a divisor
M = A(shape=(2, 3))


def case(*args: Any, **params: Any) -> tuple:
    return args, params
