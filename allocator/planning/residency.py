"""Resident weights (issue 26): the model's constant data in SRAM, copied from flash once at
start-up: all of it when it fits beside the arena, else the ops' that gain most.

On a Pico every weight the kernels read through the 16 KB XIP cache is a potential miss.
Staging (staging.py) copies a thrashing filter into arena holes before its op, which pays
the copy on every inference and leaves the compulsory misses of every filter that is read
once: the whole of a fully connected model such as MLPerf Tiny's anomaly detection (88.8% of
its estimated Pico 2 cycles stalled on flash). Where the board's SRAM holds the constants
beside the arena, the SDK's own C runtime copies them at boot (they are emitted into
``.data``, codegen's ``RIP_CONSTANT``) and no inference reads flash for data at all. Where
they do not all fit, the SRAM left holds the ops' whose flash reads stall longest per byte
(staging's `flash_stalls`: the filters swept many times first), and staging works on the
others.

Whether they fit is decided here, before any code exists, from `constant_bytes`: an upper
bound of what the code generator emits per op (its packed filters, per-channel records and
params; tests/test_residency.py checks it against the symbols of compiled ``model_data.c``
files). The arena, its scratch, the SDK's static data and stack and the resident bytes must
all fit every board the plan is for (an emulated board's Pico too, as staging's
`arena_limit`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from rip.allocator.planning.placement import align_up
from rip.boards import Board
from rip.core import kernel_variants as kv
from rip.core.errors import FitError
from rip.core.operators import Op
from rip.core.terms import WeightsIn
from rip.frontend.ir import Graph, Operator

# Per op, the params structs, dims and small tables the generator emits beside its arrays:
# the most any op of the test models needs, with room (tests/test_residency.py).
PARAMS_BYTES_PER_OP = 256
CHANNEL_RECORD_BYTES = 16  # a rip_fast_channel (bias, multiplier, round, shift) per channel
# SRAM residency never takes: the heap's and an application's room to grow beside the model
HEADROOM_BYTES = 4096


def _even(n: int) -> int:
    return n + n % 2


def packed_filter_bytes(op: Operator, shape: tuple[int, ...]) -> int:
    """The most a conv-like op's packed filter takes: CONV_2D and FULLY_CONNECTED in channel
    pairs with rows padded to 4 (codegen's pack_filter_pairs); depthwise in channel groups
    of 4 (pack_depthwise_filter), (KW - 1) / 2 words a kernel row where the column-pair
    engine runs it, else widened to int16 in tap pairs."""
    if op.kind == Op.DEPTHWISE_CONV_2D:
        _, kh, kw, c = shape
        sw, dw = op.params.stride[1], op.params.dilation[1]
        if kv.dw_cols_tile(kh, kw, sw, dw) is not None:
            return 4 * ((kw - 1) // 2) * kh * align_up(c, 4)
        return 2 * _even(kh * kw) * align_up(c, 4)
    c_out, taps = shape[0], 1
    for d in shape[1:]:
        taps *= d
    return _even(c_out) * align_up(taps, 4)


def op_constant_bytes(graph: Graph, op: Operator) -> int:
    """An upper bound of the constant bytes the generator emits for ``op`` (a fused chain:
    its members'): each constant input at its packed size, a per-channel record per output
    channel of a conv-like op (its bias, multiplier and shift: 12 of the record's 16 bytes
    where the kernel keeps them apart), an ADD's or SUB's term table, and `PARAMS_BYTES_PER_OP`
    (a fused chain's own too)."""
    if op.kind == Op.FUSED_CHAIN:
        ops = op.params.ops  # the members and the residual ADD
        return PARAMS_BYTES_PER_OP + sum(op_constant_bytes(graph, m) for m in ops)
    total = PARAMS_BYTES_PER_OP
    if op.kind in (Op.ADD, Op.SUB):
        elements = graph.tensors[op.outputs[0]].nbytes  # int8
        total += kv.ADD_TERMS_BYTES if elements >= kv.ADD_TERMS_MIN_ELEMENTS else 0
    conv_like = op.kind in (Op.CONV_2D, Op.DEPTHWISE_CONV_2D, Op.FULLY_CONNECTED)
    for k, t in enumerate(op.inputs):
        if t < 0 or graph.tensors[t].data is None:
            continue
        tensor = graph.tensors[t]
        if conv_like and k == 1:
            total += packed_filter_bytes(op, tuple(tensor.shape))
            c_out = tensor.shape[-1] if op.kind == Op.DEPTHWISE_CONV_2D else tensor.shape[0]
            total += CHANNEL_RECORD_BYTES * align_up(c_out, 4)
        elif conv_like and k == 2:
            pass  # the bias: folded into the records, or 4 of their 16 bytes a channel
        else:
            total += align_up(tensor.nbytes, 4)
    return total


def constant_bytes(graph: Graph) -> int:
    """An upper bound of the model's constant data (`op_constant_bytes` of every op; the
    default test inputs stay in flash: the harness copies them once into the arena)."""
    return sum(op_constant_bytes(graph, op) for op in graph.operators)


def boards_left(boards: list[Board], used: int) -> int | None:
    """SRAM every board of ``boards`` leaves beside ``used`` bytes and its SDK's static data
    and stack (negative where they do not fit); None when none of them has an SRAM limit
    (the host)."""
    left = [b.sram_bytes - used - b.fixed_overhead_bytes for b in boards if b.sram_bytes]
    return min(left) if left else None


def sram_left(boards: list[Board], arena_bytes: int) -> int | None:
    """SRAM every board of ``boards`` leaves for constants beside an arena of
    ``arena_bytes`` (the scratch in it or added to it) and `HEADROOM_BYTES`
    (`boards_left`)."""
    return boards_left(boards, arena_bytes + HEADROOM_BYTES)


def resident_ops(
    graph: Graph,
    boards: list[Board],
    arena_bytes: int,
    mode: WeightsIn,
    gains: Mapping[int, int] | None,
) -> tuple[tuple[int, ...], int]:
    """The ops whose constant data is made resident in SRAM, and the bound of its bytes
    (`op_constant_bytes`). ``gains``: per op, the flash stall cycles an inference spends on
    its constants (staging's `flash_stalls`), None on a board with no flash cache model.

    ``auto``: every op where the whole fits what `sram_left` leaves, else the set of ops
    that saves the most stall and fits (`most_gain`); nothing without a flash model.
    ``sram``: every op, or a FitError when they do not fit. ``flash``: none."""
    if mode == WeightsIn.FLASH or (mode == WeightsIn.AUTO and gains is None):
        return (), 0
    sizes = [op_constant_bytes(graph, op) for op in graph.operators]
    left = sram_left(boards, arena_bytes)
    if left is None or sum(sizes) <= left:
        return tuple(range(len(sizes))), sum(sizes)
    if mode == WeightsIn.SRAM:
        raise FitError(
            f"--weights sram: the constant data (at most {sum(sizes):,} B) does not fit the "
            f"{max(0, left):,} B of SRAM the arena ({arena_bytes:,} B) leaves on "
            f"{', '.join(b.name for b in boards)}"
        )
    assert gains is not None
    chosen = most_gain(sizes, [max(0, gains.get(i, 0)) for i in range(len(sizes))], left)
    return chosen, sum(sizes[i] for i in chosen)


KNAPSACK_CELLS = 16384  # capacity steps of the exact fill: sizes rounded up to a step


def most_gain(sizes: Sequence[int], gains: Sequence[int], capacity: int) -> tuple[int, ...]:
    """The items (indices, ascending) of largest total gain whose sizes sum to at most
    ``capacity``: the 0/1 knapsack solved exactly by dynamic programming over capacity in
    steps of ``ceil(capacity / KNAPSACK_CELLS)`` bytes (at least 64), every size rounded up
    to whole steps, so that a chosen set always fits (a greedy fill by gain per byte can
    leave out a dense op that one byte too few would have taken, and fill with worse)."""
    if capacity <= 0:
        return ()
    step = max(64, -(-capacity // KNAPSACK_CELLS))
    cells = capacity // step
    units = [-(-s // step) for s in sizes]
    best = np.zeros(cells + 1, dtype=np.int64)  # best gain within c steps, items so far
    took = np.zeros((len(sizes), cells + 1), dtype=bool)
    for i, (u, g) in enumerate(zip(units, gains, strict=True)):
        if g <= 0 or u > cells:
            continue
        with_it = best[: cells + 1 - u] + g
        better = with_it > best[u:]
        took[i, u:] = better
        best[u:] = np.where(better, with_it, best[u:])
    chosen, c = [], cells
    for i in range(len(sizes) - 1, -1, -1):
        if took[i, c]:
            chosen.append(i)
            c -= units[i]
    return tuple(sorted(chosen))
