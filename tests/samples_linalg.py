"""Sample arguments of the linalg entries added to the rule table (merged into
``CASES`` of tests/test_primitive_rules.py, so tests/test_rules_both_directions.py
checks each entry's JVP and VJP against finite differences).

The matrices are drawn where the functions are smooth and well conditioned:
invertible (``Square``), symmetric positive definite (``Spd``), symmetric with
well separated eigenvalues (``Sym``), of full rank with well separated singular
values (``Full``).  Each is an ``A`` (a float array: the rule tests give it a tangent); give its
own fields by keyword (``Full(m=2, n=3)``).  ``fed = False``: the random chains of
tests/test_random_table_chains.py draw them but never feed them a previous
result (entries in a box (lo, hi) are not such matrices)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from astad.ir import Num
from rule_specs import A, B, C, I, L, M, NZ, P, POS, case  # noqa: F401


def _orthogonal(rng: np.random.Generator, n: int) -> np.ndarray:
    q, r = np.linalg.qr(rng.standard_normal((n, n)))
    return q * np.sign(np.diag(r))


@dataclass(frozen=True)
class Square(A):
    """Invertible matrices (a stack of them for ``batch``): ``2 I`` plus a small
    random part, each of random determinant sign."""
    fed = False  # not a dataclass field: a class attribute
    n: int = 3
    batch: tuple = ()

    def type(self) -> Num:
        return Num(self.batch + (self.n, self.n), "float64")

    def draw(self, rng: np.random.Generator) -> Any:
        x = 2 * np.eye(self.n) + rng.uniform(-0.5, 0.5, self.batch + (self.n, self.n))
        return x * rng.choice([-1.0, 1.0], self.batch + (self.n, 1))


@dataclass(frozen=True)
class Spd(A):
    """Symmetric positive definite: ``X X^T + n I``."""
    fed = False  # not a dataclass field: a class attribute
    n: int = 3

    def type(self) -> Num:
        return Num((self.n, self.n), "float64")

    def draw(self, rng: np.random.Generator) -> Any:
        x = rng.uniform(-1, 1, (self.n, self.n))
        return x @ x.T + self.n * np.eye(self.n)


@dataclass(frozen=True)
class Sym(A):
    """Symmetric, eigenvalues at least 0.7 apart (of both signs)."""
    fed = False  # not a dataclass field: a class attribute
    n: int = 3

    def type(self) -> Num:
        return Num((self.n, self.n), "float64")

    def draw(self, rng: np.random.Generator) -> Any:
        q = _orthogonal(rng, self.n)
        w = np.arange(self.n) * 1.0 - self.n / 2 + rng.uniform(-0.15, 0.15, self.n)
        return (q * w) @ q.T


@dataclass(frozen=True)
class Full(A):
    """``m x n`` of full rank, singular values at least 0.7 apart and at least 1."""
    fed = False  # not a dataclass field: a class attribute
    m: int = 4
    n: int = 3

    def type(self) -> Num:
        return Num((self.m, self.n), "float64")

    def draw(self, rng: np.random.Generator) -> Any:
        k = min(self.m, self.n)
        u, v = _orthogonal(rng, self.m)[:, :k], _orthogonal(rng, self.n)[:, :k]
        s = 1.0 + np.arange(k)[::-1] + rng.uniform(-0.15, 0.15, k)
        return (u * s) @ v.T


SQ, SQ2 = Square(), Square(n=2, batch=(2,))

CASES: dict[str, list[tuple]] = {
    "inv": [case(SQ), case(SQ2)],
    "det": [case(SQ), case(SQ2)],
    "slogdet_sign": [case(SQ)],
    "slogdet_logabsdet": [case(SQ), case(SQ2)],
    "adjugate": [case(SQ), case(SQ2), case(Square(n=1))],
    "inv_or_nan": [case(SQ), case(SQ2)],
    "solve": [case(SQ, A()), case(SQ, A((3, 2))), case(SQ2, A((2, 2, 3))), case(SQ2, A((2, 1)))],
    "pinv": [case(Full(m=4, n=3)), case(Full(m=2, n=3)), case(SQ)],
    "norm": [case(NZ, ord=2, axis=None, keepdims=False), case(M, ord=2, axis=None, keepdims=True),
             case(A((2, 3), signed=True), ord=2, axis=1, keepdims=False),
             case(A((2, 3, 2), 0.3, 2.0, signed=True), ord=2, axis=(0, 2), keepdims=True),
             case(NZ, ord=3, axis=None, keepdims=False), case(A((2, 3), 0.3, 2.0, signed=True), ord=1.5, axis=0, keepdims=True),
             case(NZ, ord=-2.0, axis=None, keepdims=False)],
    "cholesky": [case(Spd()), case(Spd(n=1))],
    "eigvalsh": [case(Sym()), case(Sym(), UPLO="U")],
    "eigh_vectors": [case(Sym()), case(Sym(n=4), UPLO="U")],
    "qr_q": [case(Full(m=4, n=3)), case(Full(m=3, n=3))],
    "qr_r": [case(Full(m=4, n=3)), case(Full(m=3, n=3))],
    "svdvals": [case(Full(m=4, n=3)), case(Full(m=2, n=3)), case(Full(m=3, n=3))],
    "svd_u": [case(Full(m=4, n=3)), case(Full(m=2, n=3)), case(Full(m=3, n=3))],
    "svd_vh": [case(Full(m=4, n=3)), case(Full(m=2, n=3)), case(Full(m=3, n=3))],
}
