#!/usr/bin/env bash
# The command line as a hostile user meets it. Usage: cli_test.sh PATH/TO/scalemodel SOURCE_DIR
#
# Every bad input must give exit status 2, nothing on stdout, and exactly one line on stderr that
# starts "scalemodel: error:" and names the field (its dotted path). Valid extremes must give
# exit 0 and finite numbers. Ends with "N passed, N failed"; exits 1 if anything failed.
set -u
BIN=${1:?usage: cli_test.sh SCALEMODEL SOURCE_DIR}
SRC=${2:?usage: cli_test.sh SCALEMODEL SOURCE_DIR}
H="$SRC/tests/hostile"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0
LIMIT=${CLI_TEST_TIMEOUT:-30}  # seconds per run: a hang is a failure

note_fail() {
    fail=$((fail + 1))
    echo "FAIL: $*" >&2
}

# bad EXPECTED_SUBSTRING ARGS...: one hostile run. Standard input comes from $STDIN if set.
bad() {
    local want=$1
    shift
    local rc
    if [[ -n ${STDIN:-} ]]; then
        timeout "$LIMIT" "$BIN" "$@" <"$STDIN" >"$TMP/out" 2>"$TMP/err"
    else
        timeout "$LIMIT" "$BIN" "$@" </dev/null >"$TMP/out" 2>"$TMP/err"
    fi
    rc=$?
    local lines
    lines=$(wc -l <"$TMP/err")
    local err
    err=$(head -c 400 "$TMP/err")
    if [[ $rc -ne 2 ]]; then
        note_fail "[$*] exit $rc, want 2; stderr: $err"
    elif [[ -s $TMP/out ]]; then
        note_fail "[$*] wrote to stdout: $(head -c 200 "$TMP/out")"
    elif [[ $lines -ne 1 ]]; then
        note_fail "[$*] $lines stderr lines, want 1: $err"
    elif [[ $err != "scalemodel: error: "* ]]; then
        note_fail "[$*] stderr does not start with 'scalemodel: error: ': $err"
    elif ! grep -qF -- "$want" "$TMP/err"; then
        note_fail "[$*] stderr does not mention '$want': $err"
    else
        pass=$((pass + 1))
    fi
}

# good ARGS...: a valid run; exit 0 and no NaN, infinity or null among the numbers.
# Extra checks: set WANT to a fixed string the output must contain.
good() {
    timeout "$LIMIT" "$BIN" "$@" </dev/null >"$TMP/out" 2>"$TMP/err"
    local rc=$?
    if [[ $rc -ne 0 ]]; then
        note_fail "[$*] exit $rc, want 0; stderr: $(head -c 400 "$TMP/err")"
    elif grep -qiE '(^|[^a-z_])(nan|-?inf|infinity|null)([^a-z_]|$)' "$TMP/out"; then
        note_fail "[$*] non-finite number in output: $(grep -iE 'nan|inf|null' "$TMP/out" | head -3)"
    elif [[ -n ${WANT:-} ]] && ! grep -qF -- "$WANT" "$TMP/out"; then
        note_fail "[$*] output lacks '$WANT'"
    else
        pass=$((pass + 1))
    fi
}

# Hostile files: the name of the file, then the field its error must name.
file_cases=(
    "empty.json|empty.json"
    "truncated.json|truncated.json"
    "truncated-string.json|truncated-string.json"
    "garbage.bin|garbage.bin"
    "invalid-utf8.json|invalid-utf8.json"
    "array.json|a scenario is a JSON object"
    "number.json|a scenario is a JSON object"
    "string.json|a scenario is a JSON object"
    "null.json|a scenario is a JSON object"
    "trailing-comma.json|trailing-comma.json"
    "single-quotes.json|single-quotes.json"
    "nan.json|nan.json"
    "infinity.json|infinity.json"
    "comment.json|comment.json"
    "duplicate-key.json|duplicate key \"layers\""
    "overflow-double.json|overflow-double.json"
    "overflow-int.json|model.hidden"
    "bom.json|system"
    "typo-section.json|did you mean \"parallel\""
    "typo-model.json|model.hiden"
    "typo-choice.json|parallel.recompute"
    "typo-preset.json|model.preset"
    "unknown-system.json|system.preset"
    "string-for-int.json|model.layers"
    "bool-for-int.json|parallel.tp"
    "int-for-bool.json|parallel.sequence_parallel"
    "fraction.json|parallel.tp"
    "null-field.json|model.heads"
    "object-for-number.json|model.layers"
    "model-string.json|model"
    "preset-number.json|model.preset"
    "negative.json|parallel.dp"
    "zero.json|parallel.microbatch"
    "zero-batch.json|training.global_batch"
    "zero-memory.json|system.accelerator.memory_bytes"
    "negative-bandwidth.json|system.scale_out.bw_bytes_per_s"
    "efficiency-above-one.json|system.efficiency.gemm_max"
    "zero-level.json|parallel.zero"
    "too-many-layers.json|model.layers"
    "heads-hidden.json|model.heads"
    "kv-heads.json|model.kv_heads"
    "tp-heads.json|parallel.tp"
    "pp-layers.json|parallel.pp"
    "vp-layers.json|parallel.pp"
    "vp-without-pp.json|parallel.vp"
    "batch-dp.json|training.global_batch"
    "cp-seq.json|parallel.cp"
    "gpu-overflow.json|parallel"
    "precision-unsupported.json|training.precision"
    "precision-unknown.json|training.precision"
    "moe-topk.json|model.moe.top_k"
    "ep-dense.json|parallel.ep"
    "missing-model.json|model"
    "missing-system.json|system"
    "missing-accelerator.json|system.accelerator"
    "missing-layers.json|model.layers"
    "control-char-key.json|evil\\x0akey"
)
for c in "${file_cases[@]}"; do
    bad "${c#*|}" train "$H/${c%%|*}"
done

# Files made here: too deep, too big, endless.
printf '[%.0s' {1..5000} >"$TMP/deep.json"
# A first word that is no command is named with the commands there are, and the nearest.
bad 'command: got "trian"; one of train, search' trian "$TMP/deep.json"
bad '(did you mean "serve-search"?)' serve-serch x.json
bad "nested deeper" train "$TMP/deep.json"
printf '{"a":%.0s' {1..40} >"$TMP/deep-object.json"
bad "nested deeper" train "$TMP/deep-object.json"
head -c 5000000 /dev/zero | tr '\0' ' ' >"$TMP/big.json"
bad "at most" train "$TMP/big.json"
bad "at most" train /dev/zero
bad "SCENARIO" train "$TMP/does-not-exist.json"
bad "SCENARIO" train "$TMP"
STDIN="$H/garbage.bin" bad "stdin" train -
STDIN="$H/truncated.json" bad "stdin" train -
STDIN=/dev/null bad "stdin" train -

# --set: the same rules, reached by dotted path.
base="$H/../../examples/gpt3-175b-64xa100.json"
bad "parallel.tpp" train "$base" --set parallel.tpp=2
bad "did you mean \"tp\"" train "$base" --set parallel.tpp=2
bad "parallel.tp" train "$base" --set parallel.tp=0
# Nemotron 3's fields: the dispatcher's names, an "E" layer without experts, a latent of zero.
bad "training.moe_dispatcher" train "$base" --set training.moe_dispatcher=deepep
bad "model.hybrid_pattern" train "$base" --set model.preset=nemotron-h-56b --set model.layers=3 --set model.hybrid_pattern=ME*
bad "model.moe.latent_size" train "$base" --set model.preset=nemotron-3-nano-30b-a3b --set model.moe.latent_size=0
bad "system.scale_up.gpus_used_per_domain" train "$base" --set system.scale_up.gpus_used_per_domain=0
bad "system.scale_up.gpus_used_per_domain" train "$base" --set system.scale_up.gpus_used_per_domain=9
bad "system.scale_up.gpus_used_per_domain" train "$base" --set system.scale_up.gpus_used_per_domain=4.5
bad "parallel.offload" train "$base" --set parallel.offload='"disk"'
# Megatron-Core's recompute_modules: names, the mode they need, the overlaps they exclude, the report.
bad "did you mean \"mla_up_proj\"" train "$base" --set parallel.recompute=selective --set parallel.recompute_modules=mla_upproj
WANT='recompute full ' good train "$base" --set parallel.recompute=full --set parallel.recompute_modules=mlp
bad "parallel.recompute_modules" train "$base" --set model.preset=mixtral-8x7b --set parallel.recompute_modules=moe \
    --set training.moe_a2a_overlap=true
WANT='recompute selective (layernorm, mlp)' good train "$base" --set parallel.recompute=selective --set parallel.recompute_modules=mlp,layernorm
WANT='recompute full (the first 1 layer of each chunk)' good train "$base" --set parallel.recompute=full --set parallel.recompute_layers=1
bad "parallel.recompute_layers" train "$base" --set parallel.recompute=selective --set parallel.recompute_layers=1
WANT='"recompute_modules": [' good train "$base" --set parallel.recompute=selective --set parallel.recompute_modules=mlp --format json
# Megatron-Core's pipeline layout strings and the shared-expert overlap switch (session 14).
big="$H/../../examples/gpt3-175b-1024xh100.json"
WANT='layout split' good train "$big" --stages --set parallel.vp=1 --set 'parallel.pipeline_layout=Et*13|(t*12|)*6t*11L'
WANT='85-95' good train "$big" --stages --set parallel.vp=1 --set 'parallel.pipeline_layout=Et*13|(t*12|)*6t*11L'
bad "parallel.pipeline_layout" train "$big" --set 'parallel.pipeline_layout=Et*12|t*12m|L'
bad "parallel.pipeline_layout" train "$big" --set 'parallel.pipeline_layout=Et*12|t*12|t*12|t*12|t*12|t*12|t*12|t*11L'
bad "parallel.pipeline_layout" train "$big" --set 'parallel.pipeline_layout=(t*99999999)*99999999'
bad "training.moe_shared_expert_overlap" train "$big" --set training.moe_shared_expert_overlap=maybe
bad "training.moe_a2a_overlap" train "$big" --set training.moe_a2a_overlap=1
bad "parallel.offload" train "$base" --set system.preset=mi300x-8 --set parallel.offload='"optimizer"'
bad "parallel.tp" train "$base" --set parallel.tp=-8
bad "parallel.tp" train "$base" --set parallel.tp=1e999
bad "parallel.tp" train "$base" --set parallel.tp=9223372036854775808
bad "parallel.tp" train "$base" --set parallel.tp=eight
bad "parallel.tp" train "$base" --set 'parallel.tp=[8]'
bad "parallel.tp" train "$base" --set 'parallel.tp={"x":1}'
bad "parallel.tp" train "$base" --set parallel.tp=null
bad "parallel.tp" train "$base" --set parallel.tp=5
bad "parallel.sequence_parallel" train "$base" --set parallel.sequence_parallel=yes
bad "model.preset" train "$base" --set model.preset=gpt3-175
bad "model.preset" train "$base" --set "model.preset=evil$(printf '\n')line"
bad "model.preset" train "$base" --set model.preset.x=1
bad "training.precision" train "$base" --set training.precision=fp8
bad "training.global_batch" train "$base" --set parallel.dp=2 --set training.global_batch=63
bad "--set" train "$base" --set =3
bad "--set" train "$base" --set parallel.tp
bad "--set" train "$base" --set parallel..tp=2
bad "--set" train "$base" --set .tp=2
bad "--set" train "$base" --set "$(printf 'a.%.0s' {1..100})b=1"
bad "system.accelerator.memory_bytes" train "$base" --set system.accelerator.memory_bytes=-1
bad "system.efficiency.memory_half_bytes" train "$base" --set system.efficiency.memory_half_bytes=1e300
bad "parallel" train "$base" --set parallel.tp=1048576 --set parallel.pp=1048576 --set parallel.dp=1048576 --set parallel.cp=1048576
# A ViT's image: whole patches, the sequence it implies, no vocabulary; no decoding to infer.
bad "model.image.height" train "$base" --set model.preset=vit-era5 --set model.image.height=721
bad "model.image.patch" train "$base" --set model.preset=vit-era5 --set model.image.patch=0
bad "model.seq_len" train "$base" --set model.preset=vit-era5 --set model.seq_len=2048
bad "model.vocab" train "$base" --set model.preset=vit-era5 --set model.vocab=320
bad "model.vocab: got 51200" train "$base" --set model.kind=vit
bad "model.causal" train "$base" --set model.kind=encoder
bad "model.kind" infer "$base" --set model.preset=vit-era5
bad "model.kind" roofline "$base" --set model.preset=vit-era5

# The command line itself.
bad "--format" train "$base" --format yaml
bad "error" train "$base" --bogus
bad "error" no-such-command
bad "error"

help=$("$BIN" --help 2>/dev/null)
# Every subcommand this script exercises must be listed: a renamed one fails here, loudly,
# instead of skipping its cases.
for sub in train infer search roofline validate presets serve-search; do
    grep -qE "^ +$sub( |$)" <<<"$help" || note_fail "--help lists no '$sub' subcommand"
done

    bad "inference.batch" infer "$base" --set inference.batch=0
    bad "inference.output_len" infer "$base" --set inference.output_len=-1
    bad "inference.precision" infer "$base" --set inference.precision=fp4
    bad "inference.precision" infer "$base" --set inference.precision=fp9
    bad "parallel.pp" infer "$base" --set parallel.pp=5
    bad "model.layers" infer "$H/string-for-int.json"
    bad "duplicate key" infer "$H/duplicate-key.json"
    bad "truncated.json" infer "$H/truncated.json"
    bad "--format" infer "$base" --format yaml
    bad "--concurrency" infer "$base" --concurrency 0
    bad "--concurrency" infer "$base" --concurrency many
    bad "--concurrency" infer "$base" --concurrency 4 --max-throughput
    bad "--request-rate" infer "$base" --request-rate -1
    bad "--request-rate" infer "$base" --request-rate 0
    bad "--request-rate" infer "$base" --request-rate nan
    bad "--request-rate" infer "$base" --request-rate 2 --concurrency 4
    bad "--seed" infer "$base" --seed 3
    bad "inference.prefill_schedule" infer "$base" --concurrency 2 --set inference.prefill_schedule=eager
    bad "model.linear_attention.value_heads" infer "$base" --concurrency 2 --set model.linear_attention.full_attention_interval=4 --set model.linear_attention.key_heads=4 --set model.linear_attention.value_heads=6
    bad "inference.activation_quantisation" infer "$base" --concurrency 2 --set inference.activation_quantisation=eager
    bad "inference.cuda_graph_max_batch" infer "$base" --concurrency 2 --set inference.cuda_graph_max_batch=-1
    bad "--sweep-batch" infer "$base" --max-throughput --sweep-batch 1:8:x2
    bad "inference.prefill_chunk_tokens" infer "$base" --concurrency 4 --set inference.prefill_chunk_tokens=0
    bad "inference.kv_block_tokens" infer "$base" --max-throughput --set inference.kv_block_tokens=-1
    bad "system.efficiency.host_request_overhead_s" infer "$base" --set system.efficiency.host_request_overhead_s=-1
    bad "--max-throughput" infer "$H/../../examples/infer-llama2-70b-h100.json" --max-throughput --set system.accelerator.memory_bytes=1e6
    bad "--ttft-ms" serve-search "$base" --ttft-ms -1
    bad "--gpus" serve-search "$base" --gpus 0
    bad "parallel.etp" train "$base" --set parallel.etp=1 --set parallel.tp=2
    bad "parallel.etp" train "$base" --set model.preset=mixtral-8x7b --set parallel.vp=1 --set parallel.tp=2 --set parallel.etp=1 --set parallel.sequence_parallel=false
    bad "parallel.etp" train "$base" --set model.preset=mixtral-8x7b --set parallel.vp=1 --set parallel.tp=4 --set parallel.etp=2 --set parallel.sequence_parallel=true
    bad "parallel.etp" search "$base" --set model.preset=mixtral-8x7b --set parallel.etp=1 --gpus 8
    bad "parallel.etp" infer "$base" --set model.preset=mixtral-8x7b --set parallel.tp=2 --set parallel.etp=1
    bad "inference.acceptance_rate" infer "$base" --concurrency 2 --set inference.acceptance_rate=1.5
    bad "inference.speculative_tokens" infer "$base" --concurrency 2 --set inference.speculative_tokens=-1
    bad "parallel.tpp" serve-search "$base" --set parallel.tpp=2
    bad "parallel.tpp" search "$base" --set parallel.tpp=2
    # No layout of 1,000 GPUs takes GPT-3's batch of 1,536 (by the search's plan): the nearest
    # counts that do are named.
    bad "the nearest GPU counts with one: 996 or 1,008" search "$H/../../examples/search-gpt3-175b.json" --gpus 1000
    bad "model.layers" search "$H/string-for-int.json"
    bad "truncated.json" search "$H/truncated.json"
    bad "training.precision" search "$H/precision-unsupported.json"
    bad "--gpus" search "$base" --gpus -4
    bad "--gpus" search "$base" --gpus many

# Valid extremes: finite numbers, exit 0.
good train "$H/valid-tiny.json" --format json
good train "$H/valid-tiny.json" --format csv
good train "$H/valid-tiny.json"
WANT='"gpus": 65536' good train "$H/valid-huge.json" --format json
good train "$base" --set system.efficiency.memory_half_bytes=0 --set system.efficiency.gemm_half_dim=0 \
    --set system.efficiency.kernel_latency_s=0 --set system.scale_up.latency_s=0 --format json
for m in $("$BIN" presets models --format json 2>/dev/null | grep -oE '"name": "[^"]+"' | cut -d'"' -f4); do
    good train "$base" --set model.preset="$m" --set parallel.tp=1 --set parallel.pp=1 --set parallel.vp=1 \
        --set training.global_batch=1 --format json
done
WANT='"kind": "vit"' good resolve "$base" --set model.preset=vit-era5
good train "$base" --set model.kind=encoder --set model.causal=false --format json
good infer "$H/valid-tiny.json" --format json
good infer "$H/valid-huge.json" --format json

# Key figures of the README's worked examples, read from --format json (labels of the text
# report may change; these numbers may not, unless the README changes with them).
# figure KEY WANT [RELATIVE_TOLERANCE]: the first "KEY": value of the last good run's output.
figure() {
    local key=$1 want=$2 tol=${3:-0.001} got
    got=$(grep -m1 -oE "\"$key\": [-0-9.e+]+" "$TMP/out" | awk '{print $2}')
    if [[ -z $got ]]; then
        note_fail "no \"$key\" in the output of the last run"
    elif awk -v g="$got" -v w="$want" -v t="$tol" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(d <= t * (w < 0 ? -w : w)) }'; then
        pass=$((pass + 1))
    else
        note_fail "$key = $got, want $want (+-$tol relative)"
    fi
}
GIB=1073741824
ex="$SRC/examples"
good train "$ex/gpt3-175b-64xa100.json" --format json
figure step_time_s 13.668
figure tokens_per_s 9589
figure tokens_per_s_per_gpu 149.83
figure mfu 0.5169
figure peak_bytes_per_gpu "$(awk -v g=$GIB 'BEGIN { print 61.81 * g }')"
figure weights_bytes "$(awk -v g=$GIB 'BEGIN { print 5.22 * g }')"
# The pipeline GPUs: Llama 3.1 405B's 126 layers on pp 8 x vp 8 (Megatron's embedding/loss slots):
# GPU 0 holds 15 layers (0, 15-16, ...) and the embedding; the JSON lists every GPU.
WANT="embedding_loss split" good train "$ex/gpt3-175b-64xa100.json" --stages --set model.preset=llama3.1-405b --set parallel.vp=8
WANT='"chunks"' good train "$ex/gpt3-175b-64xa100.json" --format json --set model.preset=llama3.1-405b --set parallel.vp=8
good infer "$ex/infer-llama2-70b-h100.json" --format json
# Sliding-window attention: the serving report says which window and what its layers cache.
WANT='"window_cache": "sequence"' good infer "$ex/infer-llama2-70b-h100.json" --max-throughput --format json \
    --set model.sliding_window=512 --set model.sliding_window_pattern=2 --set inference.window_cache=sequence
WANT="Sliding window 512 tokens on 50% of the layers" good infer "$ex/infer-llama2-70b-h100.json" --max-throughput \
    --set model.sliding_window=512 --set model.sliding_window_pattern=2
bad "model.sliding_window" infer "$ex/infer-llama2-70b-h100.json" --set model.sliding_window=-5
# Gated DeltaNet (Qwen3.5): served at a fixed concurrency; Gated DeltaNet layers keep a state, not K/V.
WANT="time to first token" good infer "$ex/infer-llama2-70b-h100.json" --concurrency 4 --set model.preset=qwen3.5-397b-a17b \
    --set system.preset=dgx-b200 --set parallel.tp=8 --set inference.precision=bf16
# The serving benchmark: a closed loop reports means and percentiles, the steady state beside
# them; an open loop names its rate and seed.
WANT='"ttft_s_p99"' good infer "$ex/infer-llama2-70b-h100.json" --concurrency 8 --format json
WANT='"loop": "closed"' good infer "$ex/infer-llama2-70b-h100.json" --concurrency 8 --format json
WANT='"steady_state"' good infer "$ex/infer-llama2-70b-h100.json" --concurrency 8 --format json
WANT='"loop": "open"' good infer "$ex/infer-llama2-70b-h100.json" --request-rate 2 --seed 5 --format json
WANT="Poisson arrivals at 2 requests/s (seed 5)" good infer "$ex/infer-llama2-70b-h100.json" --request-rate 2 --seed 5
WANT="in steps of their own" good infer "$ex/infer-llama2-70b-h100.json" --concurrency 4 --set inference.prefill_schedule=separate
# Serving engines' profiles: listed, applied by --engine or inference.engine, misspellings named.
WANT="sglang" good presets engines
WANT='"engines"' good presets engines --format json
WANT="in steps of their own" good infer --model llama3-8b --system dgx-h100 --concurrency 4 --engine sglang
bad "inference.engine" infer --model llama3-8b --system dgx-h100 --concurrency 4 --engine sglng
bad "inference.engine" infer "$ex/infer-llama2-70b-h100.json" --set inference.engine=7
# A disaggregated deployment: its roles, the cache's move and the clients' figures; bad roles
# are named by their own fields.
dis="$ex/serve-disaggregated-llama3-70b-h100.json"
WANT="Serving (disaggregated)" good infer "$dis" --concurrency 16
WANT='"mode": "disaggregated"' good infer "$dis" --concurrency 16 --format json
WANT='"kv_transfer_link": "scale_up"' good infer "$dis" --request-rate 3 --format json
good infer "$dis" --concurrency 16 --format csv
bad "disaggregated" infer "$dis"
bad "disaggregated" infer "$dis" --max-throughput
bad "disaggregated.prefill.workers" infer "$dis" --concurrency 4 --set disaggregated.prefill.workers=0
bad "disaggregated.decode.tp" infer "$dis" --concurrency 4 --set disaggregated.decode.tp=3
bad "disaggregated.decode" infer "$dis" --concurrency 4 --set disaggregated.decode=1
bad "disaggregated.prefill.microbatches" infer "$dis" --concurrency 4 --set disaggregated.prefill.microbatches=2
bad "its workers exceed the GPUs" infer "$dis" --concurrency 4 --gpus 6
bad "at most 4096 engines" infer "$dis" --concurrency 4 --set disaggregated.prefill.workers=5000
WANT="8 x H100" good infer "$dis" --concurrency 4 --gpus 8
bad "--concurrency" infer "$dis" --concurrency 0
bad "--request-rate" infer "$dis" --request-rate -2
good infer "$ex/infer-llama2-70b-h100.json" --format json
figure ttft_s 1.1396
figure tpot_s 0.022137
figure e2e_latency_s 6.778
figure output_tokens_per_s 302.1
figure max_batch_fits 166 0
figure weights_bytes "$(awk -v g=$GIB 'BEGIN { print 32.12 * g }')"
figure kv_cache_bytes "$(awk -v g=$GIB 'BEGIN { print 1.41 * g }')" 0.005
figure peak_bytes_per_gpu "$(awk -v g=$GIB 'BEGIN { print 35.37 * g }')"
good search "$ex/search-gpt3-175b.json" --gpus 1024 --top 1 --format json
# Rank orders and context-parallel kinds in the space (issue 11): 382,440 candidates before;
# SUMMA grids of every tp (parallel.tp_rows): 2,786,832 before; Megatron-Bridge's fill split of
# interleavings no other split cuts (pp 4 x vp 5: 19 chunks of 5 and one of 1): 8,150,208 before.
figure candidates 9027216 0
figure evaluated 2718696 0
figure feasible 1664636 0
figure memory 1774944 0
figure network_domain 4533576 0
figure step_time_s 16.728
# Disaggregated pools: finite JSON with the pairing's keys, and the text's comparison line.
WANT='"kv_transfer_s"' good serve-search "$ex/infer-llama2-70b-h100.json" --gpus 16 --ttft-ms 2000 --tpot-ms 50 --disaggregated --format json
# Each pairing as a `disaggregated` section and its clients: what `infer --concurrency` runs.
WANT='"clients"' good serve-search "$ex/infer-llama2-70b-h100.json" --gpus 16 --ttft-ms 2000 --tpot-ms 50 --disaggregated --format json
WANT='"workers"' good serve-search "$ex/infer-llama2-70b-h100.json" --gpus 16 --ttft-ms 2000 --tpot-ms 50 --disaggregated --format json
WANT='best disaggregated / best aggregated' good serve-search "$ex/infer-llama2-70b-h100.json" --gpus 16 --tpot-ms 50 --disaggregated
WANT='prefill_instances,prefill_tp' good serve-search "$ex/infer-llama2-70b-h100.json" --gpus 16 --disaggregated --format csv
# Energy per token on every configuration, and the per-joule objective (issue 12).
WANT='"energy_per_token_j"' good serve-search "$ex/infer-llama2-70b-h100.json" --gpus 8 --tpot-ms 50 --disaggregated --format json
WANT='Best under the targets (output tokens per joule)' good serve-search "$ex/infer-llama2-70b-h100.json" --gpus 8 --objective tokens_per_j
bad "--objective" serve-search "$ex/infer-llama2-70b-h100.json" --gpus 8 --objective watts
# A system written without energy figures cannot rank by joules.
printf '%s' '{"model": {"preset": "llama2-70b"}, "system": {"name": "bare", "accelerator": {"matrix_flop_per_s": {"bf16": 1e15}, "vector_flop_per_s": 6e13, "memory_bytes": 8e10, "memory_bw_bytes_per_s": 3e12}, "scale_up": {"bw_bytes_per_s": 4.5e11}, "scale_out": {"bw_bytes_per_s": 5e10}}, "parallel": {"tp": 8}, "inference": {"batch": 8, "input_len": 2048, "output_len": 256, "precision": "bf16"}}' >"$TMP/bare.json"
bad "--objective" serve-search "$TMP/bare.json" --gpus 8 --objective tokens_per_j

# One-line questions (issue 33): no scenario file; every new flag's bad value exits 2 in one line.
WANT='llama3.1-70b (70.6B params) on H100-SXM5-80GB' good search --model llama3.1-70b --system dgx-h100 --gpus 64 --batch-tokens 1048576 --top 1 --no-progress
WANT='"step_time_s"' good train --model llama3-8b --system dgx-h100 --gpus 16 --batch-tokens 131072 --precision fp8 --format json
WANT='Layout: tp 8 . pp 1 . dp 1' good infer --model llama3.1-70b --system dgx-h100 --gpus 8 --isl 2048 --osl 256 --precision fp8
WANT='Layout: tp 2 . pp 1 . dp 4' good infer --model llama3.1-8b --system dgx-h100 --gpus 8 --set parallel.tp=2
WANT='"input_len": 3000' good resolve --model qwen3-32b --system dgx-h200 --isl 3000 --osl 512
WANT='Best under the targets' good serve-search --model llama3.1-70b --system dgx-h100 --gpus 8 --isl 2048 --osl 256 --ttft-ms 2000 --tpot-ms 50 --no-progress
WANT='Framework: megatron' good search --model llama3-8b --system dgx-h100 --gpus 16 --batch-tokens 131072 --framework megatron --memory-headroom 0.1 --no-progress
WANT='"twins"' good search --model llama3-8b --system dgx-h100 --gpus 16 --batch-tokens 131072 --top 3 --format json
WANT='Memory headroom' good serve-search --model llama3.1-8b --system dgx-h100 --gpus 8 --memory-headroom 0.2 --no-progress
bad "--framework" search --model llama3-8b --system dgx-h100 --gpus 16 --batch-tokens 131072 --framework jax
bad "--memory-headroom" search --model llama3-8b --system dgx-h100 --gpus 16 --batch-tokens 131072 --memory-headroom 1.5
bad "--memory-headroom" serve-search --model llama3-8b --system dgx-h100 --gpus 8 --memory-headroom -0.1
bad "parallel.tp_rows: got 2" search --model llama3-8b --system dgx-h100 --gpus 16 --batch-tokens 131072 --framework megatron --set parallel.tp_rows=2
bad "parallel.vp: got 2" search --model llama3-8b --system dgx-h100 --gpus 16 --batch-tokens 131072 --framework deepspeed --set parallel.vp=2
WANT='--tensor-model-parallel-size' good search --model llama3-8b --system dgx-h100 --gpus 16 --batch-tokens 131072 --framework megatron --emit megatron
WANT='--recompute-modules layernorm mlp' good search --model llama3-8b --system dgx-h100 --gpus 16 --batch-tokens 131072 --framework megatron \
    --set parallel.recompute=selective --set parallel.recompute_modules=mlp,layernorm --emit megatron
bad "parallel.recompute_modules" search --model llama3-8b --system dgx-h100 --gpus 16 --batch-tokens 131072 --framework torchtitan \
    --set parallel.recompute_modules=mlp
WANT='[parallelism]' good train --model llama3-8b --system dgx-h100 --gpus 16 --batch-tokens 131072 --emit torchtitan
WANT='--max-num-seqs' good serve-search --model llama3.1-8b --system dgx-h100 --gpus 8 --emit vllm
bad "--emit" search --model llama3-8b --system dgx-h100 --gpus 16 --batch-tokens 131072 --emit vllm
bad "--emit" serve-search --model llama3.1-8b --system dgx-h100 --gpus 8 --emit megatron
WANT='"autotp_size": 2' good train --model llama3-8b --system dgx-h100 --gpus 16 --batch-tokens 131072 --set parallel.tp=2 parallel.zero=1 --emit deepspeed
bad "ZeRO 2 with pipeline parallelism 4" train --model llama3-8b --system dgx-h100 --gpus 16 --batch-tokens 131072 --set parallel.pp=4 parallel.zero=2 --emit deepspeed
bad "parallel.zero" search --model llama3-8b --system dgx-h100 --gpus 16 --batch-tokens 131072 --set parallel.pp=4 parallel.zero=2 --framework deepspeed

# --format html: one self-contained page (the text report, charts and their tables; nothing fetched).
WANT='<h2>Where the step time goes</h2>' good train --format html
WANT='<h2>Step time of the layouts found</h2>' good search --model llama3-8b --system dgx-h100 --gpus 16 --batch-tokens 131072 --format html --no-progress
WANT='<h2>Tokens per second per GPU of the best layout per GPU count</h2>' good search --model llama3-8b --system dgx-h100 --gpus 8:32:x2 --batch-tokens 131072 --format html --no-progress
WANT='<h2>Prefill (time to first token)</h2>' good infer --model llama3.1-8b --system dgx-h100 --gpus 1 --isl 1000 --osl 100 --format html
WANT='time to first token' good infer --model llama3.1-8b --system dgx-h100 --gpus 1 --isl 1000 --osl 100 --concurrency 4 --format html
WANT='<h2>Pareto front: output tokens/s per GPU, by tokens/s per user</h2>' good serve-search --model llama3.1-8b --system dgx-h100 --gpus 8 --ttft-ms 500 --tpot-ms 30 --format html --no-progress
WANT='<h2>Mean |error| per group</h2>' good validate --format html
# --context: a row whose data set's context marks its architecture unsupported is skipped (a data
# set of that row alone: nothing to compare, exit 2 naming the reason); with a context giving the
# architecture it is compared (one row of serving_aic_public.csv, Qwen3.5 at 4 clients on 8 B200).
cat >"$TMP/q35.csv" <<'CSV'
id,source,model,layers,hidden,heads,kv_heads,ffn_hidden,ffn_act,vocab,system,tp,pp,batch,input_len,output_len,precision,measured_e2e_latency_s,measured_ttft_s,measured_tpot_s,measured_output_tokens_per_s,throughput_scope,unpublished_fields,notes,serving_mode,backend,backend_version,concurrency,gpus,attention_dp,moe_tp,moe_ep,per_rank_batch,prefill_workers,prefill_tp,prefill_pp,prefill_attention_dp,prefill_moe_tp,prefill_moe_ep,prefill_batch,decode_workers,decode_tp,decode_pp,decode_attention_dp,decode_moe_tp,decode_moe_ep,decode_batch,gemm_quant,moe_quant,moe_experts,moe_top_k,head_dim,measured_date,layout_flags
aic-2026_03_25_qwen3_5_397b_b200_sxm_sglang_bf16_agg_1024x1024_c4_tp8_0_ep1_0_631,,Qwen3.5-397B-A17B,60,4096,32,2,1024,swiglu,248320,dgx-b200,8,1,,1024,1024,bf16,,0.231848,0.00806521,,,batch;measured_e2e_latency_s;measured_output_tokens_per_s,,agg,sglang,nightly-dev,4,8,1,8,1,4,,,,,,,,,,,,,,,,,512,10,256,2026-02-20,
CSV
echo '{"reason": "test", "models": {"Qwen3.5-397B-A17B": {"unsupported": "Gated DeltaNet not represented", "reason": "test"}}}' \
    >"$TMP/q35.context.json"
bad "Gated DeltaNet not represented" validate --dataset "$TMP/q35.csv"
WANT='"aic sglang agg tpot_s"' good validate --dataset "$TMP/q35.csv" --context "$H/../../data/contexts/qwen3.5.context.json" --format json
bad "--context" validate --context "$H/../../data/contexts/qwen3.5.context.json"
bad "--context" validate --dataset "$TMP/q35.csv" --context "$TMP/no-such.json"
echo '[1]' >"$TMP/array.context.json"
bad "--context" validate --dataset "$TMP/q35.csv" --context "$TMP/array.context.json"
# --scenario: the scenario a row runs as (context and --set applied) predicts what validate compares:
# the Qwen3.5 row's TTFT through `infer --concurrency 4`, a built-in training row's step through `train`.
scenario_reproduces() {
    local what=$1 row=$2 metric=$3 key=$4
    shift 4
    "$BIN" validate "$@" --format json </dev/null >"$TMP/v.json" 2>/dev/null
    "$BIN" validate "$@" --scenario "$row" </dev/null >"$TMP/row.json" 2>"$TMP/row.err"
    local cmd
    cmd=$(sed -n 's/.*is predicted by: scalemodel //p' "$TMP/row.err")
    # shellcheck disable=SC2086 # the command's words
    "$BIN" ${cmd/SCENARIO.json/$TMP/row.json} --format json </dev/null >"$TMP/p.json" 2>/dev/null
    if python3 - "$TMP/v.json" "$TMP/p.json" "$row" "$metric" "$key" <<'PY'; then
import json, sys
v, p, row, metric, key = sys.argv[1:]
want = [c["predicted"] for c in json.load(open(v))["cases"] if c["id"] == row and c["metric"] == metric]
got = json.load(open(p))[key]
sys.exit(0 if len(want) == 1 and abs(got - want[0]) <= 1e-9 * abs(want[0]) else 1)
PY
        pass=$((pass + 1))
    else
        note_fail "[validate --scenario $row] $what: '$cmd' does not give validate's prediction"
    fi
}
scenario_reproduces "Qwen3.5 at 4 clients" aic-2026_03_25_qwen3_5_397b_b200_sxm_sglang_bf16_agg_1024x1024_c4_tp8_0_ep1_0_631 \
    ttft_s ttft_s --dataset "$TMP/q35.csv" --context "$H/../../data/contexts/qwen3.5.context.json"
scenario_reproduces "a built-in training row" korthikanti-gpt-1t-selective step_time_s step_time_s
# --context repeats, read in order: the second file's overrides come after the first's.
echo '{"reason": "test", "overrides": ["inference.output_len=7"]}' >"$TMP/second.context.json"
WANT='"output_len": 7' good validate --dataset "$TMP/q35.csv" --context "$H/../../data/contexts/qwen3.5.context.json" \
    --context "$TMP/second.context.json" --scenario aic-2026_03_25_qwen3_5_397b_b200_sxm_sglang_bf16_agg_1024x1024_c4_tp8_0_ep1_0_631
bad "--context" validate --dataset "$TMP/q35.csv" --context "$H/../../data/contexts/qwen3.5.context.json" --context "$TMP/no-such.json"
bad "--scenario" validate --scenario no-such-row
bad "recompute unpublished" validate --scenario nemo2504-gb200-llama3-8b-fp8-8
bad "Gated DeltaNet not represented" validate --dataset "$TMP/q35.csv" --scenario aic-2026_03_25_qwen3_5_397b_b200_sxm_sglang_bf16_agg_1024x1024_c4_tp8_0_ep1_0_631
bad "--format" train --format htm
bad "UTF-8" train --set $'model.name=\xc0\xc0'
bad "--format" train --format html --emit megatron
if "$BIN" train --format html </dev/null 2>/dev/null | grep -qiE '<script|<link|src=|@import|url\('; then
    note_fail "[train --format html] the page fetches something"
elif [[ $("$BIN" train --format html </dev/null 2>/dev/null | head -c 15) != '<!DOCTYPE html>' ]]; then
    note_fail "[train --format html] does not start with <!DOCTYPE html>"
else
    pass=$((pass + 1))
fi
bad "--emit" serve-search --model llama3.1-8b --system dgx-h100 --gpus 8 --emit vllm --format json
bad "--emit: got megatron for tp 8 as a" train --model llama3-8b --system dgx-h100 --gpus 8 --set parallel.tp=8 --set parallel.tp_rows=2 --emit megatron
bad "--emit: got torchtitan for ZeRO 1" train --model llama3-8b --system dgx-h100 --gpus 8 --set parallel.zero=1 --emit torchtitan
bad "--emit: got vllm; a configuration that meets the targets" serve-search --model llama3.1-70b --system dgx-h100 --gpus 8 --isl 1024 --osl 128 --tpot-ms 0.001 --emit vllm
WANT='the nearest GPU counts where a layout fits in memory: 2 or 4' good serve-search --model llama3-70b --system dgx-h100 --gpus 3 --isl 100 --osl 10
WANT='"nearest_gpus": [' good serve-search --model llama3-70b --system dgx-h100 --gpus 3 --isl 100 --osl 10 --format json
bad "--emit: got megatron; one GPU count" search --model llama3-8b --system dgx-h100 --gpus 8,16 --batch-tokens 131072 --emit megatron
bad "--emit: got megatron; a layout that fits" search --model llama3-70b --system dgx-h100 --gpus 1 --batch-tokens 8192 --emit megatron
bad "SCENARIO: got nothing" search --gpus 8
bad "SCENARIO: got nothing" infer
bad "--system: got nothing" search --model llama3-70b --gpus 8 --batch-tokens 8192
bad "--model: got nothing" train --system dgx-h100
bad "model.preset: got \"llama3.1-7b\"" train --model llama3.1-7b --system dgx-h100
bad "system.preset" train --model llama3-8b --system dgx-h1000
bad "--precision" train --model llama3-8b --system dgx-h100 --precision fp7
bad "--seq" train --model llama3-8b --system dgx-h100 --seq 0
bad "--gpus" train --model llama3-8b --system dgx-h100 --gpus -4
bad "--gpus: got 12" train --model llama3-8b --system dgx-h100 --gpus 12 --set parallel.tp=8
bad "--gpus: got 16" infer --model llama3-8b --system dgx-h100 --gpus 16 --set parallel.tp=2 --set parallel.dp=2
bad "--batch-tokens" search --model llama3-8b --system dgx-h100 --gpus 8 --batch-tokens x
bad "training.batch_tokens: got 1000" search --model llama3-8b --system dgx-h100 --gpus 8 --batch-tokens 1000
bad "--isl" infer --model llama3-8b --system dgx-h100 --isl -1
bad "--osl" serve-search --model llama3-8b --system dgx-h100 --osl 1.5
bad "model.from_hf: got \"$TMP/none.json\"" infer --model "$TMP/none.json" --system dgx-h100
printf '%s' '{"model_type": "llama4", "num_hidden_layers": 4}' >"$TMP/config.json"
bad "model.from_hf.model_type: got \"llama4\"" infer --model "$TMP/config.json" --system dgx-h100
printf '%s' '{"model_type": "qwen3", "num_hidden_layers": 2, "hidden_size": 1024, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 3072, "vocab_size": 151936, "max_position_embeddings": 40960, "tie_word_embeddings": true}' >"$TMP/config.json"
mkdir -p "$TMP/Qwen3-mini" && cp "$TMP/config.json" "$TMP/Qwen3-mini/"
WANT='Inference: Qwen3-mini on 1 x H100' good infer --model "$TMP/Qwen3-mini/config.json" --system dgx-h100 --gpus 1

echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
