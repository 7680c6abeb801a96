#!/usr/bin/env bash
# Installs the Debian packages scalemodel needs to build and test. Idempotent: installs only
# what is missing. Uses sudo when not root.
set -euo pipefail
pkgs=(build-essential cmake nlohmann-json3-dev libcli11-dev libfmt-dev libgtest-dev libgmock-dev
      libbenchmark-dev python3)
[[ ${SCALEMODEL_WITH_CLANG:-0} == 1 ]] && pkgs+=(clang clang-tidy libclang-rt-14-dev)
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
