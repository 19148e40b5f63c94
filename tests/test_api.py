"""The Python API (issue 24 item 6): ``import rip`` is light; ``rip.plan`` gives the arena,
scratch, fit and per-op table; ``rip.emit`` writes (and runs) the project; ``rip.reference``
runs TFLite Micro; ``Compilation.report()`` is the JSON report; bad input raises the typed errors of
rip.core.errors, with the exit codes the command line uses."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from paths import shared_path

import rip
from rip import api
from rip.cli.compile import main
from rip.core import errors

IN3 = ("models", "mcunet", "mcunet-in3.tflite")
IN4 = ("models", "mcunet", "mcunet-in4.tflite")
KWS = ("models", "tinyml", "mlperf-kws_ref_model.tflite")


def test_import_rip_is_light():
    """``import rip`` loads the package root alone (no numpy, Pyomo, matplotlib, no stage);
    ``rip.plan`` imports the API on first use."""
    code = (
        "import sys, rip; heavy = ('numpy', 'pyomo', 'matplotlib', 'tflite');"
        "print(sorted(m for m in sys.modules if m.startswith('rip') or m in heavy));"
        "rip.plan; print('rip.api' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == ["['rip']", "True"]
    assert set(rip.__all__) >= {"plan", "emit", "reference", "Compilation", "FitError"}
    assert sorted(rip.__all__) == sorted([*api.__all__, "__version__"])  # one list each
    # each a function, not a submodule of the same name (rip.report is the formatter)
    assert all(callable(getattr(rip, name)) for name in ("plan", "emit", "reference"))
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = rip.nothing  # type: ignore[attr-defined]


def test_plan_gives_the_papers_arenas_and_the_fit():
    """Sec. 5.4 and Table 3: MCUNet-in3 under rip needs 185,856 B of activations and fits a
    Pico; under TinyEngine's schedule 247,808 B. The arena holds the kernels' scratch too:
    each figure is at least the paper's activations and at most those plus the paper's
    Buffer column (TinyEngine's scratch, 18,536 B), and the fit adds only the SDK's share."""
    result = rip.plan(shared_path(*IN3), board="pico", strategy="rip")
    assert result.model == "mcunet-in3" and result.board.name == "pico"
    assert 185_856 < result.arena_bytes <= 185_856 + 18_536 and result.fits
    assert result.fit.needed_bytes == result.arena_bytes + result.board.fixed_overhead_bytes
    plans = result.strategies
    assert set(plans) == {"dual", "tinyengine", "rip", "fused"}
    assert 247_808 < plans["tinyengine"].arena_bytes <= 247_808 + 18_536
    assert plans["rip"].optimal is True and plans["rip"].placer == "milp"
    ops = result.ops
    assert sum(1 for r in ops if r["op"] == "CONV_2D") == 37  # as the file has
    assert ops[0]["index"] == 0 and {"inputs", "output", "scratch_bytes"} <= set(ops[0])
    assert max(r["scratch_bytes"] for r in ops) == result.scratch_bytes


def test_plan_and_report_equal_what_the_command_line_prints(capsys):
    """The CLI is a layer over the same calls: ``rip.report`` is ``--json``'s report."""
    model = shared_path(*IN3)
    result = rip.plan(model, board="pico", strategy="rip")  # the paper's Table 3 figure
    assert main([str(model), "--board", "pico", "--strategy", "rip", "--json", "--quiet"]) == 0
    printed = json.loads(capsys.readouterr().out)
    ours = json.loads(json.dumps(result.report(), default=str))
    for key in ("arena_bytes", "scratch_bytes", "needed_sram_bytes", "fits", "op_table"):
        assert ours[key] == printed[key], key
    assert f"selected: rip / milp: arena {result.arena_bytes:,} B" in result.text()
    assert result.text().splitlines()[-1].startswith("next: rip-compile ")


def test_emit_runs_on_the_host_and_matches_the_reference(tmp_path):
    """A shared model (MLPerf Tiny keyword spotting) planned, emitted, built and run on the
    host: its checksum equals TFLite Micro's, which ``rip.reference`` computes alone."""
    model = shared_path(*KWS)
    planned = rip.plan(model, board="host", strategies=("rip",))
    made = rip.emit(planned, tmp_path / "out", run=True)
    assert made.output_dir == tmp_path / "out" and (tmp_path / "out" / "model.c").is_file()
    assert made.match is True and made.checksum == made.reference_checksum
    ref = rip.reference(model)
    assert ref.status == "ok" and ref.checksum == made.checksum
    assert rip.reference(planned).checksum == ref.checksum
    assert made.arena_bytes == planned.arena_bytes  # the plan emitted is the plan made


def test_emit_from_a_file_writes_a_pico_project(tmp_path):
    made = rip.emit(shared_path(*IN3), tmp_path / "pico", board="pico", strategy="rip")
    assert set(made.strategies) == {"rip"}  # only the selected strategy is planned
    assert (tmp_path / "pico" / "CMakeLists.txt").is_file() and made.match is None
    assert made.text().splitlines()[-1].startswith("next: rip-compile ")


def test_emit_refuses_a_plan_that_does_not_fit_naming_what_would(tmp_path):
    """MCUNet-in4 under rip on a Pico: FitError (exit 3) naming fused, and the Pico 2 that
    the same plan fits; nothing written. ``force`` writes it anyway."""
    planned = rip.plan(shared_path(*IN4), board="pico", strategy="rip")
    assert not planned.fits and planned.strategies["fused"].fit.fits
    with pytest.raises(rip.FitError) as e:
        rip.emit(planned, tmp_path / "out")
    assert e.value.exit_code == 3 and e.value.strategies == ("fused",)
    assert e.value.boards == ("pico2",) and not (tmp_path / "out").exists()
    with pytest.raises(rip.FitError, match="--strategy fused fits"):  # planned on demand
        rip.emit(shared_path(*IN4), tmp_path / "out", board="pico", strategy="rip")
    forced = rip.emit(planned, tmp_path / "out", force=True)
    # a Pico project keeps the model in its library folder (model/)
    assert (tmp_path / "out" / "model" / "model.c").is_file() and not forced.fits


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda m, t: rip.plan(t / "missing.tflite"), errors.ModelError, "no such file"),
        (lambda m, t: rip.plan(t / "text.tflite"), errors.ModelError, "not a TFLite file"),
        (lambda m, t: rip.plan(m, board="uno"), errors.OptionError, "unknown board 'uno'"),
        (lambda m, t: rip.plan(m, board=3), errors.OptionError, "board must be"),  # type: ignore[arg-type]
        (lambda m, t: rip.plan(m, strategy="worst"), errors.OptionError, "strategy must be one"),
        (lambda m, t: rip.plan(m, strategies=["x"]), errors.OptionError, "got 'x'"),
        (lambda m, t: rip.plan(m, placer="greedy"), errors.OptionError, "placer must be one"),
        (lambda m, t: rip.plan(m, time_limit=0), errors.OptionError, "time limit 0"),
        (lambda m, t: rip.plan(m, time_limit=float("inf")), errors.OptionError, "time limit"),
        (lambda m, t: rip.plan(m, max_overhead=-1), errors.OptionError, "max overhead -1"),
        (lambda m, t: rip.emit(m, t / "o", repeat=0), errors.OptionError, "repeat 0"),
        (lambda m, t: rip.emit(m, t / "o", speed=1), errors.OptionError, "unknown option speed"),
        (lambda m, t: rip.emit(m, t / "text.tflite"), errors.OutputError, "text.tflite"),
        (lambda m, t: rip.emit(m, t / "o", board="pico", run=True), errors.RipError, "--run"),
    ],
)
def test_bad_input_raises_a_typed_error(tmp_path, call, error, words):
    (tmp_path / "text.tflite").write_text("not a model at all\n" * 4)
    with pytest.raises(error, match=words) as e:
        call(shared_path(*KWS), tmp_path)
    assert e.value.exit_code == 2 and isinstance(e.value, rip.RipError)
    assert not (tmp_path / "o").exists()
