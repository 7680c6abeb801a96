#!/usr/bin/env python3
"""scripts/serving_errors.py against a hand case: two TPOT rows of one backend, errors +10% and
-30% (mean |e| 20%, median |e| 20%, median signed -10%, one of two within 25%), one at C 2 and one
at C 300; a training row and a row of another data set are ignored."""
import json
import os
import subprocess
import sys
import tempfile

root = sys.argv[1]
with tempfile.TemporaryDirectory() as d:
    data = os.path.join(d, "set.csv")
    with open(data, "w") as f:
        f.write("id,backend,concurrency\na,vllm,2\nb,vllm,300\nc,vllm,\n")
    cases = {"cases": [{"id": "a", "metric": "tpot_s", "error": 0.1}, {"id": "b", "metric": "tpot_s", "error": -0.3},
                       {"id": "c", "metric": "tpot_s", "error": 9.0}, {"id": "z", "metric": "tpot_s", "error": 9.0}]}
    out = subprocess.run([sys.executable, os.path.join(root, "scripts", "serving_errors.py"), data], input=json.dumps(cases),
                         capture_output=True, text=True, check=True).stdout
lines = out.splitlines()
want = {
    "all": "2  mean |e|   20.0%  median |e|   20.0%  median  -10.0%  within 25%  50%",
    "vllm": "2  mean |e|   20.0%  median |e|   20.0%  median  -10.0%  within 25%  50%",
    "C <= 4": "1  mean |e|   10.0%  median |e|   10.0%  median  +10.0%  within 25% 100%",
    "C > 256": "1  mean |e|   30.0%  median |e|   30.0%  median  -30.0%  within 25%   0%",
}
assert lines[0] == "tpot_s", out
got = {l[2:16].strip(): " ".join(l[16:].split()) for l in lines[1:]}
for k, v in want.items():
    assert got.get(k) == " ".join(v.split()), (k, got.get(k), out)
assert set(got) == set(want), out
print("ok")
