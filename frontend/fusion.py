"""Fused, row-streamed convolution chains (issue 12): find them and make each one IR op.

A chain is a run of consecutive ops of the schedule, each a CONV_2D, a DEPTHWISE_CONV_2D
(depth multiplier 1) or a pooling op reading the previous one's output, where every
intermediate tensor has exactly one reader (the next member), is int8, is no graph output
and is no alias's storage. A chain may end in the residual ADD of its own input (an MBConv
block: 1x1 expand -> depthwise kxk -> 1x1 project -> ADD). Run row by row, its
intermediates are never materialised: each lives in a ring of rows that its reader's kernel
height needs (`ring_rows`), and every row is computed exactly once.

`fuse` replaces each chain by one op of kind ``FUSED_CHAIN``: inputs ``(chain input,)``,
outputs ``(chain output, ring_1, ..., ring_{n-1})``; a chain over a streamed input
(`rip.frontend.streaming`) has no input and one more output, the ring its rows arrive in.
The rings are new int8 tensors of shape ``[rows, W, C]``; being outputs nobody reads,
liveness gives each the fused op's step alone, so the MILP places them like any other
activation and the reported arena is the true one. The member ops are kept in `FusedParams`
for the code generator, the replay and the reports. `fuse` is the ``fused`` strategy's graph
only: ``rip`` and the others keep the paper's layer-by-layer graph.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from rip.core.operators import SPECS, WINDOW_POOLS, Op, spec
from rip.frontend.ir import Graph, Operator, Quant, Tensor


@dataclass(frozen=True)
class FusedParams:
    """A fused chain: ``members`` (conv / depthwise / pool ops, in order), the tensors their
    outputs would have been (``intermediates``, one per member but the last, never
    materialised), the ring tensor of each (``rings``, ``ring_rows`` rows of W * C bytes;
    an intermediate of 0 rows is stored in its input's ring slot and has no tensor in
    ``rings``), and the residual ADD that ends the chain (None: the last member writes the
    output). With a streamed input the chain reads it through ``source_ring``, filled row by
    row."""

    members: tuple[Operator, ...]
    intermediates: tuple[int, ...]
    rings: tuple[int, ...]
    ring_rows: tuple[int, ...]
    residual: Operator | None = None
    # a streamed input (``Graph.streamed``): the input tensor, the ring of its rows (an
    # output of the op like the other rings), and that ring's rows; None / 0: resident input
    source: int | None = None
    source_ring: int | None = None
    source_rows: int = 0

    @property
    def ops(self) -> tuple[Operator, ...]:
        """Every op the chain replaces, the residual ADD included."""
        return self.members + ((self.residual,) if self.residual is not None else ())

    def names(self) -> str:
        """``CONV_2D 3 > DEPTHWISE_CONV_2D 4 > CONV_2D 5 > ADD 6`` (TFLite operator indices)."""
        return " > ".join(f"{op.kind} {op.source_index}" for op in self.ops)


@dataclass(frozen=True)
class ChainSpan:
    """A candidate: schedule indices ``first`` .. ``last`` of the members, the index of
    the residual ADD ending it (None if none), and the rows of each ring (empty: the
    reader's dilated kernel height, `ring_rows`; the planner passes the schedule's own, 0
    for an intermediate stored in its input's ring slot). A
    chain that reads a streamed input may have one member."""

    first: int
    last: int
    residual: int | None = None
    rings: tuple[int, ...] = ()
    source_rows: int = 0  # rows of a streamed input's ring (0: the first member's window)

    @property
    def indices(self) -> range:
        end = self.last if self.residual is None else self.residual
        return range(self.first, end + 1)


def kernel_rows(graph: Graph, op: Operator) -> tuple[int, int, int]:
    """(kernel height, stride, dilation) along H of a stage."""
    p = op.params
    if op.kind in WINDOW_POOLS:
        return p.filter[0], p.stride[0], 1
    return graph.tensors[op.inputs[1]].shape[1], p.stride[0], p.dilation[0]


def ring_rows(graph: Graph, reader: Operator, height: int) -> int:
    """Rows of an intermediate of ``height`` rows kept while its ``reader`` streams: the
    lazy row schedule (a row is computed only when the reader's next row needs it) keeps
    exactly one receptive-field window of the reader, (KH - 1) * dilation + 1 rows."""
    kh, _, dh = kernel_rows(graph, reader)
    return min(height, (kh - 1) * dh + 1)


def stage_ok(graph: Graph, op: Operator) -> bool:
    if op.kind not in SPECS or not spec(op.kind).chain_stage:
        return False
    if op.kind == Op.DEPTHWISE_CONV_2D and op.params.depth_multiplier != 1:
        return False
    if op.kind in WINDOW_POOLS:
        return False  # no row kernel for pools yet (rip_fused.c); they end a chain
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if x.dtype != "int8" or y.dtype != "int8" or len(x.shape) != 4 or len(y.shape) != 4:
        return False
    if x.shape[0] != 1:
        return False
    return op.kind != Op.CONV_2D or graph.tensors[op.inputs[1]].is_constant


def _readers(graph: Graph) -> dict[int, set[int]]:
    """Storage id -> the ops reading it (through aliases)."""
    out: dict[int, set[int]] = {}
    for i, op in enumerate(graph.operators):
        for t in op.inputs:
            if t >= 0 and not graph.tensors[t].is_constant:
                out.setdefault(graph.storage(t), set()).add(i)
    return out


def _private(graph: Graph, tid: int, reader: int, readers: dict[int, set[int]]) -> bool:
    """``tid`` may live in a ring: its only reader is op ``reader``, it is no graph output,
    no alias points at it and it is not one itself."""
    s = graph.storage(tid)
    outputs = {graph.storage(t) for t in graph.outputs}
    aliased = s != tid or any(graph.storage(a) == s for a in graph.aliases)
    return not aliased and s not in outputs and readers.get(s) == {reader}


def _residual(graph: Graph, chain_input: int, last: int) -> int | None:
    """The ADD right after op ``last`` adding the chain's output and its input, if any."""
    i = last + 1
    if i >= len(graph.operators):
        return None
    op = graph.operators[i]
    out = graph.operators[last].outputs[0]
    if op.kind != Op.ADD or len(op.inputs) != 2 or out not in op.inputs:
        return None
    other = op.inputs[1] if op.inputs[0] == out else op.inputs[0]
    if other == out or graph.storage(other) != graph.storage(chain_input):
        return None
    a, b, y = graph.tensors[out], graph.tensors[other], graph.tensors[op.outputs[0]]
    if not (a.shape == b.shape == y.shape) or y.dtype != "int8":
        return None
    return i


def candidates(graph: Graph) -> list[ChainSpan]:
    """The maximal chains of the schedule (two members at least, or one that reads a
    streamed input), each with its residual ADD when the op after it adds the chain's input
    back (never a streamed one: its rows are gone by then)."""
    readers = _readers(graph)
    ops = graph.operators
    chains: list[ChainSpan] = []
    i = 0
    while i < len(ops):
        if not stage_ok(graph, ops[i]):
            i += 1
            continue
        j = i
        while (
            j + 1 < len(ops)
            and stage_ok(graph, ops[j + 1])
            and ops[j + 1].inputs[0] == ops[j].outputs[0]
            and _private(graph, ops[j].outputs[0], j + 1, readers)
        ):
            j += 1
        streams = graph.storage(ops[i].inputs[0]) in graph.streamed
        if j > i or streams:
            residual = None
            if not streams and _private(graph, ops[j].outputs[0], j + 1, readers):
                residual = _residual(graph, ops[i].inputs[0], j)
            chains.append(ChainSpan(i, j, residual))
        i = j + 1
    return chains


def _row_bytes(t: Tensor) -> int:
    _, w, c = t.hwc
    return w * c


def fuse(graph: Graph, chains: list[ChainSpan] | None = None) -> Graph:
    """``graph`` with each chain (default: every maximal candidate; the planner's choice
    is `rip.allocator.planning.fusion_choice.choose`) replaced by one ``FUSED_CHAIN`` op
    and its ring tensors."""
    if chains is None:
        chains = candidates(graph)
    if not chains:
        return graph
    tensors = dict(graph.tensors)
    next_id = max(tensors) + 1
    start = {c.first: c for c in chains}
    operators: list[Operator] = []
    i = 0
    while i < len(graph.operators):
        chain = start.get(i)
        if chain is None:
            operators.append(graph.operators[i])
            i += 1
            continue
        members = tuple(graph.operators[k] for k in range(chain.first, chain.last + 1))
        residual = None if chain.residual is None else graph.operators[chain.residual]
        intermediates = tuple(op.outputs[0] for op in members[:-1])
        rings, rows = [], []
        for k, (op, reader) in enumerate(itertools.pairwise(members)):
            t = graph.tensors[op.outputs[0]]
            h, w, c = t.hwc
            n = chain.rings[k] if chain.rings else ring_rows(graph, reader, h)
            rows.append(n)
            if n == 0:
                continue  # stored in its input's slot: no ring of its own
            rings.append(next_id)
            tensors[next_id] = Tensor(
                next_id, f"{t.name}/ring", (n, w, c), "int8", t.quant or Quant((1.0,), (0,))
            )
            next_id += 1
        x = members[0].inputs[0]
        source, source_ring, source_rows = None, None, 0
        if graph.storage(x) in graph.streamed:
            h, w, c = graph.tensors[x].hwc
            source, source_ring = x, next_id
            source_rows = chain.source_rows or ring_rows(graph, members[0], h)
            tensors[next_id] = Tensor(
                next_id, f"{graph.tensors[x].name}/rows", (source_rows, w, c), "int8",
                graph.tensors[x].quant,
            )  # fmt: skip
            next_id += 1
        params = FusedParams(members, intermediates, tuple(rings), tuple(rows), residual,
                             source, source_ring, source_rows)  # fmt: skip
        out = (residual or members[-1]).outputs[0]
        operators.append(
            Operator(
                Op.FUSED_CHAIN,
                () if source is not None else (x,),  # a streamed input is read from its ring
                (out, *rings, *(() if source_ring is None else (source_ring,))),
                params,
                members[0].source_index,
            )
        )
        i = max(chain.indices) + 1
    note = f"fuse: {len(chains)} chains fused ({sum(len(c.indices) for c in chains)} ops)"
    return graph.with_(tensors=tensors, operators=tuple(operators), notes=(*graph.notes, note))
