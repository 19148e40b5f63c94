"""The operator table (rip.core.operators) against every stage that keys its functions by
op: each dispatch covers exactly the ops of its role, every name the table gives a kernel,
a scratch twin or a template pair exists, and no stage restates an op's name as a string."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections import defaultdict
from pathlib import Path

import tflite
from paths import REPO

from rip.allocator.planning.requirements import BOUNDS
from rip.allocator.planning.scratch import FORMULAS
from rip.allocator.theory.fused import CHAIN_KINDS
from rip.codegen.lowerings import LOWERINGS
from rip.core.operators import SPECS, Op, Role, ops
from rip.frontend.reader import DECODERS
from rip.frontend.tflite_mapping import FORMATS, TFLITE_OPS
from rip.frontend.validate import RULES

ACCEPTED = ops(lambda s: s.accepted)


def test_every_op_has_one_row_and_its_value_is_its_name() -> None:
    assert set(SPECS) == set(Op)
    assert all(s.op is op for op, s in SPECS.items())
    assert all(op.value == op.name for op in Op)


def test_read_ops_are_tflite_builtins() -> None:
    builtins = set(tflite.BUILTIN_OPCODE2NAME.values())
    assert set(TFLITE_OPS) <= builtins
    assert set(TFLITE_OPS.values()) == ops(lambda s: s.made_by is None)


def test_the_reader_decodes_exactly_the_accepted_ops() -> None:
    assert set(DECODERS) == ACCEPTED
    assert set(FORMATS) == ACCEPTED


def test_the_validator_has_rules_for_exactly_the_accepted_ops() -> None:
    assert set(RULES) == ACCEPTED
    for rules in RULES.values():
        for rule in rules:
            assert rule.__name__.startswith("constraint_") and rule.__doc__, rule


def test_the_code_generator_lowers_exactly_the_kernel_and_folded_ops() -> None:
    assert set(LOWERINGS) == ops(lambda s: s.role in (Role.KERNEL, Role.FOLDED))
    # every kernel op names its kernel; a folded op's lowering refuses it
    assert ops(lambda s: s.kernel is not None) == ops(lambda s: s.role is Role.KERNEL)


def test_the_planner_bounds_exactly_the_in_place_ops() -> None:
    assert set(BOUNDS) == ops(lambda s: s.in_place is not None)


def test_chain_stages_are_the_theory_chain_kinds() -> None:
    assert set(CHAIN_KINDS) == ops(lambda s: s.chain_stage)


def test_no_code_ops_have_no_family() -> None:
    no_code = ops(lambda s: s.role in (Role.ALIAS, Role.VIEW, Role.INTERFACE, Role.REFUSED))
    assert all(SPECS[op].family is None and SPECS[op].kernel is None for op in no_code)
    for s in SPECS.values():
        if s.role is Role.REFUSED:  # its message says why
            assert s.refusal, s.op


def test_scratch_formulas_and_their_c_twins() -> None:
    named = {s.scratch for s in SPECS.values() if s.scratch is not None}
    assert named == set(FORMULAS)
    assert ops(lambda s: s.scratch is not None) == ops(lambda s: s.scratch_twin is not None)
    headers = "".join(p.read_text() for p in (REPO / "kernels").glob("*.h"))
    for s in SPECS.values():
        if s.scratch_twin is not None:
            assert re.search(rf"\b{s.scratch_twin}\s*\(", headers), s.scratch_twin


def _with_includes(header: Path) -> str:
    """A family header's text with the rip headers it includes (rip_conv.h gathers the
    weighted kernels' one-per-source headers)."""
    text = header.read_text()
    for name in re.findall(r'#include "(rip_\w+\.h)"', text):
        text += (header.parent / name).read_text()
    return text


def test_every_family_has_its_header_and_template_pair_declaring_its_kernels() -> None:
    for s in SPECS.values():
        if s.family is None:
            continue
        header = _with_includes(REPO / "kernels" / f"rip_{s.family}.h")
        for part in ("data", "call"):
            assert (REPO / "templates" / "ops" / f"{s.family}_{part}.c.j2").is_file()
        kernel = s.kernel
        if kernel is not None:
            assert re.search(rf"\b{kernel.function}\s*\(", header), kernel.function
            assert re.search(rf"\b{kernel.struct}\b", header), kernel.struct


# ---- no op name restated as a string -----------------------------------------------------

# The operator table, the TFLite name mapping, and the vocabulary (whose Activation names
# RELU, RELU6 and TANH as TFLite's fused activations).
ALLOWED = {"core/operators.py", "frontend/tflite_mapping.py", "core/terms.py"}
SKIPPED = {"tests", "build", "rip.egg-info"}  # any folder of these names, at any depth


def _package_files() -> list[Path]:
    return [
        p
        for p in sorted(REPO.rglob("*"))
        if p.is_file()
        and p.suffix in (".py", ".j2")
        and not any(part.startswith(".") for part in p.relative_to(REPO).parts)
        and not SKIPPED & set(p.relative_to(REPO).parts[:-1])
    ]


def _literals(path: Path) -> list[str]:
    """The string literals of a Python file (tokens, so comments and docstring prose of
    longer strings do not count), or the quoted words of a template."""
    text = path.read_text()
    if path.suffix == ".j2":
        return re.findall(r"[\"']([A-Z][A-Z0-9_]*)[\"']", text)
    found = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.STRING:
            try:
                value = ast.literal_eval(tok.string)
            except (ValueError, SyntaxError):  # an f-string
                continue
            if isinstance(value, str):
                found.append(value)
    return found


def test_op_names_are_written_only_in_the_operator_table() -> None:
    names = {op.value for op in Op}
    files: dict[str, set[str]] = defaultdict(set)
    for path in _package_files():
        for value in _literals(path):
            if value in names:
                files[value].add(str(path.relative_to(REPO)))
    assert files, "the scan found no op name at all: it is broken"
    assert {n: f for n, f in files.items() if len(f) > 3 or f - ALLOWED} == {}
