"""Streamed input (issue 25, ``--stream-input``): the model's input arrives row by row, as a
camera delivers a frame, instead of lying whole in the arena.

`stream_input` marks the input ``streamed`` on the graph after checking that the one op
reading it can consume rows: a convolution or depthwise stage of a fused chain
(`rip.frontend.fusion.stage_ok`), so that the ``fused`` strategy can run it (alone, or with
the ops after it) as a chain whose input is a ring of rows filled by the source. From then
on the input is no tensor of the arena: liveness skips it (`rip.frontend.liveness`), its
reader gets no in-place candidate over it, and the chain reading it holds only the rows its
first stage's window needs (`rip.allocator.theory.fused.source_rows`). The values are the
same: TFLite Micro's output is the oracle whichever way the input arrives.
"""

from __future__ import annotations

from rip.core.errors import ModelError
from rip.frontend.fusion import stage_ok
from rip.frontend.ir import Graph


def stream_input(graph: Graph, index: int = 0) -> Graph:
    """``graph`` with input ``index`` streamed; a `ModelError` naming the input, its reader
    and the reason when it cannot stream."""
    if not 0 <= index < len(graph.inputs):
        raise ModelError(f"{graph.name}: --stream-input: the model has no input {index}")
    tid = graph.inputs[index]
    t = graph.tensors[tid]
    what = f"{graph.name}: --stream-input: input {index} (tensor {tid} '{t.name}')"

    def refuse(why: str) -> ModelError:
        return ModelError(f"{what} cannot stream: {why}")

    if t.dtype != "int8" or len(t.shape) != 4 or t.shape[0] != 1:
        raise refuse(f"it is {t.dtype} {list(t.shape)}, not an int8 [1, H, W, C] image")
    if graph.storage(tid) != tid or any(graph.storage(a) == tid for a in graph.aliases):
        raise refuse("a view shares its bytes (it would have to be whole in the arena)")
    if tid in {graph.storage(o) for o in graph.outputs}:
        raise refuse("it is also an output of the model")
    readers = [i for i, op in enumerate(graph.operators) if tid in op.inputs]
    if len(readers) != 1:
        raise refuse(f"{len(readers)} ops read it; a streamed row is read by one op only")
    op = graph.operators[readers[0]]
    where = f"its reader {op.kind} (operator {op.source_index})"
    if op.inputs[0] != tid or op.inputs.count(tid) != 1:
        raise refuse(f"{where} reads it as another operand than its input")
    if not stage_ok(graph, op):
        raise refuse(f"{where} is not a CONV_2D or DEPTHWISE_CONV_2D a fused chain can start with")
    note = f"stream: input {index} (tensor {tid}) streams in row by row, read by {op.kind}"
    return graph.with_(streamed=(*graph.streamed, tid), notes=(*graph.notes, note))
