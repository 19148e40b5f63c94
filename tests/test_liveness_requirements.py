"""Liveness and per-op in-place requirements on small graphs written by our TFLite writer."""

from __future__ import annotations

import pytest
from tflite_writer import example_model, random_conv_model

from rip.allocator.planning.requirements import conv_geometry, op_scratch_bytes, requirements
from rip.allocator.planning.scratch import depthwise_rows_scratch_bytes
from rip.allocator.theory.bounds import depthwise_bound, rip_bound
from rip.core.terms import InPlaceKind
from rip.frontend.liveness import last_reader, lifetimes, live_bytes
from rip.frontend.reader import read_model
from rip.frontend.rewrite import rewrite


@pytest.fixture(scope="module")
def example():
    """32x32x3 -> conv/2 -> dw -> 1x1 expand -> dw -> 1x1 project -> ADD(skip) -> pool ->
    MEAN -> RESHAPE -> FC -> SOFTMAX."""
    return rewrite(read_model(example_model(0), name="example"))


def kinds(graph):
    return [op.kind for op in graph.operators]


def test_lifetimes_cover_producer_to_last_reader(example):
    g = example
    lives = lifetimes(g)
    producers = g.producers()
    for s, lt in lives.items():
        assert lt.size == g.tensors[s].nbytes
        if s in producers:
            assert lt.first == producers[s]
    (x,) = g.inputs
    assert lives[g.storage(x)].first == 0
    for out in g.outputs:
        assert lives[g.storage(out)].last == len(g.operators) - 1


def test_skip_connection_keeps_block_input_alive_and_blocks_in_place(example):
    g = example
    add = kinds(g).index("ADD")
    dw_first = kinds(g).index("DEPTHWISE_CONV_2D")
    block_in = g.storage(g.operators[dw_first].outputs[0])  # read by the expand conv and ADD
    expand = dw_first + 1
    assert last_reader(g)[block_in] == add
    assert lifetimes(g)[block_in].last == add
    req = requirements(g)
    # the expand conv reads block_in but is not its last reader: no candidate, and why
    assert req.ops[expand].candidates == ()
    assert "read later" in req.ops[expand].reason
    # the ADD is the last reader of both operands: both are candidates, gap 0
    assert {c.input for c in req.ops[add].candidates} == {
        g.storage(t) for t in g.operators[add].inputs
    }
    assert all(c.gap == 0 for c in req.ops[add].candidates)


def test_operator_classes_of_appendix_i(example):
    req = requirements(example)
    by_kind = {}
    for op, r in zip(example.operators, req.ops, strict=True):
        by_kind.setdefault(op.kind, []).append(r)
    for kind in ("FULLY_CONNECTED", "SOFTMAX", "GLOBAL_AVERAGE_POOL"):
        assert all(r.candidates == () for r in by_kind[kind]), kind
    for r in by_kind["DEPTHWISE_CONV_2D"]:
        assert [c.kind for c in r.candidates] == [InPlaceKind.CHANNEL]
        assert r.candidates[0].gap == 0


def test_conv_candidate_uses_dense_gather_row_bound(example):
    g = example
    req = requirements(g)
    for i, op in enumerate(g.operators):
        if op.kind != "CONV_2D" or not req.ops[i].candidates:
            continue
        (c,) = req.ops[i].candidates
        bound = rip_bound(conv_geometry(g, op), "dense", "gather", "row")
        assert (c.gap, c.workspace, c.order) == (bound.gap, bound.workspace, bound.order)


def test_graph_output_is_never_overwritten():
    g = rewrite(read_model(random_conv_model(3, h=6, w=6, c_in=4, c_out=4), name="one"))
    req = requirements(g)
    (op,) = req.ops
    assert op.candidates  # a lone conv may overwrite its input (a graph input)
    assert g.storage(g.outputs[0]) not in {c.input for c in req.candidates()}


def test_scratch_formulas():
    g = rewrite(read_model(example_model(0), name="example"))
    for op in g.operators:
        s = op_scratch_bytes(g, op)
        if op.kind == "CONV_2D":
            geom = conv_geometry(g, op)
            taps = geom.kh * geom.kw * geom.c_in
            # a pixel pair, raw and widened to int16 (rip_conv2d_fast_rq_s8)
            assert s == 2 * taps + 8 * ((taps + 3) // 4 * 4)
        elif op.kind == "DEPTHWISE_CONV_2D":
            geom = conv_geometry(g, op)
            rows = depthwise_rows_scratch_bytes(
                (1, geom.h_in, geom.w_in, geom.c_in), (1, geom.h_out, geom.w_out, geom.c_out),
                (geom.kh, geom.kw), (geom.sh, geom.sw), (geom.pad_top, geom.pad_left),
                (geom.dh, geom.dw),
            )  # fmt: skip
            # a plane, or the row-streamed kernel's table and ring where it is larger
            assert s == max(geom.h_out * geom.w_out, rows)
            assert depthwise_bound(geom).gap == 0
        elif op.kind in ("FULLY_CONNECTED", "ADD", "SOFTMAX"):
            assert s == 0
    assert requirements(g).scratch_bytes == max(op_scratch_bytes(g, op) for op in g.operators)


def test_live_bytes_is_a_lower_bound_per_step(example):
    lives = lifetimes(example).values()
    for k, total in enumerate(live_bytes(example)):
        assert total == sum(b.size for b in lives if b.first <= k <= b.last)
