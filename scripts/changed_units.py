#!/usr/bin/env python3
"""The translation units of src/ that a change since commit BASE can affect: each .cpp whose
compile (its dependency file in BUILD_DIR) reads a file changed since BASE, one a line as a
regular expression matching its absolute path alone (run-clang-tidy's file arguments).
Prints `all` when the change reaches every unit's compile alike (the build files, .clang-tidy),
or when BASE or the dependency files cannot be read. Standard library only.

Usage (repository root): scripts/changed_units.py BASE BUILD_DIR
"""
import re
import subprocess
import sys
from pathlib import Path

# A change to one of these can change what every unit's check sees.
GLOBAL = re.compile(r"^(CMakeLists\.txt|cmake/.*|\.clang-tidy)$")


def main() -> int:
    base, build = sys.argv[1], Path(sys.argv[2]).resolve()
    root = Path.cwd().resolve()
    try:
        changed = subprocess.run(["git", "diff", "--name-only", base, "--"], cwd=root, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, check=True, text=True).stdout.split()
    except subprocess.CalledProcessError:
        print("all")
        return 0
    if any(GLOBAL.match(f) for f in changed):
        print("all")
        return 0
    changed_abs = {str(root / f) for f in changed}
    depfiles = list(build.glob("CMakeFiles/*.dir/src/**/*.cpp.o.d"))
    if not depfiles:
        print("all")
        return 0
    units = set()
    for d in depfiles:
        deps = d.read_text(errors="replace").replace("\\\n", " ").split(":", 1)[-1].split()
        if deps and deps[0].startswith(str(root / "src")) and changed_abs.intersection(deps):
            units.add(deps[0])
    print("\n".join(re.escape(u) + "$" for u in sorted(units)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
