#!/usr/bin/env python3
"""Line and branch coverage of src/ over the whole test suite (unit tests and the CLI scripts).

Builds with gcov instrumentation in build-coverage/ (never the user's build), runs every CTest
test, and reports with gcovr (Debian package; `make coverage` installs it) per file and per src/
directory. Writes build-coverage/coverage.txt, coverage-summary.json and coverage.html.
Standard library only, besides gcovr.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path


def sh(cmd: list[str], cwd: Path) -> None:
    print("coverage: " + " ".join(cmd), flush=True)
    subprocess.run(cmd, cwd=cwd, check=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--build-dir", default="build-coverage")
    args = ap.parse_args()
    root = Path(__file__).resolve().parent.parent
    build = (root / args.build_dir).resolve()
    # -O1: at -O0 each brute-force search case runs for more than 6 minutes. Atomic counters
    # because the search runs threads.
    flags = "--coverage -fprofile-update=atomic"
    sh(["cmake", "-S", str(root), "-B", str(build), "-DCMAKE_BUILD_TYPE=Debug", "-DSCALEMODEL_BENCH=OFF",
        f"-DCMAKE_CXX_FLAGS={flags}", "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g", "-DCMAKE_EXE_LINKER_FLAGS=--coverage"], root)
    sh(["cmake", "--build", str(build), "-j", str(args.jobs)], root)
    for gcda in build.rglob("*.gcda"):  # counters of an earlier run
        gcda.unlink()
    # A failing test still leaves its counters; report coverage and then the failure.
    tests = subprocess.run(["ctest", "--output-on-failure", "-j", str(args.jobs)], cwd=build)
    summary = build / "coverage-summary.json"
    sh(["gcovr", "--root", str(root), "--object-directory", str(build), "--filter", str(root / "src") + "/",
        "--exclude-throw-branches", "--exclude-unreachable-branches", "--gcov-ignore-parse-errors",
        "--txt", str(build / "coverage.txt"), "--json-summary", str(summary),
        "--html-details", str(build / "coverage.html")], root)
    per_dir: dict[str, list[int]] = {}
    for f in json.loads(summary.read_text())["files"]:
        d = "/".join(Path(f["filename"]).parts[:2])
        acc = per_dir.setdefault(d, [0, 0, 0, 0])
        for i, key in enumerate(["line_covered", "line_total", "branch_covered", "branch_total"]):
            acc[i] += f[key]
    pct = lambda a, b: 100.0 * a / b if b else 100.0  # noqa: E731
    print(f"\n{'directory':18} {'lines':>16} {'branches':>18}")
    total = [0, 0, 0, 0]
    for d, (lc, lt, bc, bt) in sorted(per_dir.items()):
        print(f"{d:18} {pct(lc, lt):6.1f}% {lc:4}/{lt:<5} {pct(bc, bt):6.1f}% {bc:5}/{bt:<5}")
        total = [t + v for t, v in zip(total, (lc, lt, bc, bt))]
    lc, lt, bc, bt = total
    print(f"{'src/ total':18} {pct(lc, lt):6.1f}% {lc:4}/{lt:<5} {pct(bc, bt):6.1f}% {bc:5}/{bt:<5}")
    print(f"per file: {build / 'coverage.txt'}; annotated source: {build / 'coverage.html'}")
    if tests.returncode != 0:
        print("coverage: some tests failed (see above)", file=sys.stderr)
    return tests.returncode


if __name__ == "__main__":
    sys.exit(main())
