#include "io/launch_settings.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "parallel/pipeline_split.hpp"
#include "search/frameworks.hpp"

namespace sm {

namespace {

// One option and its value ("" for a switch), in the order written.
struct Setting {
    std::string name, value;
};

std::string as_cli(const std::vector<Setting>& args, const std::string& command) {
    std::string t = command;
    for (const Setting& a : args) t += " \\\n  " + a.name + (a.value.empty() ? "" : " " + a.value);
    return t + "\n";
}

InputError refused(std::string_view target, const std::string& given, const std::string& why) {
    return InputError{"--emit", fmt::format("{} for {}", target, given), why};
}

// Megatron's names for the context-parallel kinds (--cp-comm-type; TransformerConfig.cp_comm_type).
std::string cp_comm_type(CpKind k) {
    switch (k) {
        case CpKind::ring: return "p2p";
        case CpKind::all_gather: return "all_gather";
        case CpKind::ulysses: return "a2a";
    }
    return "p2p";
}

// Every chunk's layers, for a split Megatron has no switch for (DeepSpeed's uniform, the fill).
std::string layout_of(const Scenario& s, const ParallelConfig& p) {
    const SplitOutcome cut = split_layers(s.model.layers, p);
    std::vector<int32_t> chunks;
    for (int64_t j = 0; j < cut.split.chunks(); ++j) chunks.push_back(static_cast<int32_t>(cut.split.chunk_layers(j)));
    return layout_text(chunks, static_cast<int32_t>(s.model.mtp_layers));
}

// The part of `p` the framework `target` does not ship (search/frameworks.hpp says what each ships).
std::optional<InputError> unshipped(const ParallelConfig& p, std::string_view target) {
    const Framework& fw = *framework_named(target);
    const std::string search = "; search with --framework " + std::string(target);
    if (!Framework::ships_tp_rows(p.tp_rows))
        return refused(target, fmt::format("tp {} as a {}x{} SUMMA grid", p.tp, p.tp_rows, p.tp_cols()),
                       "1D tensor parallelism: no framework ships SUMMA" + search);
    if (!Framework::ships_order(p.order))
        return refused(target, fmt::format("rank order {}", to_string(p.order)), fmt::format("tp-cp-dp-pp, {}{}", fw.order_note, search));
    if (!fw.ships_zero(p.zero, p.pp))
        return refused(target, p.pp > 1 ? fmt::format("ZeRO {} with pipeline parallelism {}", p.zero, p.pp) : fmt::format("ZeRO {}", p.zero),
                       fmt::format("ZeRO {}{}", fw.zero_note, search));
    if (p.recompute == Recompute::full && !fw.ships_recompute_layers(p.recompute_layers))
        return refused(target, fmt::format("full recompute of {} layers per chunk", p.recompute_layers),
                       "every layer: Megatron-Core's block method is megatron's and nemo's");
    if (p.recompute == Recompute::selective && !fw.ships_recompute_modules(p.recompute_modules))
        return refused(target, fmt::format("selective recompute of {}", module_names(p.recompute_modules, ", ")),
                       "the attention core alone: Megatron-Core's recompute_modules are megatron's and nemo's");
    if (!fw.ships_cp(p.cp, p.cp_kind)) {
        const char* kind = p.cp_kind == CpKind::ulysses ? "Ulysses" : p.cp_kind == CpKind::ring ? "ring" : "all-gather";
        return refused(target, fmt::format("{} context parallelism", kind), fmt::format("{} context parallelism{}", fw.cp_note, search));
    }
    return std::nullopt;
}

Expected<std::string> megatron(const Scenario& s, const ParallelConfig& p) {
    if (auto e = unshipped(p, "megatron")) return *e;
    std::vector<Setting> a = {{"--tensor-model-parallel-size", std::to_string(p.tp)},
                              {"--pipeline-model-parallel-size", std::to_string(p.pp)}};
    if (p.split == PipelineSplit::first_last) {
        if (p.first_stage_layers > 0) a.push_back({"--decoder-first-pipeline-num-layers", std::to_string(p.first_stage_layers)});
        if (p.last_stage_layers > 0) a.push_back({"--decoder-last-pipeline-num-layers", std::to_string(p.last_stage_layers)});
    } else if (p.split == PipelineSplit::layout || p.split == PipelineSplit::fill || p.split == PipelineSplit::uniform) {
        a.push_back({"--pipeline-model-parallel-layout", fmt::format("\"{}\"", layout_of(s, p))});
    } else {
        if (p.split == PipelineSplit::embedding || p.split == PipelineSplit::embedding_loss)
            a.push_back({"--account-for-embedding-in-pipeline-split", ""});
        if (p.split == PipelineSplit::loss || p.split == PipelineSplit::embedding_loss)
            a.push_back({"--account-for-loss-in-pipeline-split", ""});
        if (p.vp > 1) a.push_back({"--num-virtual-stages-per-pipeline-rank", std::to_string(p.vp)});
    }
    if (p.cp > 1) {
        a.push_back({"--context-parallel-size", std::to_string(p.cp)});
        a.push_back({"--cp-comm-type", cp_comm_type(p.cp_kind)});
    }
    if (s.model.moe.enabled()) {
        a.push_back({"--expert-model-parallel-size", std::to_string(p.ep)});
        a.push_back({"--expert-tensor-parallel-size", std::to_string(p.expert_tp())});
        if (s.training.moe_a2a_overlap) {
            a.push_back({"--overlap-moe-expert-parallel-comm", ""});
            a.push_back({"--delay-wgrad-compute", ""});
        }
    }
    if (p.sequence_parallel && p.tp > 1) a.push_back({"--sequence-parallel", ""});
    a.push_back({"--micro-batch-size", std::to_string(p.microbatch)});
    a.push_back({"--global-batch-size", std::to_string(s.training.global_batch)});
    a.push_back({"--seq-length", std::to_string(s.model.seq_len)});
    if (p.zero == 1) a.push_back({"--use-distributed-optimizer", ""});
    if (p.zero >= 2) {
        a.push_back({"--use-megatron-fsdp", ""});
        a.push_back({"--data-parallel-sharding-strategy", p.zero == 2 ? "optim_grads" : "optim_grads_params"});
    }
    if (p.recompute == Recompute::selective) {
        a.push_back({"--recompute-granularity", "selective"});
        if (p.recompute_modules != kDefaultRecomputeModules) a.push_back({"--recompute-modules", module_names(p.recompute_modules, " ")});
    }
    if (p.recompute == Recompute::full) {
        a.push_back({"--recompute-granularity", "full"});
        a.push_back({"--recompute-method", p.recompute_layers > 0 ? "block" : "uniform"});
        a.push_back({"--recompute-num-layers", std::to_string(p.recompute_layers > 0 ? p.recompute_layers : 1)});
    }
    const Precision prec = s.training.precision;
    a.push_back({prec == Precision::fp16 ? "--fp16" : "--bf16", ""});
    if (prec == Precision::fp8) {
        a.push_back({"--fp8-format", "hybrid"});
        if (s.training.fp8_recipe == Fp8Recipe::mxfp8) a.push_back({"--fp8-recipe", "mxfp8"});
    }
    if (prec == Precision::fp4) a.push_back({"--fp4-format", "e2m1"});
    return fmt::format("# Megatron-LM (core_v0.19.0): pretrain_gpt.py arguments for {} on {} GPUs (data parallel {})\n", s.model.name,
                       p.gpus(), p.dp) +
           as_cli(a, "torchrun ... pretrain_gpt.py");
}

Expected<std::string> nemo(const Scenario& s, const ParallelConfig& p) {
    if (auto e = unshipped(p, "nemo")) return *e;
    std::vector<Setting> a = {{"trainer.strategy.tensor_model_parallel_size", std::to_string(p.tp)},
                              {"trainer.strategy.pipeline_model_parallel_size", std::to_string(p.pp)}};
    const bool listed = p.split == PipelineSplit::layout || p.split == PipelineSplit::fill || p.split == PipelineSplit::uniform;
    if (listed) a.push_back({"trainer.strategy.pipeline_model_parallel_layout", fmt::format("\"{}\"", layout_of(s, p))});
    if (p.vp > 1 && !listed) a.push_back({"trainer.strategy.virtual_pipeline_model_parallel_size", std::to_string(p.vp)});
    if (p.first_stage_layers > 0) a.push_back({"trainer.strategy.num_layers_in_first_pipeline_stage", std::to_string(p.first_stage_layers)});
    if (p.last_stage_layers > 0) a.push_back({"trainer.strategy.num_layers_in_last_pipeline_stage", std::to_string(p.last_stage_layers)});
    if (p.split == PipelineSplit::embedding || p.split == PipelineSplit::embedding_loss)
        a.push_back({"trainer.strategy.account_for_embedding_in_pipeline_split", "true"});
    if (p.split == PipelineSplit::loss || p.split == PipelineSplit::embedding_loss)
        a.push_back({"trainer.strategy.account_for_loss_in_pipeline_split", "true"});
    a.push_back({"trainer.strategy.context_parallel_size", std::to_string(p.cp)});
    if (s.model.moe.enabled()) {
        a.push_back({"trainer.strategy.expert_model_parallel_size", std::to_string(p.ep)});
        a.push_back({"trainer.strategy.expert_tensor_parallel_size", std::to_string(p.expert_tp())});
    }
    a.push_back({"trainer.strategy.sequence_parallel", p.sequence_parallel && p.tp > 1 ? "true" : "false"});
    a.push_back({"data.micro_batch_size", std::to_string(p.microbatch)});
    a.push_back({"data.global_batch_size", std::to_string(s.training.global_batch)});
    a.push_back({"data.seq_length", std::to_string(s.model.seq_len)});
    std::string t = fmt::format("# NeMo 2 (2.6): recipe overrides for {} on {} GPUs (data parallel {}), e.g. "
                                "`nemo llm pretrain --factory RECIPE KEY=VALUE ...`\n",
                                s.model.name, p.gpus(), p.dp);
    for (const Setting& x : a) t += x.name + "=" + x.value + "\n";
    // Megatron-Core's TransformerConfig and OptimizerConfig fields, set on the recipe in Python.
    t += "# and on the recipe: ";
    std::vector<std::string> more;
    if (p.cp > 1) more.push_back(fmt::format("model.config.cp_comm_type=\"{}\"", cp_comm_type(p.cp_kind)));
    if (p.recompute != Recompute::none) more.push_back(fmt::format("model.config.recompute_granularity=\"{}\"", to_string(p.recompute)));
    if (p.recompute == Recompute::selective && p.recompute_modules != kDefaultRecomputeModules)
        more.push_back(fmt::format("model.config.recompute_modules=[\"{}\"]", module_names(p.recompute_modules, "\", \"")));
    if (p.recompute == Recompute::full)
        more.push_back(p.recompute_layers > 0
                           ? fmt::format("model.config.recompute_method=\"block\", model.config.recompute_num_layers={}", p.recompute_layers)
                           : "model.config.recompute_method=\"uniform\", model.config.recompute_num_layers=1");
    if (s.model.moe.enabled() && s.training.moe_a2a_overlap)
        more.emplace_back("comm_overlap.overlap_moe_expert_parallel_comm=True, comm_overlap.delay_wgrad_compute=True");
    more.push_back(fmt::format("optim.config.use_distributed_optimizer={}", p.zero >= 1 ? "True" : "False"));
    if (p.zero >= 2) more.push_back(fmt::format("ddp.data_parallel_sharding_strategy=\"{}\" (Megatron-FSDP)", p.zero == 2 ? "optim_grads" : "optim_grads_params"));
    for (size_t i = 0; i < more.size(); ++i) t += (i ? "; " : "") + more[i];
    return t + "\n";
}

Expected<std::string> torchtitan(const Scenario& s, const ParallelConfig& p) {
    if (auto e = unshipped(p, "torchtitan")) return *e;
    if (p.split != PipelineSplit::even)
        return refused("torchtitan", fmt::format("the {} pipeline split", to_string(p.split)), "an even split of the layers");
    if (s.training.precision == Precision::fp16 || s.training.precision == Precision::fp4)
        return refused("torchtitan", fmt::format("{} training", to_string(s.training.precision)),
                       "bf16 or fp8 (training.mixed_precision_param bfloat16, the float8 converter) or fp32");
    std::map<std::string, std::vector<Setting>> sections;
    auto& par = sections["parallelism"];
    const bool sharded = p.zero >= 2;
    par.push_back({"data_parallel_replicate_degree", std::to_string(sharded ? 1 : p.dp)});
    par.push_back({"data_parallel_shard_degree", std::to_string(sharded ? p.dp : 1)});
    if (p.zero == 2) par.push_back({"fsdp_reshard_after_forward", "\"never\""});
    par.push_back({"tensor_parallel_degree", std::to_string(p.tp)});
    par.push_back({"pipeline_parallel_degree", std::to_string(p.pp)});
    if (p.pp > 1) {
        par.push_back({"pipeline_parallel_schedule", p.vp > 1 ? "\"Interleaved1F1B\"" : "\"1F1B\""});
        par.push_back({"pipeline_parallel_layers_per_stage", std::to_string(s.model.layers / (p.pp * p.vp))});
        par.push_back({"pipeline_parallel_microbatch_size", std::to_string(p.microbatch)});
    }
    par.push_back({"context_parallel_degree", std::to_string(p.cp)});
    if (p.cp > 1) par.push_back({"context_parallel_rotate_method", p.cp_kind == CpKind::all_gather ? "\"allgather\"" : "\"alltoall\""});
    if (s.model.moe.enabled()) par.push_back({"expert_parallel_degree", std::to_string(p.ep)});
    auto& tr = sections["training"];
    tr.push_back({"global_batch_size", std::to_string(s.training.global_batch)});
    tr.push_back({"local_batch_size", std::to_string(s.training.global_batch / p.dp)});
    tr.push_back({"seq_len", std::to_string(s.model.seq_len)});
    const bool full = s.training.precision == Precision::fp32 || s.training.precision == Precision::tf32;
    tr.push_back({"mixed_precision_param", full ? "\"float32\"" : "\"bfloat16\""});
    sections["activation_checkpoint"].push_back({"mode", fmt::format("\"{}\"", to_string(p.recompute))});
    if (s.training.precision == Precision::fp8) sections["model"].push_back({"converters", "[\"float8\"]"});
    std::string t = fmt::format("# TorchTitan (v0.2.2): the job config's TOML for {} on {} GPUs{}\n", s.model.name, p.gpus(),
                                p.tp > 1 && !p.sequence_parallel ? " (its tensor parallelism always shards the sequence too)" : "");
    for (const auto& [name, settings] : sections) {
        t += "[" + name + "]\n";
        for (const Setting& x : settings) t += x.name + " = " + x.value + "\n";
    }
    return t;
}

// DeepSpeed's config JSON (data/frameworks/deepspeed.txt), with what is not a config key (the
// pipeline module, the Ulysses group, which layers to checkpoint) said as comments before it.
Expected<std::string> deepspeed(const Scenario& s, const ParallelConfig& p) {
    if (auto e = unshipped(p, "deepspeed")) return *e;
    if (p.pp > 1 && p.split != PipelineSplit::even && p.split != PipelineSplit::uniform)
        return refused("deepspeed", fmt::format("the {} pipeline split", to_string(p.split)),
                       "an even or uniform split (PipelineModule partition_method=\"uniform\")");
    const Precision prec = s.training.precision;
    if (prec != Precision::bf16 && prec != Precision::fp16 && prec != Precision::fp32 && prec != Precision::tf32)
        return refused("deepspeed", fmt::format("{} training", to_string(prec)), "bf16, fp16 or fp32 (its bf16 / fp16 sections)");
    const int64_t accumulation = s.training.global_batch / (p.microbatch * p.dp);
    Json cfg = {{"train_batch_size", s.training.global_batch},
                {"train_micro_batch_size_per_gpu", p.microbatch},
                {"gradient_accumulation_steps", accumulation}};
    if (prec == Precision::bf16) cfg["bf16"] = {{"enabled", true}};
    if (prec == Precision::fp16) cfg["fp16"] = {{"enabled", true}};
    Json zero = {{"stage", p.zero}};
    if (offloads_optimizer(p.offload)) zero["offload_optimizer"] = {{"device", "cpu"}};
    cfg["zero_optimization"] = zero;
    if (p.tp > 1) cfg["tensor_parallel"] = {{"autotp_size", p.tp}};
    std::string t = fmt::format("# DeepSpeed (0.19): ds_config.json for {} on {} GPUs; deepspeed --num_gpus ... train.py --deepspeed_config "
                                "ds_config.json\n",
                                s.model.name, p.gpus());
    if (p.tp > 1) t += fmt::format("# tensor parallelism {}: AutoTP training (tensor_parallel.autotp_size)\n", p.tp);
    if (p.pp > 1)
        t += fmt::format("# pipeline parallelism {}: the model as deepspeed.pipe.PipelineModule(layers, num_stages={}, "
                         "partition_method=\"uniform\")\n",
                         p.pp, p.pp);
    if (p.cp > 1)
        t += fmt::format("# sequence parallelism {}: DeepSpeed-Ulysses, attention wrapped in deepspeed.sequence.layer.DistributedAttention "
                         "over a group of {} ranks\n",
                         p.cp, p.cp);
    if (s.model.moe.enabled() && p.ep > 1)
        t += fmt::format("# expert parallelism {}: the MoE layers as deepspeed.moe.layer.MoE(..., ep_size={})\n", p.ep, p.ep);
    if (p.recompute != Recompute::none)
        t += fmt::format("# recompute {}: deepspeed.checkpointing.checkpoint around {} in the model's forward\n", to_string(p.recompute),
                         p.recompute == Recompute::full ? "each transformer layer" : "each attention core");
    return t + cfg.dump(2) + "\n";
}

// Tokens a request holds at most: the engine's maximum sequence length.
int64_t max_len(const Scenario& s) { return s.inference.input_len + s.inference.output_len; }

// Experts laid out over the replicas' GPUs too (ep x etp = tp x dp): attention runs data-parallel
// inside one engine of tp x dp GPUs, as SGLang's and TensorRT-LLM's DeepSeek deployments run it.
bool attention_dp(const ParallelConfig& p) { return p.dp > 1 && p.ep * p.expert_tp() == p.tp * p.dp; }

std::optional<InputError> serving_refusal(const ParallelConfig& p, std::string_view target) {
    if (p.expert_tp() != p.tp && p.expert_tp() != 1)
        return refused(target, fmt::format("experts at tensor parallel {} of {}", p.expert_tp(), p.tp),
                       "experts either tensor-parallel like attention or expert-parallel over the tensor-parallel GPUs");
    return std::nullopt;
}

Expected<std::string> vllm(const Scenario& s, const ParallelConfig& p, const ServingPoint& pt) {
    if (auto e = serving_refusal(p, "vllm")) return *e;
    std::vector<Setting> a = {{"--tensor-parallel-size", std::to_string(p.tp)}, {"--pipeline-parallel-size", std::to_string(p.pp)}};
    if (p.dp > 1) a.push_back({"--data-parallel-size", std::to_string(p.dp)});
    if (s.model.moe.enabled() && p.ep > 1) a.push_back({"--enable-expert-parallel", ""});
    a.push_back({"--max-num-seqs", std::to_string(pt.concurrency)});
    a.push_back({"--max-num-batched-tokens", std::to_string(s.inference.prefill_chunk_tokens)});
    a.push_back({"--max-model-len", std::to_string(max_len(s))});
    a.push_back({"--gpu-memory-utilization", fmt::format("{:g}", s.inference.kv_cache_memory_fraction)});
    if (s.inference.kv_precision == Precision::fp8) a.push_back({"--kv-cache-dtype", "fp8"});
    if (s.inference.weight_precision == Precision::fp8) a.push_back({"--quantization", "fp8"});
    return fmt::format("# vLLM (v0.11): {} at {} requests in flight per replica; MODEL: its checkpoint\n", s.model.name, pt.concurrency) +
           as_cli(a, "vllm serve $MODEL");
}

Expected<std::string> sglang(const Scenario& s, const ParallelConfig& p, const ServingPoint& pt) {
    if (auto e = serving_refusal(p, "sglang")) return *e;
    // With DP attention one engine spans tp x dp GPUs (--tp-size is all of them) and holds every
    // rank's requests; otherwise --dp-size runs dp engines behind SGLang's router.
    const bool dpa = attention_dp(p);
    std::vector<Setting> a = {{"--model-path", "$MODEL"}, {"--tp-size", std::to_string(dpa ? p.tp * p.dp : p.tp)}};
    if (p.pp > 1) a.push_back({"--pp-size", std::to_string(p.pp)});
    if (p.dp > 1) a.push_back({"--dp-size", std::to_string(p.dp)});
    if (dpa) a.push_back({"--enable-dp-attention", ""});
    if (s.model.moe.enabled() && p.ep > 1) a.push_back({"--ep-size", std::to_string(p.ep)});
    a.push_back({"--max-running-requests", std::to_string(dpa ? pt.concurrency * p.dp : pt.concurrency)});
    a.push_back({"--chunked-prefill-size", std::to_string(s.inference.prefill_chunk_tokens)});
    a.push_back({"--context-length", std::to_string(max_len(s))});
    a.push_back({"--mem-fraction-static", fmt::format("{:g}", s.inference.kv_cache_memory_fraction)});
    if (s.inference.kv_precision == Precision::fp8) a.push_back({"--kv-cache-dtype", "fp8_e4m3"});
    if (s.inference.weight_precision == Precision::fp8) a.push_back({"--quantization", "fp8"});
    return fmt::format("# SGLang (main, 2026): {} at {} requests in flight per replica; MODEL: its checkpoint\n", s.model.name, pt.concurrency) +
           as_cli(a, "python3 -m sglang.launch_server");
}

Expected<std::string> trtllm(const Scenario& s, const ParallelConfig& p, const ServingPoint& pt) {
    if (auto e = serving_refusal(p, "trtllm")) return *e;
    // With attention DP one instance spans tp x dp GPUs; otherwise dp instances run side by side.
    const bool dpa = attention_dp(p);
    std::vector<Setting> a = {{"--tp_size", std::to_string(dpa ? p.tp * p.dp : p.tp)}, {"--pp_size", std::to_string(p.pp)}};
    if (s.model.moe.enabled()) a.push_back({"--ep_size", std::to_string(p.ep)});
    a.push_back({"--max_batch_size", std::to_string(pt.concurrency)});
    a.push_back({"--max_num_tokens", std::to_string(s.inference.prefill_chunk_tokens)});
    a.push_back({"--max_seq_len", std::to_string(max_len(s))});
    a.push_back({"--kv_cache_free_gpu_memory_fraction", fmt::format("{:g}", s.inference.kv_cache_memory_fraction)});
    a.push_back({"--extra_llm_api_options", "extra.yaml"});
    std::string yaml = "enable_chunked_prefill: true\n";
    if (dpa) yaml += "enable_attention_dp: true\n";
    if (s.model.moe.enabled()) yaml += fmt::format("moe_tensor_parallel_size: {}\n", p.expert_tp());
    yaml += fmt::format("cuda_graph_config:\n  max_batch_size: {}\n", std::min(pt.concurrency, s.inference.cuda_graph_max_batch));
    if (s.inference.kv_precision == Precision::fp8) yaml += "kv_cache_config:\n  dtype: fp8\n";
    return fmt::format("# TensorRT-LLM (main, 2026): {} at {} requests in flight{}; MODEL: its checkpoint\n", s.model.name, pt.concurrency,
                       p.dp > 1 && !dpa ? fmt::format(", one of {} instances behind a router", p.dp) : dpa ? " per attention rank" : "") +
           as_cli(a, "trtllm-serve $MODEL") + "# extra.yaml:\n" + yaml;
}

}  // namespace

const std::vector<std::string>& training_launch_targets() {
    static const std::vector<std::string> t = {"megatron", "nemo", "torchtitan", "deepspeed"};
    return t;
}
const std::vector<std::string>& serving_launch_targets() {
    static const std::vector<std::string> t = {"trtllm", "vllm", "sglang"};
    return t;
}

Expected<std::string> training_launch(const Scenario& s, const ParallelConfig& p, std::string_view target) {
    if (target == "megatron") return megatron(s, p);
    if (target == "nemo") return nemo(s, p);
    if (target == "torchtitan") return torchtitan(s, p);
    if (target == "deepspeed") return deepspeed(s, p);
    return InputError{"--emit", std::string(target), "megatron, nemo, torchtitan or deepspeed for a training layout"};
}

Expected<std::string> serving_launch(const Scenario& s, const ParallelConfig& p, const ServingPoint& pt, std::string_view target) {
    if (target == "vllm") return vllm(s, p, pt);
    if (target == "sglang") return sglang(s, p, pt);
    if (target == "trtllm") return trtllm(s, p, pt);
    return InputError{"--emit", std::string(target), "trtllm, vllm or sglang for a serving layout"};
}

}  // namespace sm
