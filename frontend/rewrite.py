"""Graph rewrites: small, exact, pure passes (``Graph -> Graph``) applied after reading.

Each pass returns a new graph (the input is never mutated), leaves every operator it does not
rewrite as it was, and appends a line to ``Graph.notes`` when it changed something. The
docstrings say why each rewrite computes the same int8 bytes as the TFLite reference kernels.
``rewrite`` applies them in an order where no pass hides an opportunity from another.

Tensor readers are counted through aliases: an op reading a RESHAPE's output reads the
RESHAPE's input bytes, so the passes below ask ``_readers`` / ``_reaches_output`` rather than
``Graph.consumers``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from rip.core.operators import CONVOLUTIONS, SPECS, WINDOW_POOLS, Op, Role
from rip.core.terms import Activation
from rip.frontend.ir import (
    Graph,
    Operator,
    Padding,
    PadParams,
    ReduceParams,
    SliceParams,
    SpaceBatchParams,
    SplitParams,
)
from rip.frontend.liveness import live_bytes
from rip.frontend.movement import contiguous_offset

SPLIT_KINDS = (Op.SPLIT, Op.SPLIT_V, Op.UNPACK)  # a piece each after `split_outputs`

# What the passes read of the operator table (rip.core.operators): aliases are the ops whose
# output is their input's bytes (`alias_reshapes`); a RELU folds into a producer whose int8
# kernel applies the fused activation as a clamp of the quantized output (TFLite's
# CalculateActivationRangeQuantized; CONCATENATION has the field, but TFLite's kernels
# require it to be NONE, so a RELU after one is never fused into it).


def _role(op: Operator) -> Role | None:
    row = SPECS.get(op.kind)
    return row.role if row is not None else None


def _spec_says(op: Operator, field: str) -> bool:
    """The operator table's flag ``field`` for ``op`` (False for a kind it does not hold)."""
    row = SPECS.get(op.kind)
    return row is not None and bool(getattr(row, field))


def _readers(graph: Graph, tid: int) -> list[int]:
    """Indices of the ops reading ``tid``'s bytes, directly or through an alias of it (an op
    reading it twice, like ``ADD(x, x)``, is one reader)."""
    return [
        i
        for i, op in enumerate(graph.operators)
        if any(t >= 0 and _through(graph, t, tid) for t in op.inputs)
    ]


def _through(graph: Graph, tid: int, target: int) -> bool:
    """True if ``tid`` is ``target`` or an alias chain from ``tid`` passes through it."""
    while True:
        if tid == target:
            return True
        if tid not in graph.aliases:
            return False
        tid = graph.aliases[tid]


def _reaches_output(graph: Graph, tid: int) -> bool:
    return any(_through(graph, t, tid) for t in graph.outputs)


def _note(graph: Graph, message: str) -> Graph:
    return graph.with_(notes=(*graph.notes, message))


def _drop(operators: tuple[Operator, ...], removed: set[int]) -> tuple[Operator, ...]:
    return tuple(op for i, op in enumerate(operators) if i not in removed)


def remove_dead_ops(graph: Graph) -> Graph:
    """Remove the operators whose outputs nothing reads: no later op (directly or through an
    alias) and no graph output. TFLite Micro runs them for nothing; the planner would give
    their outputs no lifetime past their own step (a dead PAD of a graph input was placed
    over a live tensor, issue 22). One pass from the last op back (the ops are in order, the
    validator checks it), so a dead chain goes at once and the cost is linear in ops."""
    needed: set[int] = set()

    def need(tid: int) -> None:
        while tid >= 0 and tid not in needed:
            needed.add(tid)
            if tid not in graph.aliases:
                return
            tid = graph.aliases[tid]

    for t in (*graph.outputs, *graph.state):  # a state tensor is read by the next invoke
        need(t)
    removed: set[int] = set()
    for i in range(len(graph.operators) - 1, -1, -1):
        op = graph.operators[i]
        if not any(t in needed for t in op.outputs):
            removed.add(i)
            continue
        for t in op.inputs:
            need(t)
    if not removed:
        return graph
    first = sorted(removed)[:5]
    named = ", ".join(graph.operators[i].describe() for i in first)
    more = f" and {len(removed) - len(first)} more" if len(removed) > len(first) else ""
    result = graph.with_(operators=_drop(graph.operators, removed))
    return _note(
        result,
        f"remove_dead_ops: removed {len(removed)} operators whose outputs nothing reads "
        f"({named}{more})",
    )


def strip_interface(graph: Graph) -> Graph:
    """Remove the float boundary: QUANTIZE of a float graph input, DEQUANTIZE to a float
    graph output.

    Exact for the int8 core: the remaining graph computes the same int8 tensors; the
    compiled model takes and returns those int8 tensors, and ``Graph.interface`` keeps
    ``(kind, float_tensor_id, int8_tensor_id)`` so the generated API (or the caller) can
    quantize and dequantize with the int8 tensor's scale and zero point, as the removed ops
    did.
    """
    consumers = graph.consumers()
    producers = graph.producers()
    removed: set[int] = set()
    interface = list(graph.interface)
    inputs = list(graph.inputs)
    outputs = list(graph.outputs)
    for k, tid in enumerate(graph.inputs):
        users = consumers.get(tid, [])
        if graph.tensor(tid).dtype != "float32" or len(users) != 1:
            continue
        op = graph.operators[users[0]]
        if op.kind == Op.QUANTIZE and graph.tensor(op.outputs[0]).dtype == "int8":
            removed.add(users[0])
            inputs[k] = op.outputs[0]
            interface.append((Op.QUANTIZE, tid, op.outputs[0]))
    for k, tid in enumerate(graph.outputs):
        if graph.tensor(tid).dtype != "float32" or tid not in producers or consumers.get(tid):
            continue
        op = graph.operators[producers[tid]]
        if op.kind == Op.DEQUANTIZE and graph.tensor(op.inputs[0]).dtype == "int8":
            removed.add(producers[tid])
            outputs[k] = op.inputs[0]
            interface.append((Op.DEQUANTIZE, tid, op.inputs[0]))
    if not removed:
        return graph
    result = graph.with_(
        operators=_drop(graph.operators, removed),
        inputs=tuple(inputs),
        outputs=tuple(outputs),
        interface=tuple(interface),
    )
    kinds = Counter(kind for kind, *_ in interface[len(graph.interface) :])
    summary = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
    return _note(result, f"strip_interface: removed {summary}; the model runs int8 end to end")


def alias_reshapes(graph: Graph) -> Graph:
    """Turn RESHAPE and SQUEEZE of an activation into aliases: the op is removed and
    ``aliases[output] = input``; readers keep the output id, and ``Graph.storage`` resolves
    it to the bytes it shares.

    Exact: TFLite's int8 RESHAPE/SQUEEZE copy the bytes unchanged (the row-major order of
    NHWC data does not depend on the shape), so the output's bytes are the input's bytes.
    A reshape output that is a graph output stays in ``outputs``; its storage (the input)
    must then live to the end, which liveness reads through ``storage``.
    """
    aliases = dict(graph.aliases)
    removed: set[int] = set()
    for i, op in enumerate(graph.operators):
        if _role(op) is not Role.ALIAS or len(op.outputs) != 1:
            continue
        src, dst = op.inputs[0], op.outputs[0]
        a, b = graph.tensor(src), graph.tensor(dst)
        if a.is_constant or a.dtype != b.dtype or a.nbytes != b.nbytes:
            continue
        aliases[dst] = src
        removed.add(i)
    if not removed:
        return graph
    result = graph.with_(operators=_drop(graph.operators, removed), aliases=aliases)
    return _note(result, f"alias_reshapes: {len(removed)} RESHAPE/SQUEEZE ops became aliases")


def _pad_fold_blocker(graph: Graph, pad_index: int) -> str | None:
    """Why the PAD at ``pad_index`` cannot be folded into its reader, or None if it can."""
    pad = graph.operators[pad_index]
    params = pad.params
    src, dst = pad.inputs[0], pad.outputs[0]
    a, b = graph.tensor(src), graph.tensor(dst)
    if not isinstance(params, PadParams) or params.channels != (0, 0):
        return "pads the channel axis"
    if b.dtype != "int8" or a.dtype != "int8":
        return f"pads {b.dtype} data"
    if a.quant != b.quant:
        return "input and output quantization differ"
    if _reaches_output(graph, dst):
        return "its output is a graph output"
    readers = _readers(graph, dst)
    if len(readers) != 1:
        return f"its output has {len(readers)} readers"
    reader = graph.operators[readers[0]]
    # The PAD output must be the reader's data input itself, not an alias or a weight.
    if reader.inputs[0] != dst or dst in reader.inputs[1:]:
        return f"its output is not the data input of {reader.kind}"
    if reader.kind in (*CONVOLUTIONS, Op.GROUPED_CONV_2D):
        return None
    if reader.kind in WINDOW_POOLS:
        if reader.params.padding != Padding():
            return f"{reader.kind} has padding of its own"
        return None
    return f"its reader {reader.kind} has no padding to absorb it"


def fold_pad(graph: Graph) -> Graph:
    """Fold an explicit spatial PAD into the padding of the one op that reads it.

    Into CONV_2D / DEPTHWISE_CONV_2D: exact. TFLite's quantized PAD fills with the output
    zero point, i.e. the value 0 (PAD keeps its input's quantization, checked here); the int8
    convolution adds the input offset (-zero point) to every tap and skips taps outside the
    input, so a skipped tap contributes (zp - zp) * w = 0, the same as a padded cell. The
    PAD's amounts are added to the conv's own padding and the conv reads the PAD's input.

    Into MAX_POOL_2D / AVERAGE_POOL_2D with no padding of its own (VALID): TFLite pooling
    skips cells outside the input, while after an explicit PAD they hold the zero point and
    count (in the max, and in the average's divisor). The folded pool gets
    ``PoolParams.pad_counts = True``, which asks the kernel for exactly the PAD semantics.
    A pool with padding of its own would mix the two rules, so it is left alone.

    A PAD with several readers, a channel pad, or one that feeds a graph output or any
    other op stays as an operator. PADs are folded to a fixed point, so a chain of PADs
    before one conv folds completely.
    """
    into: Counter[str] = Counter()
    changed = True
    while changed:
        changed = False
        # Back to front: deleting a PAD leaves earlier indices valid, and the last PAD of a
        # chain folds first, so the one before it then sees the conv as its reader.
        for i in reversed(range(len(graph.operators))):
            op = graph.operators[i]
            if op.kind != Op.PAD or _pad_fold_blocker(graph, i) is not None:
                continue
            into[graph.operators[_readers(graph, op.outputs[0])[0]].kind] += 1
            graph = _fold_one_pad(graph, i)
            changed = True
    kept = [
        f"{op.describe()}: {_pad_fold_blocker(graph, i)}"
        for i, op in enumerate(graph.operators)
        if op.kind == Op.PAD
    ]
    if not into and not kept:
        return graph
    summary = ", ".join(f"{n} into {kind}" for kind, n in sorted(into.items()))
    parts = [f"folded {sum(into.values())} PAD ops ({summary})"] if into else []
    if kept:
        parts.append(f"kept {len(kept)} ({'; '.join(kept)})")
    return _note(graph, "fold_pad: " + "; ".join(parts))


def _fold_one_pad(graph: Graph, pad_index: int) -> Graph:
    pad = graph.operators[pad_index]
    src, dst = pad.inputs[0], pad.outputs[0]
    reader_index = _readers(graph, dst)[0]
    reader = graph.operators[reader_index]
    padding = reader.params.padding + pad.params.padding
    if reader.kind in WINDOW_POOLS:
        params: object = replace(reader.params, padding=padding, pad_counts=True)
    else:
        params = replace(reader.params, padding=padding)
    new_reader = reader.with_(inputs=(src, *reader.inputs[1:]), params=params)
    operators = list(graph.operators)
    operators[reader_index] = new_reader
    del operators[pad_index]
    return graph.with_(operators=tuple(operators))


def mean_to_global_pool(graph: Graph) -> Graph:
    """MEAN over the spatial axes {1, 2} of a 4-D NHWC tensor becomes kind
    ``GLOBAL_AVERAGE_POOL``.

    Exact: only the kind changes; ``ReduceParams`` and both tensors (with the output's own
    quantization, which may differ from the input's) are kept, and the kernel for this kind
    implements TFLite's int8 MEAN arithmetic (sum, then one requantization) bit for bit.
    The new kind tells the planner and code generator it is a spatial reduction per channel.
    A 16x8 MEAN stays one (the reduction kernel runs it in int16).
    """
    operators = list(graph.operators)
    count = 0
    for i, op in enumerate(operators):
        if op.kind != Op.MEAN or not isinstance(op.params, ReduceParams):
            continue
        x = graph.tensor(op.inputs[0])
        if x.dtype == "int8" and len(x.shape) == 4 and set(op.params.axes) == {1, 2}:
            operators[i] = op.with_(kind=Op.GLOBAL_AVERAGE_POOL)
            count += 1
    if not count:
        return graph
    result = graph.with_(operators=tuple(operators))
    return _note(result, f"mean_to_global_pool: {count} MEAN ops over H, W became global pools")


def fold_relu(graph: Graph) -> Graph:
    """Fold a standalone RELU / RELU6 into the fused activation of the op producing its input.

    Conditions: the producer is a kind whose int8 kernel clamps its output with the fused
    activation and has activation NONE; the RELU's input and output have the same dtype and
    quantization; the RELU is the only reader of its input (counting aliases), which is not
    a graph output. Exact: with equal quantization, TFLite's int8 RELU is a clamp to
    [zero_point, 127] and RELU6 to [zero_point, zero_point + round(6 / scale)] (clamped to
    int8), which is precisely the range CalculateActivationRangeQuantized gives the fused
    activation. The producer then writes the RELU's output tensor directly.
    """
    producers = graph.producers()
    operators: list[Operator | None] = list(graph.operators)
    count = 0
    for i, op in enumerate(graph.operators):
        if op.kind not in (Op.RELU, Op.RELU6) or op.inputs[0] not in producers:
            continue
        src, dst = op.inputs[0], op.outputs[0]
        p = producers[src]
        producer = operators[p]
        if producer is None or not _spec_says(producer, "fused_activation"):
            continue
        if getattr(producer.params, "activation", None) != Activation.NONE:
            continue
        a, b = graph.tensor(src), graph.tensor(dst)
        if a.dtype != b.dtype or a.quant != b.quant or a.dtype != "int8":
            continue
        if _readers(graph, src) != [i] or _reaches_output(graph, src) or src in graph.inputs:
            continue
        operators[p] = producer.with_(
            outputs=tuple(dst if t == src else t for t in producer.outputs),
            params=replace(producer.params, activation=Activation(op.kind)),
        )
        operators[i] = None
        count += 1
    if not count:
        return graph
    result = graph.with_(operators=tuple(op for op in operators if op is not None))
    return _note(result, f"fold_relu: {count} RELU/RELU6 ops fused into their producers")


# ---- data movement ------------------------------------------------------------------------------


def split_outputs(graph: Graph) -> Graph:
    """SPLIT, SPLIT_V and UNPACK become one single-output op per piece (same kind, its
    ``SliceParams``, the data tensor as the only input).

    Exact: TFLite's int8 kernels copy each output's bytes from its own region of the input,
    independently of the other outputs; each new op copies exactly those bytes, and a piece
    no op reads and the graph does not output is dropped. Every later stage then sees ops
    with one output."""
    operators: list[Operator] = []
    count = 0
    for op in graph.operators:
        if not isinstance(op.params, SplitParams):
            operators.append(op)
            continue
        data = op.inputs[1] if op.kind == Op.SPLIT else op.inputs[0]
        for out, piece in zip(op.outputs, op.params.slices, strict=True):
            if not _readers(graph, out) and not _reaches_output(graph, out):
                continue  # a piece nobody reads is never computed
            operators.append(op.with_(inputs=(data,), outputs=(out,), params=piece))
        count += 1
    if not count:
        return graph
    result = graph.with_(operators=tuple(operators))
    return _note(result, f"split_outputs: {count} SPLIT/SPLIT_V/UNPACK ops became one op a piece")


def alias_views(graph: Graph) -> Graph:
    """EXPAND_DIMS, and a slice whose bytes are one contiguous run of its input (e.g. a
    SPLIT along the outermost non-unit axis), become views: the op is removed,
    ``aliases[output] = input`` and ``view_offsets[output]`` = the run's first byte.

    Exact: these int8 kernels copy the bytes unchanged, and the bytes of a contiguous slice
    are the input's bytes from that offset on. Liveness follows the alias to the storage
    tensor, so the producer's buffer lives while any view of it is read; a view is never
    overwritten in place (``rip.allocator.planning.requirements``).

    So the pieces of a SPLIT, SPLIT_V or UNPACK as views keep their whole source alive
    until the last piece is read, where copies (TFLite Micro's) free the source at once
    and each piece after its own reader: an unrolled recurrent layer that unpacks its
    input sequence, one step a piece, holds the whole sequence to the last step. The
    pieces of one source stay copies (one op each) where that lowers the largest live set
    of the graph (``live_bytes``, the floor of any plan without in-place reuse)."""
    aliases = dict(graph.aliases)
    offsets = dict(graph.view_offsets)
    removed: set[int] = set()
    pieces: dict[int, set[int]] = {}  # a split source -> the ops of its pieces made views
    for i, op in enumerate(graph.operators):
        if _role(op) is Role.VIEW:
            offset: int | None = 0
        elif _spec_says(op, "view_when_contiguous") and isinstance(op.params, SliceParams):
            offset = contiguous_offset(graph.tensor(op.inputs[0]).shape, op.params)
        else:
            continue
        src, dst = op.inputs[0], op.outputs[0]
        a, b = graph.tensor(src), graph.tensor(dst)
        if offset is None or a.is_constant or a.dtype != b.dtype or a.quant != b.quant:
            continue
        aliases[dst] = src
        if offset:
            offsets[dst] = offset * (a.nbytes // max(1, _elements(a.shape)))
        removed.add(i)
        if op.kind in SPLIT_KINDS:
            pieces.setdefault(src, set()).add(i)
    if not removed:
        return graph

    def viewed(ops: set[int]) -> Graph:
        """The graph with the ops ``ops`` (of those found above) made views."""
        keep = set(graph.aliases) | {graph.operators[i].outputs[0] for i in ops}
        return graph.with_(
            operators=_drop(graph.operators, ops),
            aliases={t: v for t, v in aliases.items() if t in keep},
            view_offsets={t: v for t, v in offsets.items() if t in keep},
        )

    copied = 0
    floor = max(live_bytes(viewed(removed)), default=0) if pieces else 0
    for group in pieces.values():
        lower = max(live_bytes(viewed(removed - group)), default=0)
        if lower < floor:
            removed, floor, copied = removed - group, lower, copied + len(group)
    result = viewed(removed)
    note = f"alias_views: {len(removed)} slices and EXPAND_DIMS became views"
    if copied:
        note += f"; {copied} pieces of a split stay copies (they free their source sooner)"
    return _note(result, note)


def _elements(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def fold_space_batch(graph: Graph) -> Graph:
    """SPACE_TO_BATCH_ND -> CONV_2D / DEPTHWISE_CONV_2D -> BATCH_TO_SPACE_ND, as older
    converters emit a dilated convolution, becomes that dilated convolution.

    With block (bh, bw), paddings (pt, pb, pl, pr) and crops (ct, cb, cl, cr), output row r
    of the chain is the VALID convolution of batch r % bh at row r // bh, i.e. of padded
    input rows r + ct + bh * t (t over the taps): the convolution with dilation bh and
    padding (pt - ct, pb - cb) (likewise for columns). Folded when the convolution has
    stride 1, no dilation or padding of its own, batch 1, both crops fit inside the
    paddings, both block moves keep their tensors' quantization, and each intermediate
    tensor has one reader. Padded cells: the convolution skips them (they add (zp - zp) * w
    = 0); TFLite Micro's SPACE_TO_BATCH_ND fills them with its params' output_offset, which
    its Prepare never sets (0 in practice), so a fold that reads padding also needs the
    input zero point 0."""
    producers = graph.producers()
    count = 0
    changed = True
    while changed:
        changed = False
        for k, b2s in enumerate(graph.operators):
            folded = _fold_one_space_batch(graph, k, b2s, producers)
            if folded is not None:
                graph, producers, changed = folded, folded.producers(), True
                count += 1
                break
    if not count:
        return graph
    return _note(graph, f"fold_space_batch: {count} dilated convolutions rebuilt")


def _fold_one_space_batch(
    graph: Graph, k: int, b2s: Operator, producers: dict[int, int]
) -> Graph | None:
    if b2s.kind != Op.BATCH_TO_SPACE_ND or not isinstance(b2s.params, SpaceBatchParams):
        return None
    conv_at = producers.get(b2s.inputs[0])
    conv = graph.operators[conv_at] if conv_at is not None else None
    if conv is None or conv.kind not in CONVOLUTIONS:
        return None
    s2b_at = producers.get(conv.inputs[0])
    s2b = graph.operators[s2b_at] if s2b_at is not None else None
    if s2b is None or s2b.kind != Op.SPACE_TO_BATCH_ND or s2b.params.block != b2s.params.block:
        return None
    x, t1, t2, y = s2b.inputs[0], s2b.outputs[0], conv.outputs[0], b2s.outputs[0]
    p = conv.params
    if p.stride != (1, 1) or p.dilation != (1, 1) or p.padding != Padding():
        return None
    for t in (t1, t2):
        if len(_readers(graph, t)) != 1 or _reaches_output(graph, t) or t in graph.aliases:
            return None
    if conv.inputs[0] != t1 or t1 in conv.inputs[1:]:
        return None
    tx, ty = graph.tensor(x), graph.tensor(y)
    if tx.quant != graph.tensor(t1).quant or ty.quant != graph.tensor(t2).quant:
        return None
    if tx.shape[:1] != (1,) or tx.dtype != "int8":
        return None
    (pt, pb), (pl, pr) = s2b.params.pads
    (ct, cb), (cl, cr) = b2s.params.pads
    padding = Padding(pt - ct, pb - cb, pl - cl, pr - cr)
    if min(padding.as_tuple()) < 0:
        return None
    if padding != Padding() and (tx.quant is None or tx.quant.zero_point[0] != 0):
        return None
    new = conv.with_(
        inputs=(x, *conv.inputs[1:]),
        outputs=(y,),
        params=replace(p, dilation=s2b.params.block, padding=padding),
    )
    assert conv_at is not None and s2b_at is not None  # conv and s2b were found above
    operators = list(graph.operators)
    operators[conv_at] = new
    return graph.with_(operators=_drop(tuple(operators), {s2b_at, k}))


PASSES = (
    remove_dead_ops,
    strip_interface,
    split_outputs,
    fold_space_batch,
    fold_pad,
    fold_relu,
    mean_to_global_pool,
    alias_reshapes,
    alias_views,
)


def rewrite(graph: Graph) -> Graph:
    """Apply every pass: interface first (so PADs and RELUs see the int8 graph), the folds
    next, and aliasing last (so the folds see RESHAPE readers as ordinary ops)."""
    for rewrite_pass in PASSES:
        graph = rewrite_pass(graph)
    return graph
