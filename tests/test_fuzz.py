"""Fuzzing the reader, the validator and the planner (Hypothesis).

Property: whatever the bytes, ``read_model`` returns a graph or raises a one-line
``ModelError``; a graph it returns goes through rewriting, requirements and first-fit
planning to a plan or a ``RipError``, never another exception, a hang or unbounded memory.
The same for ``rip-bounds``'s layer evaluation on arbitrary JSON-like fields.

CI runs the ``ci`` profile: derandomized (the same examples every run), a bounded number
of examples (tens of seconds in all). ``make fuzz`` runs the ``fuzz`` profile
(``RIP_FUZZ_PROFILE=fuzz``): random, many more examples. A crash it finds is fixed and its
input added to tests/make_bad_models.py (the corpus) as a regression case.
"""

from __future__ import annotations

import os
import random

import make_bad_models as mbm
import pytest
import tflite
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rip.allocator.planning.options import PlanOptions
from rip.allocator.planning.parallel import plan_model
from rip.allocator.planning.requirements import requirements
from rip.cli.bounds import evaluate
from rip.core.errors import LayerError, ModelError, RipError
from rip.core.terms import Placer
from rip.frontend.reader import read_model
from rip.frontend.rewrite import rewrite

FIRST_FIT = PlanOptions(placer=Placer.FIRSTFIT)

settings.register_profile(
    "ci",
    max_examples=60,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "fuzz",
    max_examples=int(os.environ.get("RIP_FUZZ_EXAMPLES", "5000")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
PROFILE = settings.get_profile(os.environ.get("RIP_FUZZ_PROFILE", "ci"))

BASE = mbm.base().to_bytes()


def compile_or_refuse(data: bytes) -> None:
    """The property: a plan, or a one-line RipError."""
    try:
        graph = read_model(data, name="fuzz")
    except ModelError as e:
        assert "\n" not in str(e) and str(e).startswith("fuzz: ")
        return
    try:
        graph = rewrite(graph)
        req = requirements(graph)
        plan_model(graph, req, "rip", FIRST_FIT)
    except RipError as e:
        assert "\n" not in str(e)


@PROFILE
@given(st.lists(st.tuples(st.integers(0, len(BASE) - 1), st.integers(0, 255)), max_size=8))
def test_byte_mutants(patches: list[tuple[int, int]]) -> None:
    data = bytearray(BASE)
    for at, value in patches:
        data[at] = value
    compile_or_refuse(bytes(data))


@PROFILE
@given(st.integers(0, len(BASE)))
def test_truncations(length: int) -> None:
    compile_or_refuse(BASE[:length])


_TYPES = [getattr(tflite.TensorType, n) for n in vars(tflite.TensorType) if n.isupper()]
_OPTIONS = [n for n in vars(tflite.BuiltinOptions) if n.endswith("Options")][:40]


@st.composite
def structural_mutant(draw: st.DrawFn) -> bytes:
    """The base model with a few fields changed to values ModelBuilder never writes."""
    m = mbm.base()
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    for _ in range(draw(st.integers(1, 4))):
        t = rng.choice(m.tensors)
        op = rng.choice(m.operators)
        what = draw(st.sampled_from(range(10)))
        if what == 0:
            t.shape = draw(st.lists(st.integers(-2, 70000), max_size=5))
        elif what == 1:
            t.type = draw(st.sampled_from([*_TYPES, 99]))
        elif what == 2:
            t.buffer = draw(st.integers(-1, len(m.buffers) + 2))
        elif what == 3:
            t.scales = draw(st.lists(st.floats(allow_nan=True, width=32), max_size=5))
            t.zero_points = draw(st.lists(st.integers(-300, 300), max_size=5))
            t.axis = draw(st.integers(-1, 4))
        elif what == 4:
            op.inputs = draw(st.lists(st.integers(-2, len(m.tensors) + 1), max_size=4))
        elif what == 5:
            op.outputs = draw(st.lists(st.integers(-2, len(m.tensors) + 1), max_size=2))
        elif what == 6:
            op.options_type = draw(st.sampled_from([None, *_OPTIONS]))
            op.options = ()
        elif what == 7:
            op.opcode = draw(st.sampled_from(sorted(mbm.tw._OP_VERSION)))
        elif what == 8:
            m.inputs = draw(st.lists(st.integers(-1, len(m.tensors)), max_size=3))
            m.outputs = draw(st.lists(st.integers(-1, len(m.tensors)), max_size=3))
        else:
            rng.shuffle(m.operators)
    try:
        return m.to_bytes()
    except Exception:  # the writer cannot serialise it (e.g. a negative buffer index)
        return BASE


@PROFILE
@given(structural_mutant())
def test_structural_mutants(data: bytes) -> None:
    compile_or_refuse(data)


_FIELD_VALUES = st.one_of(
    st.integers(-3, 2**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.text(max_size=12),
    st.lists(st.one_of(st.integers(-3, 100), st.booleans(), st.floats()), max_size=5),
)


@PROFILE
@given(
    st.fixed_dictionaries(
        {"input": _FIELD_VALUES, "cin": _FIELD_VALUES, "cout": _FIELD_VALUES},
        optional={
            k: _FIELD_VALUES
            for k in ("kernel", "stride", "dilation", "padding", "scheme", "order", "layout")
        },
    )
)
def test_bounds_fields(fields: dict) -> None:
    try:
        evaluate(fields)
    except LayerError as e:
        assert "\n" not in str(e)
    except RipError as e:  # pragma: no cover - every refusal is a LayerError today
        pytest.fail(f"not a LayerError: {e}")
