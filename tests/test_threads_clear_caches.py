"""``astad.clear_caches()`` in one thread while others make and call derivatives: no exception
from astad's own bookkeeping (it walked a weak set of the live transforms that another thread was
adding to: "RuntimeError: Set changed size during iteration"), and every derivative stays right
(central differences)."""

import sys
import threading
import traceback

import numpy as np

import astad
from astad import programs
from conftest import central_differences


def _make(k):
    def f(x):
        return np.sum(np.sin(x) * (k + 1.0))
    return f


def test_clear_caches_while_other_threads_make_derivatives():
    errors, done = [], threading.Event()
    x = np.array([0.3, -0.7])

    def make_and_call(first):
        try:
            for k in range(first, first + 300):
                f = _make(k % 7)
                rev = astad.reverse(f)  # a new transform (a new function object each time)
                programs.cache_of(rev)  # (what a derivative of a derivative of f makes: a weak dict's entry)
                if k % 20 == 0:
                    got = astad.grad(f)(x)
                    want = central_differences(f, x)
                    if not np.allclose(got, want, rtol=1e-6, atol=1e-8):
                        errors.append((k, got, want))
        except Exception:  # noqa: BLE001 - any exception is the failure
            errors.append(traceback.format_exc())

    def clear():
        try:
            while not done.is_set():
                astad.clear_caches(memory=True, disk=False)
        except Exception:  # noqa: BLE001
            errors.append(traceback.format_exc())

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often: the window is a few bytecodes wide
    try:
        clearer = threading.Thread(target=clear)
        makers = [threading.Thread(target=make_and_call, args=(1000 * i,)) for i in range(3)]
        clearer.start()
        for t in makers:
            t.start()
        for t in makers:
            t.join()
        done.set()
        clearer.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
