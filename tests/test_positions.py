"""astad.positions computes libcst's PositionProvider positions its own
(cheaper) way: they must be libcst's, node for node."""

from __future__ import annotations

import inspect

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from astad import positions

SOURCES = [
    "def f(x):\n    y = (x + 1) * ((x))\n    return y\n",
    "def f(x, y=2):\n    z = [a for a in (x, y) if a > 0]\n    w = f(\n        x,\n        y,\n    )[0]\n    return z\n",
    "@dec(1)\ndef f(x):\n    if x > 0:  # c\n        return -x\n    else:\n        return {'a': x}['a']\n",
    "def f(x):\r\n    s = '''a\r\nb'''\r\n    return (lambda y: y ** 2)(x)\r\n",
    "def f(x):\n    for i in range(3):\n        x = x @ x.T; x += 1\n    while x: break\n    return x if x else not x\n",
    inspect.getsource(positions),
]


@pytest.mark.parametrize("source", SOURCES)
def test_positions_are_libcsts(source: str) -> None:
    module = cst.parse_module(source)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    found = positions.resolve(module, source)
    assert set(found) == set(expected)
    assert all(found[node] == expected[node] for node in expected)
