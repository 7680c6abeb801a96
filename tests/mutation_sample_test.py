#!/usr/bin/env python3
"""The mutation gate's selection (scripts/mutation.py, docs/TESTING.md): a mutant's place in the
sample is its own, so an edit redraws only the mutants on the lines it touches, and the lines a
change touched are read from git exactly. Standard library only; run by CTest.

Usage: mutation_sample_test.py SOURCE_DIR
"""
import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

root = Path(sys.argv[1])
spec = importlib.util.spec_from_file_location("mutation", root / "scripts" / "mutation.py")
mutation = importlib.util.module_from_spec(spec)
sys.modules["mutation"] = mutation  # dataclasses look their module up
spec.loader.exec_module(mutation)
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


ADDED = """
double an_added_function(double a, double b) {
    if (a > b && b >= 0) return a * 2 + b / 3;
    return std::max(a - 1, b);
}
"""

with tempfile.TemporaryDirectory() as tmp:
    repo = Path(tmp)
    src = (root / "src" / "model" / "ops.cpp").read_text()
    rel = "src/model/ops.cpp"
    (repo / "src" / "model").mkdir(parents=True)
    (repo / rel).write_text(src)
    git = lambda *a: subprocess.run(["git", *a], cwd=repo, check=True, capture_output=True, text=True)  # noqa: E731
    git("init", "-q")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "empty")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "base")

    before = mutation.generate(repo, rel)
    # The function goes in after the file's first function, so every later line moves down.
    cut = src.index("\n}\n") + 3
    edited = src[:cut] + ADDED + src[cut:]
    (repo / rel).write_text(edited)
    after = mutation.generate(repo, rel)
    added_lines = set(range(src[:cut].count("\n") + 1, src[:cut].count("\n") + ADDED.count("\n") + 1))
    new_ids = {m.id for m in after} - {m.id for m in before}
    check({m.line for m in after if m.id in new_ids} <= added_lines, "an added function gave new ids outside its lines")
    check(len(new_ids) >= 8, f"the added function should give mutants of its own ({len(new_ids)})")
    check({m.id for m in before} <= {m.id for m in after}, "an added function changed ids of lines it did not touch")
    for n in (24, 250, 5000):
        s0 = {m.id for m in mutation.sampled(before, n, 1)}
        s1 = {m.id for m in mutation.sampled(after, n, 1)}
        check(s0 <= s1 and s1 - s0 <= new_ids, f"--mutants {n}: the sample changed beyond the added lines")
    # A rate, not a count: about n per SAMPLE_SCALE mutants, and a smaller n a subset of a larger one.
    pool = len(before)
    for n in (24, 250):
        got = len(mutation.sampled(before, n, 1))
        expect = n * pool / mutation.SAMPLE_SCALE
        check(abs(got - expect) < 5 * expect ** 0.5 + 1, f"--mutants {n}: {got} drawn, expected about {expect:.0f}")
    check({m.id for m in mutation.sampled(before, 24, 1)} <= {m.id for m in mutation.sampled(before, 250, 1)},
          "the 24-mutant sample is not inside the 250-mutant one")
    check({m.id for m in mutation.sampled(before, 24, 1)} != {m.id for m in mutation.sampled(before, 24, 2)},
          "the seed does not change the sample")

    # Changed lines: the new side of the diff against the base commit, working tree included.
    # (git may slide the hunk by the blank line that opens it: the code lines are fixed.)
    code_lines = {n for n in added_lines if edited.splitlines()[n - 1].strip()}
    lines = mutation.changed_lines(repo, "HEAD", [rel]).get(rel, set())
    check(code_lines <= lines and len(lines) == len(added_lines), f"changed_lines read {sorted(lines)}, not {sorted(added_lines)}")
    # An edited line counts; a deleted one leaves nothing to mutate.
    one = edited.splitlines(keepends=True)
    k = next(i for i, line in enumerate(one) if " * " in line and i + 1 not in added_lines)
    one[k] = one[k].replace(" * ", " / ", 1)
    (repo / rel).write_text("".join(one))
    check(mutation.changed_lines(repo, "HEAD", [rel]).get(rel) == lines | {k + 1}, "an edited line is not read as changed")
    (repo / rel).write_text(src)
    check(mutation.changed_lines(repo, "HEAD", [rel]) == {}, "an unchanged tree has changed lines")
    # A file new since the base counts whole.
    (repo / "src" / "new.cpp").write_text("int f(int a) {\n    return a + 1;\n}\n")
    git("add", "-A")
    check(mutation.changed_lines(repo, "HEAD", ["src/new.cpp"]).get("src/new.cpp") == {1, 2, 3}, "a new file is not whole")

if failures:
    print("\n".join("FAIL: " + f for f in failures))
    sys.exit(1)
print("mutation sample: stable under an added function; changed lines read from git")
