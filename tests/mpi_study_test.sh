#!/usr/bin/env bash
# `mpirun -n K scalemodel_mpi STUDY ...` must print exactly what `scalemodel STUDY ...` prints
# (JSON compared without its elapsed_s line). Usage: mpi_study_test.sh SCALEMODEL SCALEMODEL_MPI MPIEXEC SOURCE_DIR
set -u
ONE=${1:?} MPI=${2:?} MPIEXEC=${3:?} SRC=${4:?}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FLAGS=(--oversubscribe)
[[ $(id -u) -eq 0 ]] && FLAGS+=(--allow-run-as-root)
pass=0
fail=0
# same RANKS ARGS...: one process and RANKS ranks agree byte for byte (timings aside).
same() {
    local n=$1
    shift
    timeout 300 "$ONE" "$@" --threads 1 2>"$TMP/e1" | grep -v '"elapsed_s"' >"$TMP/one"
    timeout 300 "$MPIEXEC" "${FLAGS[@]}" -n "$n" "$MPI" "$@" --threads 1 2>"$TMP/e2" | grep -v '"elapsed_s"' >"$TMP/many"
    if [[ ! -s $TMP/one ]]; then
        fail=$((fail + 1)); echo "FAIL: [$*] no output: $(head -c 300 "$TMP/e1")" >&2
    elif cmp -s "$TMP/one" "$TMP/many"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1)); echo "FAIL: [-n $n $*] differs: $(diff "$TMP/one" "$TMP/many" | head -5) $(head -c 300 "$TMP/e2")" >&2
    fi
}
T="$SRC/examples/gpt3-175b-64xa100.json"
S="$SRC/examples/search-gpt3-175b.json"
printf '%s' '{"model": {"preset": "gpt3-175b"}, "system": {"preset": "dgx-h100"}, "parallel": {"tp": 8, "pp": 8, "dp": 1, "vp": 3, "sequence_parallel": true, "recompute": "selective"}, "training": {"global_batch": 64, "precision": "bf16"}}' >"$TMP/h100.json"
for fmt in text csv json; do
    same 2 sweep "$T" --vary parallel.microbatch=1,2,4 --vary system.preset=dgx-a100-80gb,dgx-h100,dgx-b200 --format "$fmt"
done
same 3 sweep "$T" --vary parallel.tp=1:8:x2 --format csv  # uneven split, invalid points among them
same 2 sweep "$S" --mode search --gpus 256 --vary system.scale_out.bw_bytes_per_s=12.5e9:50e9:x2 --format json
same 2 attribute "$T" --to "$TMP/h100.json" --format json
# Twins (points differing only in the TDP) dealt to one rank, each reported under its own figures.
same 2 sweep "$S" --mode search --gpus 256 --vary system.energy.tdp_w=400,700 --vary system.scale_out.bw_bytes_per_s=12.5e9,25e9,50e9 --format json
same 2 sensitivity "$T" --format csv
echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
