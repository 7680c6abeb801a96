"""What calling scalemodel from Python costs over the C++ call (docs/PERFORMANCE.md).

    PYTHONPATH=build/python /usr/bin/python3 bench/python_overhead.py [build/scalemodel]

train(): the same prediction timed in C++ alone (_core._time_train_cpp) and through the Python
function (plain dicts, and with DataFrames); search(): a 10,000-layout-class search from Python
against the same search run by the binary.
"""
import json
import subprocess
import sys
import time

import scalemodel as sm
from scalemodel import _core

SCENARIO = {"model": {"preset": "gpt3-175b"}, "system": {"preset": "dgx-a100-80gb"},
            "parallel": {"tp": 8, "pp": 8, "dp": 1, "vp": 3, "sequence_parallel": True, "microbatch": 1,
                         "recompute": "selective"},
            "training": {"global_batch": 64, "precision": "fp16"}}


def per_call(f, n):
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            f()
        best = min(best, (time.perf_counter() - t) / n)
    return best


def main():
    n = 2000
    text = json.dumps(SCENARIO)
    cpp = min(_core._time_train_cpp(text, [], n) for _ in range(5))
    plain = per_call(lambda: sm.train(SCENARIO, tables=False), n)
    frames = per_call(lambda: sm.train(SCENARIO), 200)
    print(f"train: C++ {cpp * 1e6:.1f} us; Python (dicts) {plain * 1e6:.1f} us, overhead {(plain - cpp) * 1e6:.1f} us; "
          f"with DataFrames {frames * 1e6:.0f} us")
    binary = sys.argv[1] if len(sys.argv) > 1 else "build/scalemodel"
    args = ["examples/search-gpt3-175b.json", "--gpus", "4096", "--top", "1", "--threads", "1"]
    t = time.perf_counter()
    r = sm.search(args[0], 4096, top=1, threads=1)
    py_s = time.perf_counter() - t
    t = time.perf_counter()
    out = subprocess.run([binary, "search", *args, "--format", "json", "--no-progress"], capture_output=True, check=True).stdout
    cli_s = time.perf_counter() - t
    cli = json.loads(out)
    print(f"search 4,096 GPUs ({r['evaluated']:,} layouts costed, 1 thread): Python {py_s:.3f} s wall "
          f"(engine {r['elapsed_s']:.3f} s), CLI {cli_s:.3f} s wall (engine {cli['elapsed_s']:.3f} s)")


if __name__ == "__main__":
    main()
