"""make bench / make bench-quick: regenerate docs/RESULTS.md, docs/results.json and
docs/figures/*.png from one run of the benchmarks (benchmarks/results/), and the README's
headline block.

    python benchmarks/make_results.py [--quick] [--jobs N] [--render-only]

``--quick``: the MCUNet models only (no keras graphs), fewer host repeats. ``--render-only``:
rewrite the page, the README block and the figures drawn from data (bars, scatter) from
docs/results.json without measuring. ``--pico``: measure the Pico timing section alone (it
takes long) into docs/results.json, the other sections kept from their run (the page's
section table says so), and rewrite the page; ``--models`` the same for the models section
(and the headline drawn from it); ``--cost`` the same for the cost section (and the
headline's instructions); ``--mlperf`` the same for the MLPerf Tiny section.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from results import run
from results.common import REPO


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="MCUNet models only")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--render-only", action="store_true", help="re-render docs/results.json")
    ap.add_argument("--pico", action="store_true",
                    help="measure only the Pico timing section into docs/results.json")  # fmt: skip
    ap.add_argument("--models", action="store_true",
                    help="measure only the models section (and the headline) into "
                    "docs/results.json")  # fmt: skip
    ap.add_argument(
        "--mlperf",
        action="store_true",
        help="measure only the MLPerf Tiny section into docs/results.json",
    )
    ap.add_argument(
        "--graphs",
        action="store_true",
        help="measure only the keras graphs section into docs/results.json",
    )
    ap.add_argument(
        "--cost",
        action="store_true",
        help="measure only the cost section (and the headline) into docs/results.json",
    )
    ap.add_argument(
        "--study",
        action="store_true",
        help="measure only the study section into docs/results.json",
    )
    args = ap.parse_args(argv)
    docs = REPO / "docs"
    page, data_path, readme = docs / "RESULTS.md", docs / "results.json", REPO / "README.md"
    if args.pico or args.models or args.graphs or args.mlperf or args.study or args.cost:
        data = json.loads(data_path.read_text())
        if args.study:
            run.add_study(data)
        if args.models:
            run.add_models(data)
        if args.graphs:
            run.add_graphs(data)
        if args.cost:
            run.add_cost(data, args.jobs)
        if args.pico:
            run.add_pico(data, args.jobs)
        if args.mlperf:
            run.add_mlperf(data, args.jobs)
    elif args.render_only:
        data = json.loads(data_path.read_text())
        if data.get("figures"):
            data["figures"].update(run.data_figures(data, docs / "figures", "figures"))
    else:
        command = "make bench-quick" if args.quick else "make bench"
        t0 = time.perf_counter()
        data = run.collect(
            args.quick,
            args.jobs,
            docs / "figures",
            "figures",
            command,
            "docs/results.json",
            "results.json",
        )
        print(f"[results] collected in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    run.write(data, page, data_path, readme, "docs/RESULTS.md")
    failed = [k for k, v in data["meta"]["sections"].items() if v["status"] == "failed"]
    print(
        f"[results] wrote {page.relative_to(REPO)}"
        + (f"; FAILED: {', '.join(failed)}" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
