#!/usr/bin/env bash
# Installs the Debian packages scalemodel needs to build and test. Idempotent: installs only
# what is missing. Uses sudo when not root.
set -euo pipefail
pkgs=(build-essential cmake nlohmann-json3-dev libcli11-dev libfmt-dev libgtest-dev libgmock-dev
      libbenchmark-dev python3)
# Optional for building (CMake skips scalemodel_mpi without it), installed so that the MPI build
# and its test run: `mpirun -n K build/scalemodel_mpi sweep ...` splits a study across ranks.
pkgs+=(libopenmpi-dev openmpi-bin)
# The Python module (build/python/scalemodel), its plots and its tests: Debian's interpreter and
# libraries (CMake builds the module for /usr/bin/python3, where these are).
pkgs+=(pybind11-dev python3-dev python3-pytest python3-matplotlib python3-pandas python3-numpy)
# `pip install --no-build-isolation .` into a --system-site-packages venv (README; ctest
# python_pip_install): Debian's venv module, pip and setuptools, nothing downloaded.
pkgs+=(python3-venv python3-pip python3-setuptools)
# `scalemodel explore`: the web server and the chart library the page loads from this machine.
pkgs+=(libcpp-httplib-dev pkg-config libjs-chart.js)
# .ci/run's browser test of the explorer: headless Chromium driven by Selenium.
[[ ${SCALEMODEL_WITH_BROWSER:-0} == 1 ]] && pkgs+=(chromium chromium-driver python3-selenium)
if [[ ${SCALEMODEL_WITH_CLANG:-0} == 1 ]]; then
  pkgs+=(clang clang-tidy)
  # libFuzzer and the sanitizer runtimes ship as libclang-rt-N-dev for clang N: match the clang
  # installed (or, before it is, the one the distribution's clang package depends on).
  major=$(clang --version 2>/dev/null | sed -nE 's/.*clang version ([0-9]+).*/\1/p' | head -1)
  [[ -z $major ]] && major=$(apt-cache depends clang 2>/dev/null | sed -nE 's/.*Depends: clang-([0-9]+)$/\1/p' | head -1)
  [[ -n $major ]] && pkgs+=("libclang-rt-$major-dev")
fi
[[ ${SCALEMODEL_WITH_COVERAGE:-0} == 1 ]] && pkgs+=(gcovr)  # make coverage
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0
SUDO=""
[[ $(id -u) -ne 0 ]] && SUDO="sudo"
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
# clang was not there to ask: now that it is, add its runtime package (once).
if [[ ${SCALEMODEL_WITH_CLANG:-0} == 1 && -z ${major:-} && -z ${SCALEMODEL_DEPS_AGAIN:-} ]]; then
  SCALEMODEL_DEPS_AGAIN=1 exec bash "$0"
fi
