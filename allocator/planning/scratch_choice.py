"""Which kernel's scratch an op gets, where it sets the arena's floor (issue 25).

Every kernel's scratch is a buffer of the plan, live for its op alone. An op whose fastest
kernel needs more scratch than another kernel of the same traversal (CONV_2D: the widened
pixel pair of rip_conv2d_fast_rq_s8 against rip_conv2d_fast_s8's pair alone,
`scratch.lean_scratch_bytes`) keeps the fast kernel unless its scratch is what raises the
layer-by-layer limit (`Problem.lower_bound`) of the whole plan: then the leaner scratch is
planned, and the code generator, which picks the fastest kernel that fits an op's planned
scratch (`codegen.kernel_choice.choose_conv_kernel`), runs the leaner kernel there. Both
kernels gather the same pixel pair before writing either, so the in-place gap is the same.

One op at a time, at the step that sets the limit, while that lowers it and the cut ops
stay within the instruction budget (`--max-overhead`, as fused chains), or while the limit
is above the largest live set of the model's tensors, which TFLite Micro's planner needs
at least: scratch never puts rip's total above TFLite Micro's arena. Where the limit is set
by activations alone, nothing changes and every op keeps its fastest kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from rip.allocator.planning.placement import Problem
from rip.allocator.planning.requirements import Requirements, per_cores, shared_by_cores
from rip.frontend.ir import Graph


def trim(
    req: Requirements,
    problem: Problem,
    cost: Callable[[int], float],
    budget: float | None,
    floor: int | None = None,
) -> tuple[Requirements, Problem]:
    """``req`` and its strategy's ``problem`` with the scratch of each op that sets the
    problem's lower bound cut to its least (`OpRequirement.least_scratch_bytes`), as long as
    each cut lowers the bound and the cut ops' estimated instructions (``cost`` of an op
    index; the leaner kernel is slower on them alone) stay within ``budget`` (None: no
    limit), the instruction budget fused chains spend too, or past it while the bound is
    above ``floor`` (None: none; bytes no plan without in-place reuse can go below, so that scratch
    never puts rip above such a planner, TFLite Micro's among them). A Requirements without
    scratch in the arena comes back as it is."""
    if not req.op_buffers:
        return req, problem
    bound, spent = problem.lower_bound(), 0.0
    while True:
        steps = problem.step_bounds()
        cut = {
            k: req.ops[k].least_scratch_bytes
            for k, b in enumerate(steps)
            if b == bound
            and (own := req.op_buffer(k)) is not None
            and req.ops[k].least_scratch_bytes < own.size
        }
        more = sum(cost(k) for k in cut)
        over = budget is not None and spent + more > budget and (floor is None or bound <= floor)
        if not cut or over:
            return req, problem
        trimmed = _with_scratch(req, cut)
        smaller = problem.resized({b.id: b.size for b in trimmed.op_buffers})
        if smaller.lower_bound() >= bound:
            return req, problem
        req, problem, bound, spent = trimmed, smaller, smaller.lower_bound(), spent + more


def share(
    req: Requirements, problem: Problem, graph: Graph, slack: float
) -> tuple[Requirements, Problem]:
    """On two cores (``req.cores``), ``req`` and ``problem`` with the ops both cores share
    (issue 27): every op whose kernels can split it (`requirements.shared_by_cores`) and
    whose scratch once per core leaves its step of the layer-by-layer limit
    (`Problem.step_bounds`) at most ``slack`` (a fraction) above the model's limit on one
    core, so that sharing raises the floor a plan can reach by that much at most; each such
    op's scratch (its need and its least) is doubled, one per core
    (`requirements.per_cores`). The others run on core 0."""
    if req.cores == 1 or not req.op_buffers:
        return req, problem
    steps = problem.step_bounds()
    limit = int(problem.lower_bound() * (1 + slack))
    sizes, least = {}, {}
    for k, op in enumerate(graph.operators):
        own = req.op_buffer(k)
        if own is None or k >= len(steps) or not shared_by_cores(graph, op):
            continue
        both = per_cores(graph, op, own.size, 2)
        if steps[k] + both - own.size <= limit:
            sizes[k] = both
            least[k] = per_cores(graph, op, req.ops[k].least_scratch_bytes, 2)
    if not sizes:
        return req, problem
    shared = _with_scratch(req, sizes)
    ops = tuple(
        replace(r, min_scratch_bytes=least[r.index]) if r.index in least else r for r in shared.ops
    )
    shared = replace(shared, ops=ops, shared=frozenset(sizes))
    return shared, problem.resized({b.id: b.size for b in shared.op_buffers})


def _with_scratch(req: Requirements, sizes: dict[int, int]) -> Requirements:
    """``req`` with op ``k``'s scratch (its requirement and its buffer) ``sizes[k]`` bytes."""
    ops = tuple(
        replace(r, scratch_bytes=sizes[r.index]) if r.index in sizes else r for r in req.ops
    )
    buffers = tuple(replace(b, size=sizes[b.op]) if b.op in sizes else b for b in req.op_buffers)
    return replace(req, ops=ops, op_buffers=buffers)
