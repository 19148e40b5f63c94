"""Documented size limits: what rip refuses before it spends unbounded memory or time.

No board rip targets has more than 520 KB of SRAM (the Pico 2); the host board has no SRAM
limit, so rip sets one. Everything here is checked at an entry point (the model validator,
``rip-bounds``, the simulator) and refused with one line naming the field, never planned.
See docs/RELIABILITY.md.
"""

from __future__ import annotations

# Largest activation tensor, and largest set of activations alive at one step, that rip
# plans (host board included): 64 MiB, over a hundred times the largest board's SRAM. The
# plan replay keeps a map of the arena, so this also bounds its memory.
HOST_LIMIT_BYTES = 64 << 20

# Largest total of constant data (weights, biases, tables) rip compiles: 16 MiB, the most
# flash an RP2350 maps (a Pico has 2 MiB, a Pico 2 4 MiB). Each byte becomes about five
# bytes of C source and far more compiler memory: a 105 MB model ran out of memory.
MAX_WEIGHT_BYTES = 16 << 20

# Largest constant data rip writes as C initializers for a board without flash (the host):
# the weights and the test input, 4 MiB, a Pico 2's flash. gcc needs about 150 B of memory
# per initializer byte: a 1x1x1x2^24 input (an 80 MB model_data.c) took 2.5 GB and 3 min.
MAX_HOST_DATA_BYTES = 4 << 20

# Largest convolution or pooling window: the closed-form gap (Theorem 13) visits every
# kernel breakpoint pair and scans the kernel for each, kh * kw * (kh + kw) steps (a few
# seconds at 64 x 64). Real models use at most 10 x 8.
MAX_KERNEL_WORK = 1 << 19

# Largest spatial extent (height, width, padded or dilated) of one layer: 2^16.
MAX_EXTENT = 1 << 16

# Largest array the corruption simulator builds (elements; 8 bytes each): 2^24, 128 MiB.
MAX_SIMULATION_CELLS = 1 << 24


def kernel_work(kh: int, kw: int) -> int:
    """Steps the closed-form gap takes for a kh x kw window (see MAX_KERNEL_WORK)."""
    return kh * kw * (kh + kw)
