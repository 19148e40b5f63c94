"""ARMv6-M's requantisation in three 32-bit products (rip_rq3_prepare and
rip_rq3_requantize in kernels/rip_support.h) against TFLite's arithmetic (test_requant's
transcription of gemmlowp, not the code under test): on the host and on the emulated
Cortex-M0+, for accumulators across the whole +-2^20 it accepts, their ends and rounding
ties, and the channels it must refuse."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from tests import cbuild as cb
from tests.test_requant import tflite_requantize

LIMIT = 2**20  # |acc| and |round| below it


def cases(seed: int, n: int) -> list[tuple[int, int, int, int, int]]:
    """(multiplier, round, e, acc, TFLite's output before the clamp) of accepted channels."""
    rng = random.Random(seed)
    out: list[tuple[int, int, int, int, int]] = []
    while len(out) < n:
        m = rng.choice([rng.randrange(2**30, 2**31), rng.randrange(0, 2**31), 0, 2**31 - 1])
        e = rng.randrange(1, 23)
        zp = rng.randrange(-128, 128)
        round_ = 2 ** (e - 1) + zp * 2**e
        if not -LIMIT < round_ < LIMIT:
            continue
        tie = rng.randrange(-(2**12), 2**12) << max(0, e - 1)  # t on a rounding tie
        tie_acc = (tie << 31) // m if m else 0
        for acc in (rng.randrange(-LIMIT + 1, LIMIT), LIMIT - 1, -LIMIT + 1, 0, -1, tie_acc):
            if -LIMIT < acc < LIMIT:
                out.append((m, round_, e, acc, tflite_requantize(acc, m, -e, zp)))
    return out


def harness(rows: list[tuple[int, int, int, int, int]]) -> str:
    """A program returning 0 where every row's output is TFLite's and the refusals hold
    (`check` is the QEMU prelude's; the host build defines its own)."""
    table = ",\n".join(f"{{{m}, {r}, {e}, {a}, {y}}}" for m, r, e, a, y in rows)
    return f"""
#include "rip_support.h"
static const int32_t rows[][5] = {{
{table}
}};
int main(void) {{
    int fails = 0;
    for (unsigned i = 0; i < sizeof rows / sizeof rows[0]; ++i) {{
        rip_rq3 r;
        const int32_t *c = rows[i];
        const uint32_t bound = (uint32_t)(c[3] < 0 ? -c[3] : c[3]);
        if (!rip_rq3_prepare(c[0], c[1], c[2], bound, &r) ||
            rip_rq3_requantize(&r, c[3]) != c[4]) {{
            ++fails;
        }}
    }}
    rip_rq3 r;
    /* refused: an accumulator or a round of 2^20, a negative multiplier, e + 9 > 31 */
    fails += rip_rq3_prepare(1 << 30, 0, 1, 1u << 20, &r);
    fails += rip_rq3_prepare(1 << 30, 1 << 20, 21, 0, &r);
    fails += rip_rq3_prepare(-(1 << 30), 1, 1, 0, &r);
    fails += rip_rq3_prepare(1 << 30, 1, 23, 0, &r);
    const int8_t none = 0, seen = (int8_t)(fails > 0);
    return check("three products", 0, &seen, &none, 1);
}}
"""


def test_three_products_equal_tflite_on_the_host(tmp_path: Path) -> None:
    source = tmp_path / "rq3.c"
    prelude = (
        "#include <stdint.h>\n#include <stddef.h>\n"
        "static int check(const char *n, int s, const int8_t *g, const int8_t *w, size_t k) {\n"
        "    (void)n; (void)k; return s != 0 || *g != *w;\n}\n"
    )
    source.write_text(prelude + harness(cases(1, 4000)))
    exe = tmp_path / "rq3"
    cb.compile_c([cb.need_gcc(), "-O2", "-Wall", "-Wextra", "-Werror", f"-I{cb.KERNELS}",
                  str(source), "-o", str(exe)])  # fmt: skip
    assert subprocess.run([str(exe)]).returncode == 0


def test_three_products_equal_tflite_on_armv6m(tmp_path: Path) -> None:
    """The products wrap as the core's MULS does: the same outputs under QEMU."""
    cb.need_qemu()
    output = cb.qemu_program(harness(cases(2, 3000)), "cortex-m0plus", tmp_path)
    assert "PASS" in output, output


@pytest.mark.parametrize("seed", [3])
def test_the_cases_reach_the_ends(seed: int) -> None:
    """The table holds the accepted range's ends and negative and positive outputs."""
    rows = cases(seed, 600)
    accs = {a for _, _, _, a, _ in rows}
    assert {LIMIT - 1, -LIMIT + 1} <= accs
    assert min(y for *_, y in rows) < 0 < max(y for *_, y in rows)
