"""The paper's memory tables, reproduced on the real models in ../shared/models.

Table 3 (MCUNet on the Picos): TinyEngine's schedule (depthwise in place) and RiP with the
MILP. Our figures equal the paper's on all eleven models, and our RiP figure equals the
layer-by-layer limit on all eleven (the paper states this for ten; ours is proven optimal
on the eleventh too, so no model needs an explanation of a difference).

Table 7 (keras.applications graphs): the dual-buffer MILP equals the paper's column and
RiP is at or below it. CI runs the models that solve in about a second; set
RIP_FULL_MODELS=1 for all 33 (``make bench-alloc`` also covers them).

The paper's tables count the activations alone (the kernels' scratch is Table 3's separate
Buffer column), so they are reproduced on plans without scratch
(``requirements(graph, scratch_in_arena=False)``). rip's own figure, the arena with every
kernel's scratch planned inside it, is checked against issue 25's targets: under ``fused``
MCUNet-in3 within 100 KiB, and no MCUNet model above its arena + scratch of before
(``BEFORE``, measured on the commit before scratch moved into the arena).
"""

from __future__ import annotations

import os

import pytest
from paths import KERAS_FILES, MCUNET, shared_path

from rip.allocator.planning.options import PlanOptions
from rip.allocator.planning.parallel import plan_model, plan_strategies
from rip.allocator.planning.requirements import requirements
from rip.allocator.planning.strategies import variants
from rip.core.terms import Placer, Strategy
from rip.frontend.reader import read_model
from rip.frontend.rewrite import rewrite

FIRST_FIT = PlanOptions(placer=Placer.FIRSTFIT)

CI_KERAS = [
    "MobileNet",
    "MobileNetV2",
    "MobileNetV3-S",
    "MobileNetV3-L",
    "VGG-16",
    "ResNet-50",
    "Xception",
    "EfficientNet-B0",
    "EffNetV2-B0",
]
KERAS = list(KERAS_FILES) if os.environ.get("RIP_FULL_MODELS") else CI_KERAS


# Arena + scratch (the largest kernel's, outside the arena) on the host board before issue
# 25 put the scratch into the arena (commit e6aef91), per strategy: the bound no total rises
# above.
BEFORE = {
    "mcunet-in0": {"rip": 36864 + 6720, "fused": 16896 + 6720},
    "mcunet-in1": {"rip": 73728 + 5760, "fused": 30720 + 5760},
    "mcunet-in2": {"rip": 179200 + 15360, "fused": 81920 + 11520},
    "mcunet-in3": {"rip": 185856 + 14080, "fused": 98560 + 11520},
    "mcunet-in4": {"rip": 307200 + 12800, "fused": 115200 + 12800},
    "mbv2-w0.35": {"rip": 248832 + 5184, "fused": 66816 + 4480},
    "proxyless-w0.3": {"rip": 185856 + 9216, "fused": 98560 + 9216},
    "mcunet-vww0": {"rip": 49152 + 4800, "fused": 16640 + 4800},
    "mcunet-vww1": {"rip": 76800 + 4800, "fused": 21760 + 4800},
    "mcunet-vww2": {"rip": 145152 + 10368, "fused": 66816 + 10368},
    "person-det": {"rip": 163840 + 5120, "fused": 75520 + 3840},
}
IN3_FUSED_TARGET = 100 * 1024  # issue 25: MCUNet-in3's total activation RAM under fused


def load(path, scratch_in_arena=False):
    """The graph and its requirements; by default the paper's accounting (no scratch)."""
    graph = rewrite(read_model(path))
    return graph, requirements(graph, scratch_in_arena)


@pytest.mark.parametrize("name", MCUNET)
def test_table3_mcunet(paper_tables, name):
    want = paper_tables["table3_mcunet_peak_activation_bytes"][name]
    graph, req = load(shared_path("models", "mcunet", f"{name}.tflite"))
    base = plan_model(graph, req, "tinyengine")
    rip = plan_model(graph, req, "rip")
    assert base.peak == want["base"]
    assert rip.peak <= want["rip"]
    assert rip.peak == rip.lower_bound  # the layer-by-layer limit: exact, not approximate
    assert rip.optimal is True
    assert rip.shifts == ()  # Sec. 4.3: not one memmove on the deployed models


@pytest.mark.parametrize("name", MCUNET)
def test_total_activation_ram_with_scratch_in_the_arena(name):
    """Every kernel's scratch placed in the arena, live for its op: the total never above
    the arena + scratch of before, under rip and fused, and every plan optimal."""
    graph, req = load(shared_path("models", "mcunet", f"{name}.tflite"), scratch_in_arena=True)
    options = PlanOptions()
    made = variants(graph, req, (Strategy.RIP, Strategy.FUSED), options)
    plans = plan_strategies(made, options, jobs=1)
    for strategy, plan in plans.items():
        assert plan.peak <= BEFORE[name][strategy], strategy
        assert plan.optimal is True, strategy
    # the scratch is counted: some of it is alive at rip's peak
    assert plans["rip"].peak > plan_model(graph, requirements(graph, False), "rip").peak
    if name == "mcunet-in3":
        assert plans["fused"].peak <= IN3_FUSED_TARGET


@pytest.mark.parametrize("name", ["mcunet-in2", "mcunet-in3"])
def test_first_fit_strands_what_the_milp_recovers(paper_tables, name):
    """Sec. 4.3: under RiP, first fit gives no reduction on the branched in2/in3 (ours is
    even above the baseline), the MILP reaches the RiP figure."""
    want = paper_tables["table3_mcunet_peak_activation_bytes"][name]
    graph, req = load(shared_path("models", "mcunet", f"{name}.tflite"))
    ff = plan_model(graph, req, "rip", FIRST_FIT)
    opt = plan_model(graph, req, "rip")
    assert ff.peak >= want["base"] > opt.peak == want["rip"]


@pytest.mark.parametrize("name", KERAS)
def test_table7_keras(paper_tables, name):
    row = paper_tables["table7_keras_graph_level"][name]
    dual_kb, rip_kb = row[6], row[7]
    if dual_kb is None or rip_kb is None:
        pytest.skip(f"paper-tables.json has no peak figures for {name}")
    graph, req = load(shared_path("models", "keras", f"{KERAS_FILES[name]}.graph.tflite"))
    dual = plan_model(graph, req, "dual", PlanOptions(time_limit=120))
    rip = plan_model(graph, req, "rip", PlanOptions(time_limit=120))
    # the table gives KB to one decimal: within half a unit of the last digit
    assert abs(dual.peak / 1024 - dual_kb) <= 0.05 + 1e-9
    assert rip.peak / 1024 <= rip_kb + 0.05 + 1e-9
    assert dual.optimal and rip.optimal
