#!/usr/bin/env bash
# The study commands (sweep, attribute, sensitivity) and `resolve` as a user meets them.
# Usage: cli_study_test.sh PATH/TO/scalemodel SOURCE_DIR. Bad input: exit 2, nothing on stdout,
# one stderr line naming the flag. Ends with "N passed, N failed"; exits 1 if anything failed.
set -u
BIN=${1:?usage: cli_study_test.sh SCALEMODEL SOURCE_DIR}
SRC=${2:?usage: cli_study_test.sh SCALEMODEL SOURCE_DIR}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
no() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

# refuse WANT ARGS...: exit 2, empty stdout, one stderr line mentioning WANT.
refuse() {
    local want=$1
    shift
    timeout 60 "$BIN" "$@" </dev/null >"$TMP/o" 2>"$TMP/e"
    local rc=$?
    if [[ $rc -ne 2 || -s $TMP/o || $(wc -l <"$TMP/e") -ne 1 ]] || ! grep -qF -- "$want" "$TMP/e"; then
        no "[$*] rc $rc, stdout $(wc -c <"$TMP/o") bytes, stderr: $(head -c 300 "$TMP/e")"
    else
        ok
    fi
}

# run ARGS...: exit 0 and no non-finite number; the output is left in $TMP/o.
run() {
    timeout 120 "$BIN" "$@" </dev/null >"$TMP/o" 2>"$TMP/e"
    local rc=$?
    if [[ $rc -ne 0 ]]; then
        no "[$*] rc $rc: $(head -c 300 "$TMP/e")"
        return 1
    fi
    if grep -qiE '(^|[^a-z_])(nan|-?inf|infinity)([^a-z_]|$)' "$TMP/o"; then
        no "[$*] non-finite output"
        return 1
    fi
    ok
}

expect() {  # expect DESCRIPTION COMMAND...: the command (on $TMP/o) must succeed
    local what=$1
    shift
    if "$@"; then ok; else no "$what"; fi
}

T="$SRC/examples/gpt3-175b-64xa100.json"
S="$SRC/examples/search-gpt3-175b.json"
printf '%s' '{"model": {"preset": "gpt3-175b"}, "system": {"preset": "dgx-h100"}, "parallel": {"tp": 8, "pp": 8, "dp": 1, "vp": 3, "sequence_parallel": true, "recompute": "selective"}, "training": {"global_batch": 64, "precision": "bf16"}}' >"$TMP/h100.json"

# --- bad specs: one line naming the flag ---
refuse "--vary" sweep "$T" --vary parallel.tp
refuse "--vary" sweep "$T" --vary parallel.tp=1:16:x1
refuse "--vary" sweep "$T" --vary parallel.tp=16:1:x2
refuse "--vary" sweep "$T" --vary parallel.tp=1:4:+0
refuse "--vary" sweep "$T" --vary x=1:1000000000:+1
refuse "--vary" sweep "$T" --vary a=1:1000:+1 --vary b=1:1000:+1 --vary c=1,2
refuse "did you mean \"dgx-h100\"" sweep "$T" --vary system.preset=dgx-h10
refuse "--vary" sweep "$T"
refuse "--objective" sweep "$T" --vary parallel.microbatch=1,2 --objective ttft_s
refuse "--gpus" sweep "$T" --vary parallel.microbatch=1,2 --gpus 64
refuse "--gpus" sweep "$S" --vary parallel.microbatch=1,2 --mode search
# A layout that fixes only some of tp, pp, dp and cp does not say how many GPUs to search.
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["parallel"]={"tp": 8}; json.dump(d, open(sys.argv[2], "w"))' "$S" "$TMP/tp-only.json"
refuse "--gpus" sweep "$TMP/tp-only.json" --vary parallel.microbatch=1,2 --mode search
refuse "--mode" sweep "$T" --vary parallel.microbatch=1,2 --mode fast
refuse "--to" attribute "$T"
refuse "--to" attribute "$T" --to "$TMP/missing.json"
refuse "--mode" attribute "$T" --to "$TMP/h100.json" --mode infer
refuse "--vary" sensitivity "$T" --vary a=1
refuse "parallel.tpp" resolve "$T" --set parallel.tpp=2

# --- sweep: long-format CSV, one column per varied field, then the result keys ---
run sweep "$T" --vary parallel.microbatch=1,2 --vary system.preset=dgx-a100-80gb,dgx-h100 --format csv &&
    expect "sweep csv header" grep -q '^parallel.microbatch,system.preset,status,message,breakdown.bubble_s,.*,step_time_s,' "$TMP/o"
expect "sweep csv rows" test "$(wc -l <"$TMP/o")" -eq 5
expect "row order: first --vary outermost" test "$(sed -n 3p "$TMP/o" | cut -d, -f1-3)" = "1,dgx-h100,ok"
# A point that cannot be built keeps its row and says why; the sweep still succeeds.
run sweep "$T" --vary parallel.tp=5,8 --format csv &&
    expect "invalid point row" grep -q '^5,error,.*parallel.tp' "$TMP/o"
run sweep "$T" --vary parallel.microbatch=1:4:x2 --format json &&
    expect "sweep json keys" python3 -c "
import json,sys; d=json.load(open('$TMP/o'))
assert [p['inputs']['parallel.microbatch'] for p in d['points']] == [1,2,4]
assert all('step_time_s' in p for p in d['points']) and 'elapsed_s' in d and d['overrides'] == {}"
# A search point whose every layout needs tp beyond the scale-up domain says so, not "does not fit":
# SUMMA with 8 rows needs tp >= 8 on 4-GPU domains.
run sweep "$S" --mode search --gpus 64 --set system.scale_up.domain_gpus=4 --vary parallel.tp_rows=1,8 --format csv &&
    expect "domain-pruned point" grep -q '^8,no_fit,.*keeps tp within the 4-GPU scale-up domain' "$TMP/o" &&
    expect "1D point found" grep -q '^1,ok,' "$TMP/o"
# A header even when no point fits: every point an error.
run sweep "$T" --vary parallel.tp=5,7 --format csv &&
    expect "csv header without results" grep -q '^parallel.tp,status,message,breakdown.bubble_s,' "$TMP/o"
run sweep "$T" --vary system.accelerator.memory_bw_bytes_per_s=1e12:4e12:x2 --set parallel.microbatch=2 --format json &&
    expect "overrides recorded" python3 -c "
import json; d=json.load(open('$TMP/o')); assert d['overrides'] == {'parallel.microbatch': 2}, d['overrides']"
run sweep "$SRC/examples/infer-llama2-70b-h100.json" --mode infer --vary inference.batch=1,8 --objective tpot_s &&
    expect "infer sweep text" grep -q 'tpot_s' "$TMP/o"
run sweep "$S" --mode search --gpus 512 --vary system.scale_out.bw_bytes_per_s=25e9,50e9 --format csv &&
    expect "search sweep has layouts" grep -q '^25000000000,ok,,' "$TMP/o"
# The GPU count varied: each point's best layout spans exactly its count; a bad count is that
# point's error; outside search mode, or with --gpus too, the flag is refused.
run sweep "$S" --mode search --vary gpus=256,512,0 --format csv &&
    expect "gpus varied per point" python3 -c "
import csv; rows=list(csv.reader(open('$TMP/o'))); h=rows[0]
c={k: h.index('parallel.'+k) for k in ('tp','pp','dp','cp')}
assert [r[0] for r in rows[1:]] == ['256','512','0'], rows
for r in rows[1:3]: assert r[1] == 'ok' and int(r[c['tp']])*int(r[c['pp']])*int(r[c['dp']])*int(r[c['cp']]) == int(r[0]), r
assert rows[3][1] == 'error' and rows[3][2].startswith('gpus: '), rows[3]"
refuse "--vary" sweep "$S" --vary gpus=256
refuse "--vary" sweep "$S" --mode search --gpus 512 --vary gpus=256

# --- attribute: factors multiply to the ratio ---
run attribute "$T" --to "$TMP/h100.json" --format json &&
    expect "attribution product" python3 -c "
import json,math; d=json.load(open('$TMP/o'))
p=math.prod(f['speedup'] for f in d['factors']); assert abs(p/d['ratio']-1) < 1e-9, (p, d['ratio'])
assert abs(d['ratio'] - d['from_value']/d['to_value']) < 1e-9*d['ratio']
names=[f['name'] for f in d['factors']]; assert 'HBM bandwidth' in names and 'matrix peak' in names, names"
run attribute "$T" --to "$TMP/h100.json" && expect "waterfall total row" grep -q '^  total ' "$TMP/o"
# Sampled: the factors still multiply to the ratio (every order's contributions sum to it), each
# with a 95% interval around its speedup; fewer subsets than the exact 2^groups.
run attribute "$T" --to "$TMP/h100.json" --samples 3 --format json &&
    expect "sampled attribution" python3 -c "
import json,math; d=json.load(open('$TMP/o'))
p=math.prod(f['speedup'] for f in d['factors']); assert abs(p/d['ratio']-1) < 1e-9, (p, d['ratio'])
assert d['orders'] == 3 and d['subsets'] <= min(2**len(d['factors']), 1 + len(d['factors']) + 3*len(d['factors'])), d['subsets']
assert all(f['speedup_low'] <= f['speedup'] <= f['speedup_high'] for f in d['factors'])"
refuse "--samples" attribute "$T" --to "$TMP/h100.json" --samples 1
refuse "--samples" attribute "$T" --to "$TMP/h100.json" --samples 100001

# --- sensitivity: ranked, every system figure ---
run sensitivity "$T" --format json &&
    expect "sensitivity ranked" python3 -c "
import json; d=json.load(open('$TMP/o')); e=[abs(f['elasticity']) for f in d['fields']]
assert e == sorted(e, reverse=True) and len(e) > 15
assert any(f['path'] == 'system.accelerator.memory_bw_bytes_per_s' for f in d['fields'])"

# --- resolve and provenance ---
run resolve "$T" --set system.accelerator.memory_bw_bytes_per_s=3e12 &&
    expect "resolve fills efficiency defaults" python3 -c "
import json; d=json.load(open('$TMP/o'))
assert d['system']['accelerator']['memory_bw_bytes_per_s'] == 3e12 and 'gemm_max' in d['system']['efficiency']
assert d['parallel']['zero'] == 0 and d['training']['precision'] == 'fp16'"
cp "$TMP/o" "$TMP/resolved.json"
run train "$TMP/resolved.json" --format json && cp "$TMP/o" "$TMP/a.json"
run train "$T" --set system.accelerator.memory_bw_bytes_per_s=3e12 --format json &&
    expect "resolved scenario reads back the same" python3 -c "
import json; a=json.load(open('$TMP/a.json')); b=json.load(open('$TMP/o')); assert a['step_time_s'] == b['step_time_s']"
run train "$T" --set system.accelerator.memory_bw_bytes_per_s=3e12 &&
    expect "text says the preset was modified" grep -qF 'system: dgx-a100-80gb (modified: system.accelerator.memory_bw_bytes_per_s)' "$TMP/o"

echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
