"""Two cores running one plan (issue 27): the convolutions split by output channels over
both cores, synchronised tile by tile at lag 0 (kernels/rip_cores.h), planned with a
scratch per core and the one-core gap, replayed with the two-core simulator over the
kernel's own tiles; on the host the second core is a thread, and every output byte is
TFLite Micro's."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_strategies import layers
from paths import SHARED, shared_path
from tflite_writer import random_conv_model

from rip.allocator.planning.options import DEFAULT_SHARE_SLACK, PlanOptions
from rip.allocator.planning.parallel import plan_strategies
from rip.allocator.planning.replay import replay
from rip.allocator.planning.requirements import (
    op_min_scratch_bytes,
    requirements,
    shared_by_cores,
)
from rip.allocator.planning.strategies import variant
from rip.allocator.theory.geometry import ConvGeometry
from rip.allocator.theory.simulate import simulate_rip
from rip.allocator.theory.two_core_fast import fast_rip_gap
from rip.allocator.theory.two_core_programs import RipSchedule
from rip.codegen.emit import emit_model
from rip.codegen.reference import checksum, reference_outputs
from rip.core.errors import ReplayError
from rip.core.kernel_variants import conv_sweep_tiles
from rip.core.terms import Strategy
from rip.firmware.host_project import build_host, run_host, write_host_project
from rip.frontend.reader import read_model
from rip.frontend.rewrite import rewrite


def _tiles(n: int, draw_sizes: list[int]) -> tuple[int, ...]:
    """Tiles of the drawn sizes (1 to 9) covering n pixels, the last one cut to fit."""
    out, left = [], n
    for size in draw_sizes:
        if left == 0:
            break
        out.append(min(size, left))
        left -= out[-1]
    if left:
        out.append(left)
    return tuple(out)


@settings(max_examples=120, deadline=None)
@given(
    geom=layers(max_extent=10, max_channels=12, max_kernel=3, max_stride=2, max_pad=1),
    sizes=st.lists(st.integers(1, 9), min_size=1, max_size=40),
)
def test_two_cores_at_lag_0_need_no_more_gap_than_one_core_per_pixel(geom, sizes):
    """Any tiles, each gathered whole before a store, at lag 0: the two-core simulator's gap
    is never above the per-pixel one-core gap the planner plans with; tiles all of one size
    give what the constant-tile simulator gives."""
    n = geom.h_out * geom.w_out
    tiles = _tiles(n, sizes)
    planned = simulate_rip(geom, "dense", "gather", "row", "fast")
    assert fast_rip_gap(geom, 0, tiles=tiles) <= planned
    for t in (1, 2, 3):
        same = (t,) * (n // t) + ((n % t,) if n % t else ())
        if n % t == 0:
            assert fast_rip_gap(geom, 0, tiles=same) == fast_rip_gap(geom, 0, RipSchedule(tile=t))


@settings(max_examples=120, deadline=None)
@given(
    geom=layers(max_extent=10, max_channels=12, max_kernel=3, max_stride=2, max_pad=1),
    sizes=st.lists(st.integers(1, 4), min_size=1, max_size=40),
)
def test_tiles_in_turns_need_no_more_gap_than_one_core_per_pixel(geom, sizes):
    """The kernel's default split, tiles taken in turns with all their channels (core 1 one
    unit ahead): the two-core simulator's gap is never above the planned per-pixel gap."""
    tiles = _tiles(geom.h_out * geom.w_out, sizes)
    planned = simulate_rip(geom, "dense", "gather", "row", "fast")
    assert fast_rip_gap(geom, 0, tiles=tiles, turns=True) <= planned


def test_a_core_one_tile_ahead_corrupts_at_the_planned_gap():
    """Lag 1 (a core storing a tile before the other gathered it) needs more than lag 0 on
    a channel-growing pointwise layer in the kernel's triples: the planned gap is then
    unsafe, so the kernel's wait before each store is what makes it safe."""
    geom = ConvGeometry(7, 7, 16, 48)
    tiles = conv_sweep_tiles(49, 3)
    planned = simulate_rip(geom, "dense", "gather", "row", "fast")
    assert fast_rip_gap(geom, 0, tiles=tiles) <= planned < fast_rip_gap(geom, 1, tiles=tiles)


def test_tiles_that_do_not_cover_the_layer_are_refused():
    with pytest.raises(Exception, match="do not cover"):
        fast_rip_gap(ConvGeometry(4, 4, 8, 8), 0, tiles=(3, 3))


def _plan(model: bytes | Path, strategy: str, cores: int, slack: float = 1.0):
    """The rewritten graph, and ``strategy``'s variant graph, requirements (the ops both cores
    share among them) and replayed plan on ``cores`` cores (``fused``: no instruction
    budget, so that the chains the planner fuses run; ``rip``: every op its fastest kernel,
    the scratch never cut to a lean kernel's). ``slack``: how far sharing may raise
    the floor (PlanOptions.share_slack); a one-layer model's only op sets it, so the tests
    of one layer let it rise (1.0) to share that layer at all."""
    source = rewrite(read_model(model, name="m"))
    # rip: no instruction budget to cut the scratch with (the lean kernels do not share)
    budget = None if strategy == Strategy.FUSED else 0.0
    options = PlanOptions(max_overhead=budget, cores=cores, share_slack=slack)
    v = variant(strategy, source, requirements(source, cores=cores), options)
    return source, v.graph, v.req, plan_strategies({v.strategy: v}, options, None, 1)[v.strategy]


def _run(model: bytes | Path, tmp: Path, strategy: str, cores: int = 2, slack: float = 1.0):
    """Plan, emit, build and run on the host with ``cores`` (core 1 a thread); the checksum,
    TFLite Micro's, the emitted model and the plan."""
    source, graph, req, plan = _plan(model, strategy, cores, slack)
    emitted = emit_model(graph, req, plan, strategy)
    out = tmp / f"{strategy}-{cores}"
    write_host_project(emitted, out)
    build_host(out)
    return run_host(out).checksum, checksum(reference_outputs(model, source)), emitted, plan


@pytest.mark.slow
@settings(max_examples=8, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    hw=st.tuples(st.integers(3, 10), st.integers(3, 10)),
    kernel=st.sampled_from([(1, 1), (3, 3), (1, 3)]),
    stride=st.integers(1, 2),
    channels=st.tuples(st.integers(1, 12), st.integers(4, 24)),
)
def test_random_convolutions_in_place_on_two_cores_match_tflite_micro(
    tmp_path_factory, seed, hw, kernel, stride, channels
):
    model = random_conv_model(seed, *hw, channels[0], channels[1], kernel, stride)
    got, want, emitted, _ = _run(model, tmp_path_factory.mktemp("conv"), "rip")
    assert got == want
    assert any(op.shared for op in emitted.ops)


def test_the_emitted_two_core_model_shares_convolutions_and_splits_their_scratch(tmp_path):
    model = random_conv_model(7, 8, 8, 8, 16, 3)
    _, graph, req, plan = _plan(model, "rip", 2)
    emitted = emit_model(graph, req, plan, "rip")
    text = emitted.files["model.c"]
    assert emitted.cores == 2 and '#include "rip_cores.h"' in text
    assert "static const rip_context rip_op0_ctxs[3]" in text
    assert "&rip_op0_ctxs[share]" in text and "rip_core_barrier(core);" in text
    one = emit_model(*_plan(model, "rip", 1)[1:], "rip").files["model.c"]
    assert "rip_cores.h" not in one and "rip_model_run" not in one


def test_the_replay_refuses_a_two_core_scratch_of_one_core(tmp_path):
    """A shared op's scratch buffer must hold one per core: a buffer of the least one core
    needs is refused for an op the plan shares, and the two-core plan is accepted."""
    model = random_conv_model(3, 6, 6, 8, 16, 3)
    _, graph, req, plan = _plan(model, "rip", 2)
    assert req.shared and all(shared_by_cores(graph, graph.operators[k]) for k in req.shared)
    replay(graph, plan, 4, req.op_buffers, shared=req.shared)
    one_core = tuple(
        replace(b, size=op_min_scratch_bytes(graph, graph.operators[b.op], 1))
        if b.op in req.shared
        else b
        for b in req.op_buffers
    )
    with pytest.raises(ReplayError, match=r"needs .* B of scratch"):
        replay(graph, plan, 4, one_core, shared=req.shared)


# (folder, file, strategy, share slack): KWS's layers all set its floor, so that it shares
# them only where the floor may rise (1.0: any amount; 7% more arena, measured)
MODELS = [
    ("mcunet", "mcunet-vww0.tflite", "rip", DEFAULT_SHARE_SLACK),
    ("tinyml", "mlperf-kws_ref_model.tflite", "rip", 1.0),
    ("mcunet", "mcunet-in0.tflite", "fused", DEFAULT_SHARE_SLACK),
]


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED / "models").is_dir(), reason="../shared/models is absent")
@pytest.mark.parametrize(("folder", "name", "strategy", "slack"), MODELS, ids=lambda x: str(x))
def test_shared_models_on_two_cores_match_tflite_micro(tmp_path, folder, name, strategy, slack):
    """TFLite Micro's bytes with most ops shared; at the default slack the arena is at most
    2% above one core's (issue 27)."""
    path = shared_path("models", folder, name)
    got, want, emitted, plan = _run(path, tmp_path, strategy, slack=slack)
    assert got == want, f"{name}: 0x{got:08x} != 0x{want:08x}"
    assert sum(op.shared for op in emitted.ops) >= 5
    if slack == DEFAULT_SHARE_SLACK:
        one = _plan(path, strategy, 1)[3]
        assert plan.peak <= 1.02 * one.peak, (plan.peak, one.peak)
