"""Estimated instructions of an op and of a fused chain (issue 12's instruction budget).

A linear model per kernel, calibrated on an emulated core (``benchmarks/calibrate_cost.py``
measures per-op instructions on QEMU with the profiling build and fits the coefficients;
they live in ``cost_model.json`` beside this module, one column per emulated board, and a
board's plans use the column measured on its core, `for_core`):

* an op alone costs ``sum(coef[class][f] * feature_f)`` over its class's features: MACs
  (the work of the inner loop), output elements (requantisation and store), output pixels
  (the per-pixel set-up) and one call;
* a fused chain costs its members alone (and its residual ADD) plus an *overhead*, linear in
  the chain's own features: the MACs and output elements of its 1x1 members and of its
  other members (a fused kernel's inner loops and requantisation may run slower or faster
  than the unfused ones), the rows every stage computes and the pixels of those rows (the
  row loop and its ring addressing), and one call; and what the row order itself costs
  where the layer-by-layer kernels take whole planes: a depthwise stage widens the kernel
  height of input rows for every output row where its layer alone widens each input row
  about once (the elements widened again), and sets each channel's operands up once an
  output row (channels x window taps x rows); a 1x1 stage is called once a row, and an odd
  row width leaves its pixel-pair tile a lone pixel in every row (rows x channels). The
  overhead is what the planner's budget counts (`fusion_choice.choose`).

Estimates are floats in instructions; nothing here plans, emits or measures.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from rip.boards import load_board
from rip.core.operators import SPECS, WINDOW_POOLS, CostClass, Op
from rip.frontend.ir import Graph, Operator

DATA = Path(__file__).with_name("cost_model.json")
DEFAULT_BOARD = "qemu-m33"  # the column of a core nothing was calibrated on (the host)
OP_FEATURES = ("macs", "outputs", "pixels", "calls")
FUSED_FEATURES = (
    "pw_macs", "other_macs", "pw_outputs", "other_outputs", "rows", "pixels", "calls",
    "dw_rewidened", "dw_operands", "pw_rows", "pw_odd",
)  # fmt: skip
CLASSES = ("conv1x1", "conv", "dw", "fc", "elementwise", "pool", "other")


def _prod(xs: Sequence[int]) -> int:
    n = 1
    for x in xs:
        n *= x
    return n


def op_class(graph: Graph, op: Operator, by_window: bool = False) -> str:
    """The cost class of an op: its operator table entry's (`OpSpec.cost_class`), refined
    per layer, the one place that looks at a layer for its class: a CONV_2D with a 1x1
    window is ``conv1x1`` (the classes of ``CLASSES`` and cost_model.json); with
    ``by_window`` a depthwise op is named by its window too (``dw 3x3``), as the
    benchmarks' per-class breakdowns are."""
    cls = SPECS[op.kind].cost_class if op.kind in SPECS else CostClass.OTHER
    if cls in (CostClass.CONV, CostClass.DEPTHWISE):
        kh, kw = graph.tensors[op.inputs[1]].shape[1:3]
        if cls == CostClass.CONV and (kh, kw) == (1, 1):
            return "conv1x1"
        if cls == CostClass.DEPTHWISE and by_window:
            return f"dw {kh}x{kw}"
    return cls.value


def _pixels(graph: Graph, tid: int) -> int:
    shape = graph.tensors[tid].shape
    return _prod(shape[1:3]) if len(shape) == 4 else 1


def op_features(graph: Graph, op: Operator) -> tuple[float, ...]:
    """``OP_FEATURES`` of one op: MACs (for ops without weights, the elements their loop
    visits: window x outputs for a pool, the larger side for the rest), output elements,
    output pixels, 1."""
    y = graph.tensors[op.outputs[0]] if op.outputs else None
    outputs = _prod(y.shape) if y is not None else 0
    ins = [graph.tensors[t] for t in op.inputs if t >= 0 and not graph.tensors[t].is_constant]
    inputs = max((_prod(t.shape) for t in ins), default=0)
    if op.kind in (Op.CONV_2D, Op.GROUPED_CONV_2D):  # the filter has a group's channels
        f = graph.tensors[op.inputs[1]].shape
        macs = outputs * f[1] * f[2] * f[3]
    elif op.kind == Op.DEPTHWISE_CONV_2D:
        f = graph.tensors[op.inputs[1]].shape
        macs = outputs * f[1] * f[2]
    elif op.kind == Op.FULLY_CONNECTED:
        macs = outputs * graph.tensors[op.inputs[1]].shape[-1]
    elif op.kind in WINDOW_POOLS:
        macs = outputs * op.params.filter[0] * op.params.filter[1]
    elif op.kind == Op.BATCH_MATMUL:  # each output sums over the left operand's depth
        x = graph.tensors[op.inputs[0]].shape
        macs = outputs * (x[-2] if op.params.adj_x else x[-1])
    else:
        macs = max(inputs, outputs)
    pixels = _pixels(graph, op.outputs[0]) if op.outputs else 0
    return (float(macs), float(outputs), float(pixels), 1.0)


def fused_features(
    graph: Graph, members: Sequence[Operator], residual: Operator | None = None
) -> tuple[float, ...]:
    """``FUSED_FEATURES`` of a chain of ``members`` (ending in ``residual`` or not)."""
    pw, other, pw_out, other_out, rows, pixels = [0.0] * 6
    rewidened, operands, pw_rows, pw_odd = [0.0] * 4
    for m in members:
        macs, outputs, *_ = op_features(graph, m)
        x = graph.tensors[m.inputs[0]].shape
        y = graph.tensors[m.outputs[0]].shape
        if op_class(graph, m) == "conv1x1":
            pw, pw_out = pw + macs, pw_out + outputs
            pw_rows += y[1]
            pw_odd += y[1] * y[3] * (y[2] % 2)
        else:
            other, other_out = other + macs, other_out + outputs
        if m.kind == Op.DEPTHWISE_CONV_2D:
            kh, kw = graph.tensors[m.inputs[1]].shape[1:3]
            rewidened += (y[1] * kh - x[1]) * x[2] * x[3]
            operands += y[1] * y[3] * kh * kw
        rows += y[1]
        pixels += y[1] * y[2]
    return (pw, other, pw_out, other_out, rows, pixels, 1.0, rewidened, operands, pw_rows, pw_odd)


def _dot(coef: dict[str, float], names: Sequence[str], xs: Sequence[float]) -> float:
    return sum(coef.get(n, 0.0) * x for n, x in zip(names, xs, strict=True))


@dataclass(frozen=True)
class CostModel:
    """Coefficients of one board: ``ops[class][feature]`` and ``fused[feature]``."""

    board: str
    ops: dict[str, dict[str, float]]
    fused_overhead: dict[str, float]

    def op(self, graph: Graph, op: Operator) -> float:
        """Estimated instructions of an op; a ``FUSED_CHAIN`` op by `chain`."""
        if op.kind == Op.FUSED_CHAIN:
            p = op.params
            return self.chain(graph, p.members, p.residual)
        coef = self.ops.get(op_class(graph, op), self.ops.get("other", {}))
        return _dot(coef, OP_FEATURES, op_features(graph, op))

    def overhead(
        self, graph: Graph, members: Sequence[Operator], residual: Operator | None = None
    ) -> float:
        """Estimated instructions of the fused chain less those of its ops run alone."""
        return _dot(self.fused_overhead, FUSED_FEATURES, fused_features(graph, members, residual))

    def chain(
        self, graph: Graph, members: Sequence[Operator], residual: Operator | None = None
    ) -> float:
        """Estimated instructions of a fused chain: its ops alone plus `overhead`."""
        alone = sum(self.op(graph, m) for m in members)
        if residual is not None:
            alone += self.op(graph, residual)
        return alone + self.overhead(graph, members, residual)

    def model(self, graph: Graph) -> float:
        """Estimated instructions of one inference (planned shifts not counted)."""
        return sum(self.op(graph, op) for op in graph.operators)


@cache
def load(board: str = DEFAULT_BOARD, path: Path = DATA) -> CostModel:
    """The calibrated coefficients of ``board`` from the data file."""
    data = json.loads(path.read_text())["boards"][board]
    return CostModel(board, data["ops"], data["fused_overhead"])


@cache
def for_core(core: str, path: Path = DATA) -> CostModel:
    """The coefficients measured on the core ``core`` (boards/*.toml): each column of the
    data file is named for the emulated board it was calibrated on, and that board's file
    names its core (qemu-m33 for cortex-m33, the Pico 2's; qemu-armv6m for cortex-m0plus,
    the Pico's). A core with no column (the host) gets DEFAULT_BOARD's."""
    columns = json.loads(path.read_text())["boards"]
    column = next((b for b in columns if load_board(b).core == core), DEFAULT_BOARD)
    return load(column, path)
