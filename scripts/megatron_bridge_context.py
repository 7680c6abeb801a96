#!/usr/bin/env python3
"""Write data/contexts/megatron-bridge.context.json: the Megatron-Bridge recipe settings that
../shared/validation/training_blackwell_public.csv records in each row's notes ("recipe also: ...",
"LoRA Performance", the recipe's recompute_modules) but its own context does not apply, as per-row overrides with their source.

    python3 scripts/megatron_bridge_context.py ../shared/validation/training_blackwell_public.csv \
        > data/contexts/megatron-bridge.context.json

Read by `validate --dataset ../shared/validation/training_blackwell_public.csv --context
data/contexts/megatron-bridge.context.json`. Nothing here is fitted: every override is a setting
the row's recipe states. Standard library only.
"""
import csv
import json
import re
import sys

A2A = ("Megatron-Bridge's moe_a2a_overlap (scripts/performance/utils/overrides.py "
       "_set_moe_a2a_overlap_overrides): comm_overlap.overlap_moe_expert_parallel_comm and delay_wgrad_compute on, "
       "model.moe_shared_expert_overlap off")
FLEX = ("moe_flex_dispatcher_backend {backend}: src/megatron/bridge/training/flex_dispatcher_backend.py "
        "apply_flex_dispatcher_backend sets moe_token_dispatcher_type \"flex\" (DeepEP / HybridEP, deduplicating dispatch)")
LORA = ("LoRA fine-tuning (the page's 'LoRA Performance' table): src/megatron/bridge/recipes/llama/llama3.py "
        "llama3_70b_peft_config sets LoRA dim 16 (alpha 32), scripts/performance/configs/llama/llama3_llm_finetune.py "
        "llama3_70b_lora_config_* set peft.target_modules [\"linear_qkv\"]")
RECOMPUTE = ("recompute_granularity selective, recompute_modules [{mods}] (the notes' recipe reading), run module by "
             "module as Megatron-Core does (parallel.recompute_modules) instead of the approximate mode in the row's "
             "recompute column")

# Rows whose notes do not spell the setting out, read from the recipe by hand (file and commit given).
BY_HAND = {
    "mbridge-25.09-h100-deepseek_v3-na-1024-dropless": (
        ["parallel.pipeline_layout=Et|(tt|)*30mL", "model.mtp_layers=1", "training.moe_dispatcher=flex",
         "training.moe_a2a_overlap=true", "training.moe_shared_expert_overlap=false", "training.dp_overlap=false"],
        "NVIDIA-NeMo/Megatron-Bridge r0.1.0 (commit 684a68616597), scripts/performance/run_script.py for deepseek v3 on "
        "h100: layout \"Et|(tt|)*30mL\" for pp 8 x vp 4 (the embedding and one layer, 30 chunks of two, then the MTP "
        "module and the loss; the recipe's mtp_num_layers defaults to 1, src/megatron/bridge/recipes/deepseek/"
        "deepseek_v3.py), enable_deepep (moe_token_dispatcher_type flex), A2A_1F1B: "
        "comm_overlap.overlap_moe_expert_parallel_comm and delay_wgrad_compute on, moe_shared_expert_overlap off, "
        "comm_overlap.overlap_grad_reduce off"),
}


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: megatron_bridge_context.py training_blackwell_public.csv")
    rows = []
    with open(sys.argv[1], newline="") as f:
        for r in csv.DictReader(f):
            notes = r["notes"]
            source = re.search(r"sourced from (NVIDIA-NeMo/Megatron-Bridge [^:]*?\(commit \w+\))", notes)
            also = re.search(r"recipe also: ([^;]*)", notes)
            also = also.group(1) if also else ""
            overrides, why = [], []
            if "moe_a2a_overlap True" in also:
                overrides += ["training.moe_a2a_overlap=true", "training.moe_shared_expert_overlap=false"]
                why.append(A2A)
            backend = re.search(r"\b(hybridep|deepep)\b", also)
            if backend:
                overrides.append("training.moe_dispatcher=flex")
                why.append(FLEX.format(backend=backend.group(1)))
            modules = re.search(r"recompute_granularity selective, recompute_modules \[([^\]]*)\] -> mapped to", notes)
            recompute = []
            if modules:
                names = [m.strip().strip('"') for m in modules.group(1).split(",")]
                recompute = ["parallel.recompute=selective", "parallel.recompute_modules=" + ",".join(names)]
                why.append(RECOMPUTE.format(mods=modules.group(1)))
            overrides += recompute
            if "LoRA Performance" in notes:
                overrides += ["training.method=lora", "training.lora_rank=16", "training.lora_targets=linear_qkv"]
                why.append(LORA)
            if r["id"] in BY_HAND:
                rows.append({"where": {"id": r["id"]}, "overrides": BY_HAND[r["id"]][0] + recompute,
                             "reason": BY_HAND[r["id"]][1] + ("; " + why[-1] if recompute else "")})
                continue
            if overrides:
                origin = source.group(1) if source else "the recipe the row's notes name"
                rows.append({"where": {"id": r["id"]}, "overrides": overrides,
                             "reason": f"{origin}, as the row's notes record it: " + "; ".join(why)})
    json.dump({"reason": "Megatron-Bridge performance-recipe settings the rows' notes record and the data set's own context "
                         "does not apply (scripts/megatron_bridge_context.py)",
               "rows": rows}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
