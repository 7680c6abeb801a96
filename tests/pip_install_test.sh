#!/usr/bin/env bash
# The README's `pip install` as a new user runs it, by ctest: a virtual environment made with
# --system-site-packages from the interpreter the engine is built for, `pip install
# --no-build-isolation --no-index .` of a copy of the package's files (so the checkout gets no
# build files), then the installed package, imported from outside the tree, runs `train` and
# gives a DataFrame. SCALEMODEL_BUILD_DIR points setup.py at this build directory, where the
# engine is already built: the test takes seconds, not a second build.
# Usage: pip_install_test.sh PYTHON SOURCE_DIR BUILD_DIR
set -euo pipefail
PY=${1:?usage: pip_install_test.sh PYTHON SOURCE_DIR BUILD_DIR}
SRC=${2:?}
BUILD=${3:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src"
cp -r "$SRC/setup.py" "$SRC/pyproject.toml" "$SRC/README.md" "$SRC/python" "$tmp/src/"
rm -rf "$tmp/src/python/tests"
"$PY" -m venv --system-site-packages "$tmp/venv"
(cd "$tmp/src" && SCALEMODEL_BUILD_DIR="$BUILD" "$tmp/venv/bin/python" -m pip install -q --no-build-isolation --no-index --no-deps .)
cd "$tmp"
"$tmp/venv/bin/python" - "$SRC" <<'PY'
import sys
import scalemodel as sm
assert "/venv/" in sm.__file__, f"imported from {sm.__file__}, not the virtual environment"
r = sm.train(f"{sys.argv[1]}/examples/gpt3-175b-64xa100.json")
assert r["step_time_s"] > 0, r["step_time_s"]
import pandas
assert isinstance(r["stages"], pandas.DataFrame), type(r["stages"])
print(f"installed at {sm.__file__}; train: {r['step_time_s']:.3f} s")
PY
