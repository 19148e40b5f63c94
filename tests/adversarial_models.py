"""Models written to stress the planner's bounds, not to be run: many activations alive
together (more MILP binaries than the cap allows), and a packing the MILP takes seconds
to prove (for Ctrl-C during a solve). Graph-only where weights are not needed."""

from __future__ import annotations

import numpy as np
from tflite_writer import ModelBuilder

SCALE = 0.05


def _dense(m: ModelBuilder, x: int, n: int) -> int:
    """FULLY_CONNECTED from ``x`` to ``n`` values (weights of ones: only the shapes count)."""
    k = m.shape(x)[-1]
    w = m.constant_int8(np.ones((n, k), dtype=np.int8), 0.01)
    b = m.bias(np.zeros(n), SCALE, 0.01)
    return m.fully_connected(x, w, b, m.activation((1, n), SCALE))


def overlapping_adds(count: int = 1000, width: int = 64) -> bytes:
    """``count`` ADDs of the input with itself, every result alive until a chain of ADDs
    sums them at the end: count^2/2 pairs of buffers alive together. A 1,000 B activation
    that dies first and a 100 B one that lives to the end leave first fit a hole the
    parts cannot fill, so first fit misses the lower bound and the MILP would be built."""
    m = ModelBuilder("rip tests: overlapping adds")
    x = m.activation((1, width), SCALE)
    early = _dense(m, x, 1000)
    late = _dense(m, x, 100)
    acc = _dense(m, early, width)
    parts = [m.add(x, x, m.activation((1, width), SCALE)) for _ in range(count)]
    for p in parts:
        acc = m.add(acc, p, m.activation((1, width), SCALE))
    out = m.add(acc, _dense(m, late, width), m.activation((1, width), SCALE))
    m.inputs([x])
    m.outputs([out])
    return m.to_bytes()


def hard_packing(count: int = 70, window: int = 14, seed: int = 3) -> bytes:
    """Activations of random sizes with staggered random lifetimes (a dynamic storage
    allocation instance, NP-hard in general): ``count`` FULLY_CONNECTED outputs, about
    ``window`` alive at a time, each consumed by an ADD into a running sum."""
    rng = np.random.default_rng(seed)
    m = ModelBuilder("rip tests: hard packing")
    k = 8
    x = m.activation((1, k), SCALE)
    acc = None
    pool: list[int] = []

    def consume(t: int) -> None:
        nonlocal acc
        n = m.shape(t)[-1]
        w = m.constant_int8(np.ones((k, n), dtype=np.int8), 0.01)
        b = m.bias(np.zeros(k), SCALE, 0.01)
        g = m.fully_connected(t, w, b, m.activation((1, k), SCALE))
        acc = g if acc is None else m.add(acc, g, m.activation((1, k), SCALE))

    for _ in range(count):
        n = int(rng.integers(64, 4096)) * 4
        w = m.constant_int8(np.ones((n, k), dtype=np.int8), 0.01)
        b = m.bias(np.zeros(n), SCALE, 0.01)
        pool.append(m.fully_connected(x, w, b, m.activation((1, n), SCALE)))
        while len(pool) > window or (pool and rng.random() < 0.3):
            consume(pool.pop(int(rng.integers(len(pool)))))
    for t in pool:
        consume(t)
    m.inputs([x])
    m.outputs([acc])
    return m.to_bytes()
