"""The compile report: model summary, per-op in-place table, memory plans and what was
generated, as data (JSON-ready) and as text. It only formats a ``Compiled`` (rip.compiler);
it runs no stage."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from rip.allocator.planning.placement import WEIGHTS, OpBuffer, Plan
from rip.allocator.planning.requirements import Requirements
from rip.allocator.planning.strategies import STRATEGIES
from rip.compiler import Compiled, fitting_boards, fitting_strategies
from rip.core.operators import Op
from rip.core.terms import Strategy
from rip.firmware.output_dir import MANIFEST
from rip.firmware.result import Result
from rip.frontend.ir import Graph
from rip.frontend.liveness import live_bytes
from rip.timing.estimate import TwoCoreEstimate

BASELINE = Strategy.TINYENGINE


def _shape(graph: Graph, tid: int) -> str:
    return "x".join(str(d) for d in graph.tensors[tid].shape) or "scalar"


def op_table(
    graph: Graph,
    req: Requirements,
    plan: Plan | None = None,
    op_buffers: tuple[OpBuffer, ...] = (),
) -> list[dict[str, Any]]:
    """One row per op: shapes, bytes, its best in-place candidate (and whether the plan
    used it), scratch, and the filter bytes the plan stages in SRAM for it
    (``op_buffers``)."""
    staged: dict[int, int] = {}
    for b in op_buffers:
        if b.role == WEIGHTS:  # the scratch is the row's scratch_bytes
            staged[b.op] = staged.get(b.op, 0) + b.size
    used = {p.op: p for p in plan.aliased} if plan else {}
    shifted = {p.op for p in plan.shifts} if plan else set()
    rows = []
    for op, r in zip(graph.operators, req.ops, strict=True):
        acts = [t for t in op.inputs if t >= 0 and not graph.tensors[t].is_constant]
        best = min(r.candidates, key=lambda c: c.workspace, default=None)
        rows.append(
            {
                "index": r.index,
                "source_index": op.source_index,
                "op": op.kind,
                "inputs": [_shape(graph, t) for t in acts],
                "output": _shape(graph, op.outputs[0]),
                "input_bytes": sum(graph.tensors[t].nbytes for t in acts),
                "output_bytes": graph.tensors[op.outputs[0]].nbytes,
                "inplace_input": best.input if best else None,
                "gap": best.gap if best else None,
                "workspace": best.workspace if best else None,
                "order": best.order if best else None,
                "scheme": best.kind if best else None,
                "not_inplace_because": r.reason or None,
                "planned_inplace": r.index in used,
                "planned_shift": r.index in shifted,
                "scratch_bytes": r.scratch_bytes,
                "staged_filter_bytes": staged.get(r.index, 0),
                **_fused_columns(graph, op),
            }
        )
    return rows


def _fused_columns(graph: Graph, op) -> dict[str, Any]:
    """A fused chain's members (``members``: kinds with TFLite operator indices; also each
    apart) and ring bytes."""
    if op.kind != Op.FUSED_CHAIN:
        return {}
    p = op.params
    return {
        "members": p.names(),
        "member_ops": [m.kind for m in p.ops],
        "member_source_indices": [m.source_index for m in p.ops],
        "ring_rows": list(p.ring_rows),
        "ring_bytes": sum(graph.tensors[t].nbytes for t in p.rings),
        # a streamed input (--stream-input): the rows of it the chain holds, and their bytes
        "source_rows": p.source_rows if p.source is not None else None,
        "source_ring_bytes": graph.tensors[p.source_ring].nbytes if p.source is not None else None,
    }


def streamed_summary(graph: Graph) -> list[dict[str, Any]]:
    """Each streamed input (--stream-input): its index, shape, whole bytes, and the ring of
    rows its reading chain keeps instead (in the arena)."""
    out = []
    for op in graph.operators:
        p = op.params
        if op.kind != Op.FUSED_CHAIN or p.source is None:
            continue
        t = graph.tensors[p.source]
        out.append(
            {
                "input": graph.inputs.index(p.source),
                "shape": list(t.shape),
                "input_bytes": t.nbytes,
                "ring_rows": p.source_rows,
                "ring_bytes": graph.tensors[p.source_ring].nbytes,
            }
        )
    return out


def ratio(value: int, base: int) -> str:
    """value / base as an exact fraction when it is one with a small denominator."""
    if base <= 0:
        return "-"
    f = Fraction(value, base)
    return f"{f.numerator}/{f.denominator}" if f.denominator <= 64 else f"{value / base:.3f}"


def plan_summary(c: Compiled, strategy: Strategy) -> dict[str, Any]:
    plan = c.plans[strategy]
    fit = c.fit(strategy)
    base = c.plans.get(BASELINE)
    n_tensors = len(c.variants[strategy].req.lifetimes)  # activations, not scratch buffers
    staged = c.staged.get(strategy)
    return {
        "strategy": strategy,
        "placer": plan.placer,
        "arena_bytes": plan.peak,
        "lower_bound_bytes": plan.lower_bound,
        "optimal": plan.optimal,
        "ratio_to_baseline": ratio(plan.peak, base.peak) if base else None,
        "inplace_tensors": len(plan.aliased),
        "inplace_share_pct": round(100 * len(plan.aliased) / n_tensors, 1) if n_tensors else 0.0,
        "shifts": [{"op": p.op, "tensor": p.input, "bytes": p.gap} for p in plan.shifts],
        "scratch_bytes": c.variants[strategy].req.scratch_bytes,
        "needed_sram_bytes": fit.needed_bytes,
        "board_sram_bytes": fit.available_bytes,
        "fits": fit.fits,
        "headroom_bytes": fit.headroom_bytes,
        "solve_seconds": round(plan.solve_seconds, 3),
        "milp_size": {
            k: plan.stats[k] for k in ("variables", "constraints", "binaries") if k in plan.stats
        },
        # flash-aware execution (staging.py): the filters staged in SRAM, their bytes (in
        # arena_bytes: each lives in the arena while its op runs) and the estimated saving
        "staged_weights": staged.summary(plan.peak) if staged and staged.buffers else None,
        # the ops whose constant data is resident in SRAM, copied at start-up (residency.py),
        # and the bound of its bytes
        "resident_weights_ops": len(staged.resident_ops) if staged else 0,
        "planned_ops": len(c.variants[strategy].graph.operators),  # a fused chain is one
        "resident_weights_bytes": staged.resident_bytes if staged else 0,
        "streamed_inputs": streamed_summary(c.variants[strategy].graph),
        # the cores inference runs on (--cores); on 2, the ops both share (their scratch is
        # one per core)
        "cores": c.variants[strategy].req.cores,
        "shared_ops": shared_ops(c, strategy),
        "notes": list(plan.notes),
    }


def shared_ops(c: Compiled, strategy: Strategy) -> list[int]:
    """The ops whose work both cores share on a two-core plan (scratch_choice.share; the
    kernel the generator picks decides at last: one that cannot share runs on core 0)."""
    return sorted(c.variants[strategy].req.shared)


def fusion_summary(c: Compiled) -> dict[str, Any] | None:
    """The ``fused`` strategy's choice: each chain fused (its ops) with its estimated
    overhead in instructions, their sum, and the budget (issue 12's ``--max-overhead``)."""
    f = next((v.fusion for v in c.variants.values() if v.fusion is not None), None)
    if f is None:
        return None
    ops = c.graph.operators
    return {
        "chains": [
            {
                "ops": " > ".join(f"{ops[k].kind} {k}" for k in ch.indices),
                "op_kinds": [ops[k].kind for k in ch.indices],
                "op_indices": list(ch.indices),  # of the unfused (rewritten) graph
                "source_indices": [ops[k].source_index for k in ch.indices],
                "table_op": _table_op(c, [ops[k].source_index for k in ch.indices]),
                "estimated_overhead": round(o),
            }
            for ch, o in zip(f.chains, f.overheads, strict=True)
        ],
        "estimated_overhead": round(f.overhead),
        "estimated_unfused_instructions": round(f.unfused),
        "max_overhead": f.max_overhead,
        "budget": None if f.max_overhead is None else round(f.budget),
        "estimated_peak_bytes": f.peak_estimate,
        "cost_model": f.board,
    }


def _table_op(c: Compiled, sources: list[int]) -> int | None:
    """The row of the printed op table that runs a chain: its FUSED_CHAIN op when the table
    is the fused graph's (the selected strategy fused it); None when the table lists the
    chain's members as rows of their own (numbered as in ``op_indices``)."""
    for k, op in enumerate(c.variant.graph.operators):
        if op.kind == Op.FUSED_CHAIN and [m.source_index for m in op.params.ops] == sources:
            return k
    return None


def build_report(c: Compiled) -> dict[str, Any]:
    """The report as JSON-ready data: the analysis, then what was generated, built and run."""
    g = c.graph
    selected = plan_summary(c, c.strategy)
    return {
        "model": g.name,
        "file": str(c.path),
        "board": c.board.name,
        "has_weights": g.has_weights,
        "inputs": [
            {"tensor": t, "shape": list(g.tensors[t].shape), "dtype": g.tensors[t].dtype}
            for t in g.inputs
        ],
        "outputs": [
            {"tensor": t, "shape": list(g.tensors[t].shape), "dtype": g.tensors[t].dtype}
            for t in g.outputs
        ],
        # the persistent region (variable tensors kept across invokes), beside the arena
        "state_bytes": g.state_bytes,
        "state_tensors": list(g.state),
        "ops_in_file": len(c.source.operators),
        "ops": len(g.operators),
        "stripped": [{"op": k, "float_tensor": f, "int8_tensor": q} for k, f, q in g.interface],
        "liveness_bound_bytes": max(live_bytes(g), default=0),
        "inplace_candidates": sum(1 for r in c.req.ops if r.candidates),
        **selected,
        # why the strategy was selected (None: --strategy named it)
        "selected_because": c.selection.reason if c.selection else None,
        # the rewrite's notes (dead ops removed, folds) first, then the selected plan's
        "notes": [*g.notes, *selected["notes"]],
        "strategies": {s.value: plan_summary(c, s) for s in c.plans},
        "fusion": fusion_summary(c),
        "op_table": op_table(c.variant.graph, c.variant.req, c.plan, c.problem.op_buffers),
        "seconds": round(c.seconds, 3),
        **generated(c),
        "next_step": next_step(c),
    }


def generated(c: Compiled) -> dict[str, Any]:
    """The project written, the firmware built and the host run, when there were any."""
    if c.output_dir is None or c.reference is None:
        return {}
    ref = c.reference.checksum
    info: dict[str, Any] = {
        "output_dir": str(c.output_dir),
        "reference_checksum": None if ref is None else f"0x{ref:08x}",
    }
    if c.reference.unavailable:
        info["reference_unavailable"] = c.reference.unavailable
        info["reference_status"] = c.reference.status
    if c.committed is not None:  # the -o transaction: which of rip's own files it changed
        info["files_written"] = len(c.committed.written)
        info["files_replaced"] = list(c.committed.replaced)
        info["stale_files_removed"] = list(c.committed.removed)
    if c.build:
        info["build"] = c.build
    if c.run is not None:
        info.update(
            result_line=c.run.line(),
            checksum=f"0x{c.run.checksum:08x}",
            cycles=c.run.cycles,
            unit=c.run.unit,
            match=c.match,
        )
        if c.run.instructions is not None:  # an emulated board counts instructions
            del info["cycles"]
            info.update(
                expected_checksum=info["reference_checksum"], instructions=c.run.instructions
            )
    if c.emulation is not None:
        info.update(expected_checksum=info["reference_checksum"], **emulated(c))
    info.update(timing_summary(c))
    return info


def emulated(c: Compiled) -> dict[str, Any]:
    """The emulated Pico run: the inference's time at the board's clock from what the
    firmware measured (``cycles`` in ``unit``; the top-level ``seconds`` is the compile's),
    and under ``emulation`` rp2040js's cycles, what each serial port said and the bounds."""
    e = c.emulation
    assert e is not None and c.run is not None
    usb = e.usb_result
    seconds = None if c.run.seconds is None else round(c.run.seconds, 9)
    return {
        "inference_seconds": seconds,
        "emulation": {
            "emulator": e.emulator,
            "seconds": seconds,
            "clock_hz": c.run.clock_hz,
            "emulated_cycles": e.emulated_cycles,
            "serial": {
                "uart0": f"0x{c.run.checksum:08x}",
                "usb_cdc": f"0x{usb.checksum:08x}" if isinstance(usb, Result) else None,
            },
            "max_emulated_cycles": e.max_cycles,
            "wall_seconds": round(e.wall_seconds, 2),
        },
    }


def timing_summary(c: Compiled) -> dict[str, Any]:
    """The Pico timing model's estimate of the run (``pico2_cycles``, ``pico2_ms``, the
    flash-miss share, ...; ``pico1_`` for the RP2040), or why there is none."""
    if isinstance(c.estimate, str):
        return {"timing_unavailable": c.estimate}
    return c.estimate.summary() if c.estimate is not None else {}


def format_report(rep: dict[str, Any]) -> str:
    lines = [
        f"model {rep['model']}  ({rep['file']})  board {rep['board']}",
        "  inputs:  "
        + ", ".join(f"{'x'.join(map(str, i['shape']))} {i['dtype']}" for i in rep["inputs"]),
        "  outputs: "
        + ", ".join(f"{'x'.join(map(str, o['shape']))} {o['dtype']}" for o in rep["outputs"]),
        f"  ops: {rep['ops_in_file']} in file, {rep['ops']} after folding; weights: "
        f"{'yes' if rep['has_weights'] else 'no (graph only)'}",
    ]
    for s in rep["stripped"]:
        lines.append(
            f"  stripped {s['op']}: float tensor {s['float_tensor']} -> int8 tensor "
            f"{s['int8_tensor']} (the compiled model runs int8 inside)"
        )
    lines += [f"  note: {n}" for n in rep["notes"]]
    lines += ["", *format_op_table(rep["op_table"])]
    lines.append(f"  (* = overwritten in place under {rep['strategy']})")
    sram = f"{rep['board_sram_bytes']:,} B SRAM" if rep["board_sram_bytes"] else "no SRAM limit"
    lines += ["", f"memory plans ({rep['board']}: {sram}; ratio against {BASELINE})", ""]
    head = (
        f"{'strategy':<11} {'placer':<9} {'arena B':>10} {'ratio':>6} {'bound B':>10} "
        f"{'optimal':>8} {'in-place':>9} {'shifts':>6} {'needs B':>10} {'fits':>5} "
        f"{'solve s':>8} {'vars':>7} {'constr':>7}"
    )
    lines += [head, "-" * len(head)]
    for s in rep["strategies"].values():
        size = s["milp_size"]
        lines.append(
            f"{s['strategy']:<11} {s['placer']:<9} {s['arena_bytes']:>10,} "
            f"{s['ratio_to_baseline'] or '-':>6} {s['lower_bound_bytes']:>10,} "
            f"{'-' if s['optimal'] is None else 'yes' if s['optimal'] else 'no':>8} "
            f"{s['inplace_share_pct']:>8}% {len(s['shifts']):>6} {s['needed_sram_bytes']:>10,} "
            f"{'yes' if s['fits'] else 'NO':>5} {s['solve_seconds']:>8} "
            f"{size.get('variables', '-'):>7} {size.get('constraints', '-'):>7}"
        )
        lines += [f"    {s['strategy']}: {n}" for n in s["notes"]]
    state = (
        f" + persistent state {rep['state_bytes']:,} B ({len(rep['state_tensors'])} variable "
        "tensors, kept across invokes)"
        if rep["state_bytes"]
        else ""
    )
    lines += [
        "",
        f"selected: {rep['strategy']} / {rep['placer']}: arena {rep['arena_bytes']:,} B "
        f"(all activation RAM, the kernels' scratch inside it: at most "
        f"{rep['scratch_bytes']:,} B for one op){state} + board overhead = "
        f"{rep['needed_sram_bytes']:,} B",
    ]
    if rep["selected_because"]:
        lines.append(f"  selected by default: {rep['selected_because']}")
    if rep["board_sram_bytes"]:
        verdict = "fits" if rep["fits"] else "does NOT fit"
        lines.append(f"{verdict} {rep['board']}: headroom {rep['headroom_bytes']:,} B")
    for si in rep.get("streamed_inputs") or ():
        lines.append(
            f"input {si['input']} streams in row by row: {si['ring_rows']} rows "
            f"({si['ring_bytes']:,} B, in the arena) held instead of {si['input_bytes']:,} B"
        )
    if rep.get("cores", 1) == 2:
        lines.append(
            f"two cores: {len(rep['shared_ops'])} of {rep['planned_ops']} ops shared (split "
            "by output channels, each core its own scratch), the rest on core 0"
        )
    if rep.get("resident_weights_ops"):
        n, of = rep["resident_weights_ops"], rep["planned_ops"]
        which = "the constant data is" if n == of else f"the constant data of {n} of {of} ops is"
        lines.append(
            f"flash-aware execution: {which} resident in SRAM (at most "
            f"{rep['resident_weights_bytes']:,} B beside the arena, copied from flash at "
            "start-up; --weights flash keeps it in flash)"
        )
    st = rep.get("staged_weights")
    if st:
        lines.append(
            f"flash-aware execution: {st['staged_filters']} filters staged in SRAM "
            f"({st['staged_bytes']:,} B over ops {', '.join(map(str, st['staged_ops']))}, "
            f"+{st['extra_arena_bytes']:,} B of arena), estimated "
            f"{st['estimated_saved_cycles']:,} {st['flash_cache_of']} cycles of flash stall saved"
        )
    for sh in rep["shifts"]:
        lines.append(
            f"right shift before op {sh['op']}: tensor t{sh['tensor']} moves {sh['bytes']:,} B"
        )
    fusion = rep.get("fusion")
    if fusion is not None:
        share = fusion["estimated_overhead"] / max(fusion["estimated_unfused_instructions"], 1)
        limit = (
            "no budget"
            if fusion["budget"] is None
            else f"budget {fusion['budget']:,} ({100 * fusion['max_overhead']:g}%)"
        )
        lines.append(
            f"fused: {len(fusion['chains'])} chains, estimated overhead "
            f"{fusion['estimated_overhead']:,} instructions ({100 * share:.1f}% of "
            f"{fusion['estimated_unfused_instructions']:,} unfused, {fusion['cost_model']} "
            f"cost model); {limit}"
        )
        for ch in fusion["chains"]:
            # numbered as the op table above: its own rows, or the FUSED_CHAIN row
            kinds = " > ".join(ch["op_kinds"])
            what = ch["ops"] if ch["table_op"] is None else f"op {ch['table_op']} ({kinds})"
            lines.append(f"  fused {what}: +{ch['estimated_overhead']:,} instructions")
    lines.append(
        f"liveness bound (dual buffering): {rep['liveness_bound_bytes']:,} B; "
        f"in-place candidates: {rep['inplace_candidates']} of {rep['ops']} ops"
    )
    return "\n".join(lines)


def format_emulated(c: Compiled) -> str:
    """One line on the emulated Pico run (``emulated``), with what its figure leaves out."""
    e = emulated(c)["emulation"]
    mhz = f" at {e['clock_hz'] / 1e6:g} MHz" if e["clock_hz"] else ""
    took = f"{e['seconds']:.4g} s{mhz}" if e["seconds"] is not None else "no time"
    cycles = f", {e['emulated_cycles']:,} emulated cycles" if e["emulated_cycles"] else ""
    usb = "USB CDC said the same" if e["serial"]["usb_cdc"] else "USB CDC said nothing"
    return (
        f"on {e['emulator']} ({e['wall_seconds']:g} s wall): one inference {took}{cycles} "
        f"(flash reads cost like SRAM, core 0 only); UART0 read, {usb}"
    )


def format_op_table(rows: list[dict[str, Any]]) -> list[str]:
    """The per-op table as text lines: shape columns as wide as their longest entry (never
    cut); a fused chain's members under its row, by kind and TFLite operator index."""
    ins = [" + ".join(r["inputs"]) for r in rows]
    w_op = max([len("op"), *(len(r["op"]) for r in rows)])
    w_in = max([len("input"), *map(len, ins)])
    w_out = max([len("output"), *(len(r["output"]) for r in rows)])
    header = (
        f"{'#':>4} {'op':<{w_op}} {'input':<{w_in}} {'output':<{w_out}} {'in B':>9} "
        f"{'out B':>9} {'in-place':>9} {'gap':>7} {'order':<8} {'scratch':>7}"
    )
    lines = [header, "-" * len(header)]
    for r, shapes in zip(rows, ins, strict=True):
        if r["inplace_input"] is None:
            inplace = "-"
        else:
            inplace = f"t{r['inplace_input']}" + ("*" if r["planned_inplace"] else "")
        gap = "-" if r["gap"] is None else str(r["gap"])
        lines.append(
            f"{r['index']:>4} {r['op']:<{w_op}} {shapes:<{w_in}} {r['output']:<{w_out}} "
            f"{r['input_bytes']:>9,} {r['output_bytes']:>9,} {inplace:>9} {gap:>7} "
            f"{(r['order'] or '-'):<8} {r['scratch_bytes']:>7,}"
        )
        if "members" in r:
            members = " > ".join(r["member_ops"])
            sources = ", ".join(map(str, r["member_source_indices"]))
            lines.append(
                f"{'':>4}   fused: {members} (TFLite ops {sources}); rings {r['ring_rows']} "
                f"rows, {r['ring_bytes']:,} B"
            )
    return lines


def _names(names: tuple[str, ...], shown: int = 6) -> str:
    return ", ".join(names[:shown]) + (f", ... ({len(names)} in all)" if len(names) > shown else "")


def format_generated(c: Compiled) -> str:
    """What was written, built and run, in a few lines (empty when nothing was)."""
    if c.output_dir is None:
        return ""
    if c.committed is not None:  # the files the transaction wrote, top level only
        tops = (w.split("/")[0] + ("/" if "/" in w else "") for w in c.committed.written)
        files = ", ".join(sorted(dict.fromkeys(tops)))
    elif c.board.pico_board:
        files = (
            "CMakeLists.txt, pico_sdk_import.cmake, main.c, model.c, model.h, model_data.c, "
            "model_data.h, kernels/, README.md, expected.json"
        )
    else:
        files = "model.c, model.h, model_data.c, model_data.h, main.c, Makefile, kernels/, "
        files += "expected.json"
    staged = c.staged.get(c.strategy)
    resident = ""
    if staged and staged.resident_ops:
        resident = f"; constant data of {len(staged.resident_ops)} ops resident in SRAM"
    lines = [
        f"wrote {c.output_dir}: {files} (arena {c.plan.peak:,} B, the kernels' scratch "
        f"included{resident})"
    ]
    if c.committed is not None and (c.committed.replaced or c.committed.removed):
        done = c.committed
        stale = f"; removed {len(done.removed)} stale: {_names(done.removed)}"
        lines.append(
            f"replaced {len(done.replaced)} files rip wrote there before "
            f"(listed in {MANIFEST}){stale if done.removed else ''}; no other file was touched"
        )
    if c.build:
        b = c.build
        lines.append(
            f"built {b['uf2']} ({b['uf2_writer']} UF2 writer); .bss {b['bss_bytes']:,} B, "
            f".data {b['data_bytes']:,} B; rip_arena in .bss"
            + (f"; flash image {b['image_bytes']:,} B" if "image_bytes" in b else "")
            + (f" of {b['flash_bytes']:,} B" if b.get("flash_bytes") else "")
        )
    if c.run is not None:
        ref = None if c.reference is None else c.reference.checksum
        why = c.reference.unavailable if c.reference is not None else None
        verdict = (
            ("match" if c.match else "MISMATCH")
            if ref is not None
            else f"no reference ({c.reference.status if c.reference else 'not computed'}: {why})"
        )
        lines.append(c.run.line())
        if c.emulation is not None:
            lines.append(format_emulated(c))
        lines.append(
            f"reference (TFLite Micro) checksum={None if ref is None else f'0x{ref:08x}'}: "
            f"{verdict}"
        )
        lines.extend(format_timing(c))
    return "\n".join(lines)


def format_timing(c: Compiled) -> list[str]:
    """One line: the run timed as its Pico (an estimate, rip.timing), or why it is not."""
    if isinstance(c.estimate, str):
        return [f"no Pico timing estimate: {c.estimate}"]
    if c.estimate is None:
        return []
    e = c.estimate
    chip = e.model.chip
    on = f"estimated on the {chip.description.split(' (')[0]} ({chip.chip} at "
    if isinstance(e, TwoCoreEstimate):
        p, t = e.path, e.cycles
        share = ", ".join(f"core {k} idle {100 * x:.1f}%" for k, x in enumerate(t.idle_share))
        stall = sum(s.stall for s in e.cores) / (sum(s.cycles for s in e.cores) or 1)
        return [
            f"two cores: critical path {p.length:,} instructions (core 0 busy {p.busy[0]:,}, "
            f"core 1 busy {p.busy[1]:,}; {p.syncs:,} syncs)",
            f"{on}{chip.clock_hz / 1e6:g} MHz, timing model, both cores over one XIP cache): "
            f"critical path {t.length:,} cycles = {1e3 * t.length / chip.clock_hz:,.2f} ms "
            f"({share}), {100 * stall:.1f}% of the busy cycles stalled on XIP cache misses",
        ]
    w = e.window()
    return [
        f"{on}{chip.clock_hz / 1e6:g} MHz, timing model): {w.cycles:,} cycles = "
        f"{1e3 * e.seconds(w.cycles):,.2f} ms, {100 * w.stall_share:.1f}% of them stalled on "
        f"XIP cache misses ({w.misses:,} misses)"
    ]


def next_step(c: Compiled) -> str:
    """One line saying what to do next: the strategy or board that would fit a plan that
    does not; otherwise the step after this one (write and build or run the project,
    flash it, verify it). Empty once a run was checked."""
    cmd = f"rip-compile {c.path} --board {c.board.name}"
    if not c.fit().fits:
        if set(c.plans) != set(STRATEGIES):  # -o --force planned the selected one alone
            return f"next: {cmd} --report shows which strategy or board fits"
        strategies, boards = fitting_strategies(c), fitting_boards(c)
        if strategies:
            s, f = next(iter(strategies.items()))
            return f"next: {cmd} --strategy {s} -o DIR (fits: {f.needed_bytes:,} B)"
        if boards:
            b, f = next(iter(boards.items()))
            return (
                f"next: rip-compile {c.path} --board {b} --strategy {c.strategy} -o DIR "
                f"(fits: {f.needed_bytes:,} of {f.available_bytes:,} B)"
            )
        return f"next: no strategy fits {c.board.name}; try a smaller model or input"
    if c.selection is None:  # asked for: keep it; selected: the default selects it again
        cmd += f" --strategy {c.strategy}"
    out = c.output_dir
    if c.board.pico_board:
        flash = f"rip-flash {out or 'DIR'} (board in BOOTSEL mode) and rip-verify {out or 'DIR'}"
        if out is None:
            return f"next: {cmd} -o DIR --build; then {flash}"
        if not c.build:
            return f"next: {cmd} -o {out} --build; then {flash}"
        return f"next: {flash}"
    if out is None:
        return f"next: {cmd} -o DIR --run (builds, runs and compares with TFLite Micro)"
    if c.run is None:
        return f"next: {cmd} -o {out} --run, or make -C {out} run"
    return ""
