#!/usr/bin/env python3
"""README.md's example outputs, generated from the binary.

Each example in README.md sits between
    <!-- example N: ARGS -->   (N: the lines of output shown; "all" for every line)
    <!-- end example -->
and is rewritten as a fenced block: "$ build/scalemodel ARGS", then the first N lines of what
`BIN ARGS` prints (stdout), run from the repository root.

    readme_examples.py BIN            rewrite README.md in place
    readme_examples.py BIN --check    exit 1 when README.md differs (a CTest test); the search
                                      speed and thread count, which vary by machine, are masked
"""
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
BEGIN = re.compile(r"^<!-- example (\d+|all): (.*) -->$")
END = "<!-- end example -->"
# What differs from run to run and machine to machine: elapsed time, rate and threads.
VARYING = [(re.compile(r"in \d+\.\d+ s"), "in T s"),
           (re.compile(r"\d+(\.\d+)? [kM]?layouts/s on \d+ threads?"), "R layouts/s on N threads")]


def render(binary, lines, args):
    out = subprocess.run([binary, *shlex.split(args)], cwd=ROOT, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit(f"readme_examples: `scalemodel {args}` exited {out.returncode}: {out.stderr.strip()}")
    shown = out.stdout.splitlines()
    if lines != "all":
        shown = shown[: int(lines)]
    return ["```", f"$ build/scalemodel {args}", *shown, "```"]


def regenerate(binary, text):
    result, skipping = [], False
    for line in text.splitlines():
        m = BEGIN.match(line)
        if m:
            result.append(line)
            result.extend(render(binary, m.group(1), m.group(2)))
            skipping = True
            continue
        if line == END:
            skipping = False
        if not skipping:
            result.append(line)
    if skipping:
        sys.exit("readme_examples: an example has no <!-- end example -->")
    return "\n".join(result) + "\n"


def masked(text):
    for pattern, replacement in VARYING:
        text = pattern.sub(replacement, text)
    return text


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = str(Path(sys.argv[1]).resolve())
    text = README.read_text()
    fresh = regenerate(binary, text)
    if sys.argv[2:] == ["--check"]:
        if masked(fresh) != masked(text):
            for old, new in zip(masked(text).splitlines(), masked(fresh).splitlines()):
                if old != new:
                    print(f"README.md is stale (run make docs): committed\n  {old}\ngenerated\n  {new}")
                    break
            else:
                print("README.md is stale (run make docs): the line counts differ")
            return 1
        return 0
    README.write_text(fresh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
