#!/usr/bin/env bash
# Every input bounded (issue 14). Usage: cli_bounds_test.sh PATH/TO/scalemodel SOURCE_DIR
#
# 1. Endless and huge inputs: every command that reads a file, given /dev/zero, /dev/urandom or an
#    endless pipe (as `-` and as /dev/stdin), and a data set whose context file is one of them,
#    must exit 2 with one stderr line. Hard guards, not timings: `timeout 10` and, for an
#    uninstrumented binary, `ulimit -v` of 100 MiB; the peak RSS and the time are printed.
# 2. Hostile data sets and context files, long paths, missing sections: exit 2, one line that
#    names the field or file, nothing on stdout.
# 3. The fixed outputs: CSV that reads back exactly, a header always, labels that say what they mean.
# Ends with "N passed, N failed"; exits 1 if anything failed.
set -u
BIN=${1:?usage: cli_bounds_test.sh SCALEMODEL SOURCE_DIR}
SRC=${2:?usage: cli_bounds_test.sh SCALEMODEL SOURCE_DIR}
H="$SRC/tests/hostile"
EX="$SRC/examples"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0
MEM_KB=102400  # 100 MiB: the bound on any command fed an endless input

note_fail() {
    fail=$((fail + 1))
    echo "FAIL: $*" >&2
}

# A sanitized binary reserves terabytes of address space: the address-space cap and the RSS
# bound apply to the plain build only.
# gcc links the runtime as a shared library, clang into the binary (its symbols are there).
SANITIZED=0
ldd "$BIN" 2>/dev/null | grep -qE 'lib(asan|ubsan)' && SANITIZED=1
grep -qaF __asan_init "$BIN" && SANITIZED=1
TIME_BIN=/usr/bin/time
[[ -x $TIME_BIN ]] || TIME_BIN=

# run ARGS...: runs the binary under the guards, stdin from $STDIN_CMD (a command whose output is
# piped in) or /dev/null. Sets rc, and rss_kb / secs when /usr/bin/time is there.
run() {
    local guard="ulimit -v $MEM_KB 2>/dev/null;"
    [[ $SANITIZED == 1 ]] && guard=""
    local timer=()
    [[ -n $TIME_BIN ]] && timer=("$TIME_BIN" -o "$TMP/time" -f "%M %e")
    if [[ -n ${STDIN_CMD:-} ]]; then
        bash -c "$STDIN_CMD" 2>/dev/null | "${timer[@]}" timeout 10 bash -c "$guard exec \"\$@\"" _ "$BIN" "$@" >"$TMP/out" 2>"$TMP/err"
        rc=${PIPESTATUS[1]}
    else
        "${timer[@]}" timeout 10 bash -c "$guard exec \"\$@\"" _ "$BIN" "$@" </dev/null >"$TMP/out" 2>"$TMP/err"
        rc=$?
    fi
    rss_kb=0
    secs=0
    [[ -n $TIME_BIN && -s $TMP/time ]] && read -r rss_kb secs < <(tail -1 "$TMP/time")
    # GNU time writes its own line to -o only, but a killed child adds "Command exited..." there.
    return 0
}

# check_bad WANT: the last run was bad input done right.
check_bad() {
    local want=$1 label=$2
    local lines err
    lines=$(wc -l <"$TMP/err")
    err=$(head -c 600 "$TMP/err")
    if [[ $rc -eq 124 ]]; then
        note_fail "[$label] timed out (10 s)"
    elif [[ $rc -ne 2 ]]; then
        note_fail "[$label] exit $rc, want 2; stderr: $err"
    elif [[ -s $TMP/out ]]; then
        note_fail "[$label] wrote to stdout: $(head -c 200 "$TMP/out")"
    elif [[ $lines -ne 1 ]]; then
        note_fail "[$label] $lines stderr lines, want 1: $err"
    elif [[ $err != "scalemodel: error: "* ]]; then
        note_fail "[$label] stderr does not start with 'scalemodel: error: ': $err"
    elif ! grep -qF -- "$want" "$TMP/err"; then
        note_fail "[$label] stderr does not mention '$want': $err"
    else
        return 0
    fi
    return 1
}

bad() {
    local want=$1
    shift
    run "$@"
    check_bad "$want" "$*" && pass=$((pass + 1))
}

# bounded WANT ARGS...: bad input, and within the memory bound; prints the figures.
bounded() {
    local want=$1
    shift
    run "$@"
    local label="${STDIN_CMD:+$STDIN_CMD | }scalemodel $*"
    check_bad "$want" "$label" || return
    if [[ $SANITIZED == 0 && -n $TIME_BIN && $rss_kb -gt $MEM_KB ]]; then
        note_fail "[$label] peak RSS $rss_kb KB, over $MEM_KB KB"
        return
    fi
    printf 'bounded: %-78s rss %6s KB  %5s s\n' "$label" "$rss_kb" "$secs"
    pass=$((pass + 1))
}

# good ARGS...: exit 0; WANT (a fixed string) must be in stdout, WANT_ERR in stderr.
good() {
    run "$@"
    if [[ $rc -ne 0 ]]; then
        note_fail "[$*] exit $rc, want 0; stderr: $(head -c 400 "$TMP/err")"
    elif [[ -n ${WANT:-} ]] && ! grep -qF -- "$WANT" "$TMP/out"; then
        note_fail "[$*] output lacks '$WANT': $(head -c 300 "$TMP/out")"
    elif [[ -n ${WANT_ERR:-} ]] && ! grep -qF -- "$WANT_ERR" "$TMP/err"; then
        note_fail "[$*] stderr lacks '$WANT_ERR': $(head -c 300 "$TMP/err")"
    else
        pass=$((pass + 1))
    fi
}

base="$EX/gpt3-175b-64xa100.json"
search_base="$EX/search-gpt3-175b.json"

# 1. Endless inputs, every command that reads one.
mkdir -p "$TMP/zero-ctx" "$TMP/random-ctx"
cp "$SRC/data/validation/training_vtrain.csv" "$TMP/zero-ctx/set.csv"
cp "$SRC/data/validation/training_vtrain.csv" "$TMP/random-ctx/set.csv"
ln -s /dev/zero "$TMP/zero-ctx/set.context.json"
ln -s /dev/urandom "$TMP/random-ctx/set.context.json"
scenario_cmds=("train" "infer" "roofline" "search --gpus 8")
for dev in /dev/zero /dev/urandom; do
    for c in "${scenario_cmds[@]}"; do
        # shellcheck disable=SC2086
        bounded "at most 4194304 bytes" $c "$dev"
    done
    bounded "at most 4194304 bytes" validate --dataset "$dev"
done
for c in "${scenario_cmds[@]}"; do
    # shellcheck disable=SC2086
    STDIN_CMD="yes '{\"a\": 1,'" bounded "at most 4194304 bytes" $c -
    # shellcheck disable=SC2086
    STDIN_CMD="head -c 100000000 /dev/urandom" bounded "at most 4194304 bytes" $c /dev/stdin
done
STDIN_CMD="yes a,b,c" bounded "at most 4194304 bytes" validate --dataset -
STDIN_CMD="yes a,b,c" bounded "at most 4194304 bytes" validate --dataset /dev/stdin
bounded "data-set context file" validate --dataset "$TMP/zero-ctx/set.csv"
bounded "data-set context file" validate --dataset "$TMP/random-ctx/set.csv"
if command -v mkfifo >/dev/null; then
    mkfifo "$TMP/fifo.json"
    yes '{"a": 1,' >"$TMP/fifo.json" 2>/dev/null &
    writer=$!
    bounded "at most 4194304 bytes" train "$TMP/fifo.json"
    kill "$writer" 2>/dev/null  # the writer ends on SIGPIPE; this covers a run that never opened the FIFO
    wait "$writer" 2>/dev/null
fi

# 2. Hostile data sets.
printf 'root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n' >"$TMP/passwd"
bad "--dataset" validate --dataset "$TMP/passwd"
bad "none of which can be evaluated" validate --dataset "$TMP/passwd"
bad "is a directory" validate --dataset "$TMP"
bad "--dataset" validate --dataset "$TMP/does-not-exist.csv"
: >"$TMP/empty.csv"
bad "--dataset" validate --dataset "$TMP/empty.csv"
head -1 "$SRC/data/validation/training.csv" >"$TMP/header-only.csv"
bad "with 0 rows" validate --dataset "$TMP/header-only.csv"
cp "$H/garbage.bin" "$TMP/garbage.csv"
bad "--dataset" validate --dataset "$TMP/garbage.csv"
head -c 5000000 /dev/urandom >"$TMP/junk.csv"
bad "at most 4194304 bytes" validate --dataset "$TMP/junk.csv"
{ echo "id,model"; for ((i = 0; i < 10001; ++i)); do echo "r,x"; done; } >"$TMP/rows.csv"
bad "at most 10000 rows" validate --dataset "$TMP/rows.csv"
printf 'a%.0s,' {1..1200} >"$TMP/wide.csv"
bad "at most 1000 columns" validate --dataset "$TMP/wide.csv"
STDIN_CMD="printf 'id,model\n'" bad "standard input" validate --dataset -
bad "--set" validate --set parallel.tpp=2
bad "--format" validate --format yaml

# Context files: named as what they are, and only files that were opened.
mkdir -p "$TMP/ctx"
head -3 "$SRC/data/validation/training.csv" >"$TMP/ctx/vt.csv"
ctx_case() {  # ctx_case WANT CONTENT: the context file holds CONTENT
    printf '%s' "$2" >"$TMP/ctx/vt.context.json"
    bad "$1" validate --dataset "$TMP/ctx/vt.csv"
    if grep -qF "vt.csv.context.json" "$TMP/err"; then note_fail "[context $2] names vt.csv.context.json, a file never opened"; fi
}
ctx_case 'data-set context file "' '{"reason": "r", '
ctx_case 'vt.context.json" beside the data set' '{"reason": "r", "overides": []}'
ctx_case 'did you mean "overrides"' '{"reason": "r", "overides": []}'
ctx_case "overrides" '{"reason": "r", "overrides": "parallel.tp=2"}'
ctx_case "overrides" '{"reason": "r", "overrides": [2]}'
ctx_case "reason" '{"overrides": []}'
ctx_case "a scenario is a JSON object" '[]'
rm "$TMP/ctx/vt.context.json"
mkdir "$TMP/ctx/vt.context.json"
bad "is a directory" validate --dataset "$TMP/ctx/vt.csv"
bad "data-set context file beside the data set" validate --dataset "$TMP/ctx/vt.csv"
rmdir "$TMP/ctx/vt.context.json"

# Long paths: the file name survives in the message (a path of over 400 characters).
deep="$TMP"
for ((i = 0; i < 12; ++i)); do deep="$deep/a-rather-long-directory-name-$i"; done
mkdir -p "$deep"
cp "$H/truncated.json" "$deep/truncated.json"
cp "$TMP/passwd" "$deep/passwd.csv"
bad "truncated.json" train "$deep/truncated.json"
bad "missing-file.json" train "$deep/missing-file.json"
bad "passwd.csv" validate --dataset "$deep/passwd.csv"
bad "$TMP" train "$deep/truncated.json"  # the start of the path is kept too

# The section a command needs.
bad "training.global_batch" search "$EX/infer-llama2-70b-h100.json" --gpus 8
bad "training.global_batch" search "$H/valid-tiny.json" --gpus 1

# 3. Fixed outputs. Defaults said out loud:
WANT_ERR='no "inference" section; assumed batch 1, 512 tokens in, 128 out, fp16' good infer "$base"
WANT_ERR='no "inference" section' good roofline "$base"
WANT_ERR="not yet production practice" good train "$base" --set system.preset=dgx-b200 --set training.precision=fp4
WANT="(of the fp8 matrix peak)" good train "$base" --set system.preset=dgx-h100 --set training.precision=fp8
WANT="MFU: of the bf16 matrix peak" good search "$search_base" --gpus 64 --threads 2 --top 1
WANT=" GiB " good infer "$EX/infer-llama2-70b-h100.json" --sweep-batch 1,2

# CSV: every number reads back as the JSON's double; a header always; one header for a curve.
good train "$base" --format csv
cp "$TMP/out" "$TMP/train.csv"
good train "$base" --format json
json_step=$(grep -oE '"step_time_s": [^,]+' "$TMP/out" | head -1 | cut -d' ' -f2)
col=$(head -1 "$TMP/train.csv" | tr ',' '\n' | grep -nx step_time_s | cut -d: -f1)
csv_step=$(sed -n 2p "$TMP/train.csv" | cut -d, -f"$col")
if awk -v a="$json_step" -v b="$csv_step" 'BEGIN { exit !(a + 0 == b + 0 && length(b) > 8) }'; then
    pass=$((pass + 1))
else
    note_fail "CSV step_time_s $csv_step is not the JSON's $json_step"
fi
good search "$search_base" --gpus 1 --format csv --threads 1
if [[ $(wc -l <"$TMP/out") -eq 1 ]] && grep -q "^breakdown" "$TMP/out"; then pass=$((pass + 1)); else note_fail "search with no fit: CSV lacks its header"; fi
# tp and pp held: the curve's shape is what is checked, and the whole space would take seconds under a sanitizer
good search "$search_base" --gpus 512,1024 --top 2 --format csv --threads 2 --set parallel.tp=8 --set parallel.pp=8
if [[ $(grep -c "^breakdown" "$TMP/out") -eq 1 && $(wc -l <"$TMP/out") -eq 5 ]]; then
    pass=$((pass + 1))
else
    note_fail "search curve CSV with --top 2: want one header and 4 rows, got $(wc -l <"$TMP/out") lines"
fi
WANT="id,dataset,metric,layout,measured,predicted,error" good validate --format csv
good infer "$EX/infer-llama2-70b-h100.json" --sweep-batch 1,3 --format csv
if sed -n 2p "$TMP/out" | grep -qE ',[0-9]+\.[0-9]{9,}'; then pass=$((pass + 1)); else note_fail "sweep CSV lacks full precision: $(sed -n 2p "$TMP/out")"; fi

echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
