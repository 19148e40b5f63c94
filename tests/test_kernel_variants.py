"""The kernel variant table (rip.core.kernel_variants) against the C kernels it describes:
every public function the headers declare is a row, a row's scratch twin or a documented
helper, and every row exists; each family header documents its rows' ops and in-place use;
the kernels' includes form no circle and no reference kernel links against a fast one; and
every Python constant that names the C #define it mirrors has the define's value."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import cbuild as cb
import pytest
from paths import REPO
from test_layering import package_modules

from rip.core import kernel_variants as kv

COMMENT = re.compile(r"/\*.*?\*/", re.S)
# a prototype or definition at the start of a line: the return type, then the name
FUNCTION = re.compile(r"^(?:rip_status|int32_t|uint32_t|void)\s+(rip_\w+)\s*\(", re.M)
INCLUDE = re.compile(r'^#include "([^"]+)"', re.M)
# `NAME = 123  # RIP_SOMETHING ...`: a planner or generator constant mirroring a kernel's
DEFINE_MIRROR = re.compile(r"^\s*([A-Z][A-Z0-9_]*)\s*=\s*(\d+)\s*#\s*(RIP_[A-Z0-9_]+)", re.M)
# `#define RIP_SOMETHING 123` (or `(123)`), a trailing comment allowed
C_DEFINE = re.compile(r"^\s*#\s*define\s+(RIP_[A-Z0-9_]+)\s+\(?(\d+)\)?[ \t]*(?:/\*.*)?$", re.M)


def code(path: Path) -> str:
    return COMMENT.sub("", path.read_text())


def declared() -> dict[str, list[str]]:
    """Every public rip_* function of kernels/*.h, with the headers declaring it."""
    found: dict[str, list[str]] = {}
    for header in sorted(cb.KERNELS.glob("*.h")):
        for name in FUNCTION.findall(code(header)):
            found.setdefault(name, []).append(header.name)
    return found


def defined() -> dict[str, str]:
    """Every external rip_* function of kernels/*.c, with its source."""
    return {
        name: source.name
        for source in sorted(cb.KERNELS.glob("*.c"))
        for name in FUNCTION.findall(code(source))
    }


def test_every_declared_function_is_a_variant_its_twin_or_a_helper() -> None:
    twins = {v.scratch for v in kv.VARIANTS if v.scratch is not None}
    documented = set(kv.BY_NAME) | twins | set(kv.HELPERS)
    found = declared()
    assert set(found) == documented, (
        f"declared but not in the table: {sorted(set(found) - documented)}; "
        f"in the table but not declared: {sorted(documented - set(found))}"
    )
    assert all(len(headers) == 1 for headers in found.values()), found
    assert len(kv.BY_NAME) == len(kv.VARIANTS), "a variant listed twice"
    assert not set(kv.HELPERS) & (set(kv.BY_NAME) | twins)


def test_every_variant_lives_in_its_family_header_and_source() -> None:
    """``rip_x.h`` declares a family, ``rip_x.c`` defines it (CMSIS-NN's file per family)."""
    found, sources = declared(), defined()
    for v in kv.VARIANTS:
        assert found[v.name] == [v.header], v.name
        assert sources.get(v.name) == v.header.removesuffix(".h") + ".c", v.name


def test_every_scratch_twin_exists() -> None:
    found, sources = declared(), defined()
    for v in kv.VARIANTS:
        if v.scratch is None:
            continue
        assert v.scratch.endswith("_get_buffer_size"), v.name
        assert v.scratch in found and v.scratch in sources, f"{v.name}: no {v.scratch}"


def test_cheap_twins_share_their_variant_contract() -> None:
    """An _rq twin runs the same ops, in-place kinds and scratch with the cheap
    requantisation, and is declared beside its exact variant."""
    for v in kv.VARIANTS:
        if v.cheap_twin is None:
            continue
        twin = kv.variant(v.cheap_twin)
        assert twin.name == v.name.removesuffix("_s8") + "_rq_s8"
        assert (twin.header, twin.ops, twin.in_place, twin.out_of_place) == (
            v.header,
            v.ops,
            v.in_place,
            v.out_of_place,
        )
        assert (twin.scratch is None) == (v.scratch is None), v.name
        assert twin.cheap_twin is None and twin.folded_bias == v.folded_bias
    with pytest.raises(KeyError):
        kv.cheap_twin(kv.CONV2D_FAST_RQ.name)


def test_family_headers_document_their_variants() -> None:
    """A family header's comments name the ops its variants run, and say so where a variant
    folds the bias or runs in place."""
    for v in kv.VARIANTS:
        text = (cb.KERNELS / v.header).read_text().casefold().replace("in-place", "in place")
        for op in v.ops:
            assert op.casefold() in text, f"{v.header} never names {op} ({v.name})"
        if v.in_place:
            assert "in place" in text, f"{v.header}: {v.name} runs in place"
        if v.folded_bias:
            assert "folded" in text, f"{v.header}: {v.name} takes the folded bias"
        assert v.preconditions, v.name
    for name in kv.HELPERS:
        assert name in declared()


def includes() -> dict[str, list[str]]:
    return {p.name: INCLUDE.findall(p.read_text()) for p in sorted(cb.KERNELS.glob("*.[ch]"))}


def closure(graph: dict[str, list[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for child in graph.get(todo.pop(), []):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return seen


def test_kernel_includes_form_no_circle() -> None:
    graph = includes()
    for name in graph:
        assert name not in closure(graph, name), f"{name} includes itself through {graph[name]}"
    for wanted in {h for hs in graph.values() for h in hs}:
        assert (cb.KERNELS / wanted).exists(), wanted


def test_reference_kernels_include_and_link_no_fast_kernel(tmp_path: Path) -> None:
    """The reference kernels (TFLite's loops, the oracle the fast ones are held to) see no
    fast family's header and call no fast kernel: only the support library and helpers."""
    fast_headers = {v.header for v in kv.VARIANTS if not v.reference}
    reference_sources = sorted(
        {v.header.removesuffix(".h") + ".c" for v in kv.VARIANTS if v.reference}
    )
    nm_tool = shutil.which("nm")
    if nm_tool is None:
        pytest.skip("no nm (binutils) to list the objects' undefined symbols")
    graph = includes()
    fast = {v.name for v in kv.VARIANTS if not v.reference}
    for source in reference_sources:
        assert not closure(graph, source) & fast_headers, source
        obj = tmp_path / f"{source}.o"
        cb.compile_c(
            [cb.need_gcc(), *cb.CFLAGS, "-O2", "-c", str(cb.KERNELS / source), "-o", str(obj)]
        )
        nm = subprocess.run([nm_tool, "-u", str(obj)], capture_output=True, text=True, check=True)
        undefined = nm.stdout.split()
        calls = {s for s in undefined if s.startswith("rip_")}
        assert not calls & fast, f"{source} calls {sorted(calls & fast)}"
        assert calls <= set(kv.HELPERS), f"{source} calls {sorted(calls - set(kv.HELPERS))}"


def test_the_operator_tables_default_kernels_are_variants_of_their_op() -> None:
    """core/operators.py names each op's default kernel and family; the variant table must
    hold that kernel, running that op, declared in that family's headers."""
    from rip.core.operators import SPECS

    for spec in SPECS.values():
        kernel = spec.kernel
        if kernel is None:
            continue
        row = kv.BY_NAME.get(kernel.function)
        assert row is not None, f"{spec.op}: {kernel.function} is no kernel variant"
        assert spec.op in row.ops, f"{kernel.function} does not list {spec.op}"
    ops_with_kernels = {op for row in kv.VARIANTS for op in row.ops}
    assert ops_with_kernels <= set(SPECS), ops_with_kernels - set(SPECS)


def test_python_mirrors_of_kernel_defines_have_their_values() -> None:
    """The simulator, the planner and the generators restate some kernel constants (the
    depthwise tiles whose order the simulator executes, rank limits): each names its
    #define in a comment, and a value drifting from the kernel's would plan one order while
    the kernel runs another."""
    defines: dict[str, set[int]] = {}
    for source in sorted(cb.KERNELS.glob("*.[ch]")):
        for name, value in C_DEFINE.findall(source.read_text()):
            defines.setdefault(name, set()).add(int(value))
    mirrors = [
        (path.relative_to(REPO), name, int(value), c_name)
        for path in package_modules(REPO).values()
        for name, value, c_name in DEFINE_MIRROR.findall(path.read_text())
    ]
    # the column-pair engine's tiles are among them: the scan reads the package
    assert {m[1] for m in mirrors} >= {"DW_COLS_TILE_WORDS", "DW_COLS_WIDE3_PAIRS"}
    wrong = [
        f"{path}: {name} = {value}, {c_name} is {sorted(defines.get(c_name, ())) or 'undefined'}"
        for path, name, value, c_name in mirrors
        if defines.get(c_name) != {value}
    ]
    assert not wrong, "\n".join(wrong)
