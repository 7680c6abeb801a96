// --emit: layouts as each framework's launch settings. Every option name emitted, over layouts
// that reach every branch, must be one the framework's own parser defines at the stated version
// (data/frameworks/NAME.txt, extracted from its source); the values are checked by hand.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "io/launch_settings.hpp"
#include "search/serve_search.hpp"
#include "test_helpers.hpp"

namespace sm {
namespace {
using namespace testing;

std::set<std::string> known_names(const std::string& framework) {
    std::ifstream in(std::string(SCALEMODEL_SOURCE_DIR) + "/data/frameworks/" + framework + ".txt");
    EXPECT_TRUE(in.good()) << framework;
    std::set<std::string> names;
    for (std::string line; std::getline(in, line);)
        if (!line.empty() && line[0] != '#') names.insert(line);
    EXPECT_GT(names.size(), 100u) << framework;
    return names;
}

// The option names in an emitted text: command-line flags, `key=value` overrides, TOML
// `[section]` keys and the YAML keys of an extra-options file, each as the framework spells it.
std::vector<std::string> emitted_names(const std::string& text) {
    std::vector<std::string> names;
    std::istringstream in(text);
    std::string section, parent;
    bool yaml = false;
    for (std::string line; std::getline(in, line);) {
        if (line == "# extra.yaml:") {
            yaml = true;
            continue;
        }
        if (line.empty() || line[0] == '#') continue;
        const size_t lead = line.find_first_not_of(' ');
        const std::string body = line.substr(lead);
        if (body.starts_with("--")) {
            names.push_back(body.substr(0, body.find_first_of(" \\")));
        } else if (yaml) {
            const std::string key = body.substr(0, body.find(':'));
            if (lead == 0) parent = key;
            if (lead == 0 && body.back() == ':') continue;  // a mapping: its keys follow
            names.push_back(lead == 0 ? key : parent + "." + key);
        } else if (body.starts_with("[")) {
            section = body.substr(1, body.find(']') - 1);
        } else if (const size_t eq = body.find(" = "); eq != std::string::npos) {
            names.push_back(section + "." + body.substr(0, eq));
        } else if (const size_t e = body.find('='); e != std::string::npos) {
            names.push_back(body.substr(0, e));
        }
    }
    return names;
}

std::string launch(const std::string& doc, const char* target) {
    const Scenario s = scenario(doc);
    const Expected<std::string> t = training_launch(s, s.parallel, target);
    EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message());
    return t.ok() ? t.value() : std::string();
}

const char* kSystem = R"("system": {"preset": "dgx-h100"})";

// Layouts that reach every branch of the training emitters between them.
std::vector<std::string> training_layouts() {
    const std::string h = std::string("{") + kSystem + ", ";
    return {
        h + R"("model": {"preset": "llama3-8b"}, "parallel": {"tp": 2, "pp": 4, "vp": 2, "dp": 2, "cp": 2, "cp_kind": "ulysses",
             "sequence_parallel": true, "zero": 1, "recompute": "selective", "microbatch": 2},
             "training": {"global_batch": 64, "precision": "fp8", "fp8_recipe": "mxfp8"}})",
        R"({"system": {"preset": "dgx-b200"}, "model": {"preset": "mixtral-8x7b"}, "parallel": {"tp": 2, "pp": 4, "dp": 4, "ep": 4, "zero": 3, "recompute": "full",
             "first_stage_layers": 5, "last_stage_layers": 5}, "training": {"global_batch": 64, "precision": "fp4", "moe_a2a_overlap": true}})",
        h + R"("model": {"preset": "deepseek-v3"}, "parallel": {"tp": 2, "pp": 4, "vp": 4, "dp": 8, "ep": 8, "cp": 2, "cp_kind": "all_gather",
             "zero": 2, "pipeline_split": "fill"}, "training": {"global_batch": 64, "precision": "fp16"}})",
        h + R"("model": {"preset": "llama3.1-405b"}, "parallel": {"tp": 8, "pp": 16, "dp": 2, "cp": 2, "cp_kind": "ring",
             "pipeline_split": "embedding_loss"}, "training": {"global_batch": 64}})",
    };
}

// TorchTitan runs none of Ulysses, ZeRO-1 or uneven splits: its own set.
std::vector<std::string> torchtitan_layouts() {
    const std::string h = std::string("{") + kSystem + ", ";
    return {
        h + R"("model": {"preset": "llama3-8b"}, "parallel": {"tp": 2, "pp": 4, "vp": 2, "dp": 2, "cp": 2, "cp_kind": "all_gather",
             "sequence_parallel": true, "zero": 2, "recompute": "selective"}, "training": {"global_batch": 64, "precision": "fp8"}})",
        h + R"("model": {"preset": "mixtral-8x7b"}, "parallel": {"tp": 4, "dp": 8, "ep": 8, "cp": 2, "cp_kind": "ring", "zero": 3,
             "recompute": "full"}, "training": {"global_batch": 64, "precision": "fp32"}})",
        h + R"("model": {"preset": "llama3-8b"}, "parallel": {"dp": 8}, "training": {"global_batch": 64}})",
    };
}

TEST(LaunchSettings, EveryTrainingNameIsTheFrameworks) {
    for (const char* target : {"megatron", "nemo"}) {
        const std::set<std::string> known = known_names(target);
        for (const std::string& doc : training_layouts())
            for (const std::string& name : emitted_names(launch(doc, target))) EXPECT_TRUE(known.count(name)) << target << ": " << name;
    }
    const std::set<std::string> titan = known_names("torchtitan");
    for (const std::string& doc : torchtitan_layouts())
        for (const std::string& name : emitted_names(launch(doc, "torchtitan"))) EXPECT_TRUE(titan.count(name)) << name;
}

TEST(LaunchSettings, MegatronArgumentsByHand) {
    const std::string t = launch(training_layouts()[0], "megatron");
    for (const char* line : {"--tensor-model-parallel-size 2 \\", "--pipeline-model-parallel-size 4 \\",
                             "--num-virtual-stages-per-pipeline-rank 2 \\", "--context-parallel-size 2 \\", "--cp-comm-type a2a \\",
                             "--sequence-parallel \\", "--micro-batch-size 2 \\", "--global-batch-size 64 \\", "--seq-length 8192 \\",
                             "--use-distributed-optimizer \\", "--recompute-granularity selective \\", "--bf16 \\", "--fp8-format hybrid \\",
                             "--fp8-recipe mxfp8"})
        EXPECT_NE(t.find(line), std::string::npos) << line << " in\n" << t;
    EXPECT_EQ(t.find("--expert"), std::string::npos);  // a dense model
    EXPECT_EQ(t.find("--overlap-moe"), std::string::npos);
    const std::string moe = launch(training_layouts()[1], "megatron");
    for (const char* line : {"--decoder-first-pipeline-num-layers 5 \\", "--decoder-last-pipeline-num-layers 5 \\",
                             "--expert-model-parallel-size 4 \\", "--expert-tensor-parallel-size 2 \\", "--use-megatron-fsdp \\",
                             "--data-parallel-sharding-strategy optim_grads_params \\", "--recompute-granularity full \\",
                             "--recompute-method uniform \\", "--recompute-num-layers 1 \\", "--fp4-format e2m1",
                             "--overlap-moe-expert-parallel-comm \\\n  --delay-wgrad-compute \\"})
        EXPECT_NE(moe.find(line), std::string::npos) << line << " in\n" << moe;
    // DeepSeek-V3's 61 layers on pp 4 x vp 4, filled: 15 chunks of 4 and the last of 1.
    const std::string fill = launch(training_layouts()[2], "megatron");
    EXPECT_NE(fill.find("--pipeline-model-parallel-layout \"Et*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|t*4|tL\""),
              std::string::npos)
        << fill;
    EXPECT_NE(fill.find("--data-parallel-sharding-strategy optim_grads \\"), std::string::npos);
    EXPECT_NE(fill.find("--cp-comm-type all_gather"), std::string::npos);
    EXPECT_NE(fill.find("--fp16"), std::string::npos);
    const std::string accounted = launch(training_layouts()[3], "megatron");
    EXPECT_NE(accounted.find("--account-for-embedding-in-pipeline-split \\\n  --account-for-loss-in-pipeline-split"), std::string::npos);
    EXPECT_NE(accounted.find("--cp-comm-type p2p"), std::string::npos);
}

TEST(LaunchSettings, NemoAndTorchTitanByHand) {
    const std::string n = launch(training_layouts()[0], "nemo");
    for (const char* line : {"trainer.strategy.tensor_model_parallel_size=2\n", "trainer.strategy.virtual_pipeline_model_parallel_size=2\n",
                             "trainer.strategy.context_parallel_size=2\n", "trainer.strategy.sequence_parallel=true\n",
                             "data.micro_batch_size=2\n", "data.global_batch_size=64\n", "data.seq_length=8192\n",
                             "optim.config.use_distributed_optimizer=True"})
        EXPECT_NE(n.find(line), std::string::npos) << line << " in\n" << n;
    EXPECT_NE(launch(training_layouts()[2], "nemo").find("trainer.strategy.pipeline_model_parallel_layout=\"Et*4|t*4|"), std::string::npos);
    EXPECT_NE(launch(training_layouts()[1], "nemo").find("comm_overlap.overlap_moe_expert_parallel_comm=True, comm_overlap.delay_wgrad_compute=True"),
              std::string::npos);
    EXPECT_EQ(n.find("overlap_moe"), std::string::npos);
    // ZeRO-2 is FSDP2 that keeps the weights gathered after forward; the batch per data-parallel rank.
    const std::string t = launch(torchtitan_layouts()[0], "torchtitan");
    for (const char* line : {"data_parallel_replicate_degree = 1\n", "data_parallel_shard_degree = 2\n", "fsdp_reshard_after_forward = \"never\"\n",
                             "pipeline_parallel_schedule = \"Interleaved1F1B\"\n", "pipeline_parallel_layers_per_stage = 4\n",
                             "context_parallel_rotate_method = \"allgather\"\n", "local_batch_size = 32\n", "mode = \"selective\"\n",
                             "converters = [\"float8\"]\n"})
        EXPECT_NE(t.find(line), std::string::npos) << line << " in\n" << t;
    const std::string ddp = launch(torchtitan_layouts()[2], "torchtitan");
    EXPECT_NE(ddp.find("data_parallel_replicate_degree = 8\ndata_parallel_shard_degree = 1\n"), std::string::npos) << ddp;
    EXPECT_EQ(ddp.find("pipeline_parallel_schedule"), std::string::npos);
}

TEST(LaunchSettings, WhatAFrameworkCannotRunIsRefused) {
    const auto refusal = [](const std::string& doc, const char* target) {
        const Scenario s = scenario(doc);
        const Expected<std::string> t = training_launch(s, s.parallel, target);
        return t.ok() ? std::string("accepted") : t.error().message();
    };
    const std::string summa = std::string("{") + kSystem +
                              R"(, "model": {"preset": "llama3-8b"}, "parallel": {"tp": 8, "tp_rows": 2}, "training": {"global_batch": 8}})";
    EXPECT_EQ(refusal(summa, "megatron").substr(0, 51), "--emit: got megatron for tp 8 as a 2x4 SUMMA grid; ");
    const std::string order = std::string("{") + kSystem +
                              R"(, "model": {"preset": "llama3-8b"}, "parallel": {"tp": 2, "dp": 4, "order": "dp-tp-cp-pp"}, "training": {"global_batch": 8}})";
    EXPECT_NE(refusal(order, "nemo").find("rank order dp-tp-cp-pp"), std::string::npos);
    EXPECT_NE(refusal(training_layouts()[0], "torchtitan").find("ZeRO 1"), std::string::npos);
    EXPECT_NE(refusal(training_layouts()[2], "torchtitan").find("fill pipeline split"), std::string::npos);
}

// The dotted keys of a JSON object's leaves ("zero_optimization.stage").
void json_names(const Json& j, const std::string& prefix, std::vector<std::string>& out) {
    for (const auto& [key, value] : j.items()) {
        const std::string name = prefix.empty() ? key : prefix + "." + key;
        if (value.is_object()) json_names(value, name, out);
        else out.push_back(name);
    }
}

// DeepSpeed's emitted text: comment lines, then the config JSON.
Json deepspeed_config(const std::string& text) {
    const size_t brace = text.find("\n{");
    EXPECT_NE(brace, std::string::npos) << text;
    return Json::parse(text.substr(brace + 1));
}

std::vector<std::string> deepspeed_layouts() {
    const std::string h = std::string("{") + kSystem + ", ";
    return {
        h + R"("model": {"preset": "llama3-8b"}, "parallel": {"tp": 2, "pp": 4, "dp": 2, "cp": 2, "cp_kind": "ulysses", "zero": 1,
             "recompute": "selective", "microbatch": 2}, "training": {"global_batch": 64, "precision": "bf16"}})",
        h + R"("model": {"preset": "mixtral-8x7b"}, "parallel": {"dp": 8, "ep": 8, "zero": 3, "offload": "optimizer", "recompute": "full"},
             "training": {"global_batch": 64, "precision": "fp16"}})",
    };
}

TEST(LaunchSettings, DeepSpeedConfigByHand) {
    const std::set<std::string> known = known_names("deepspeed");
    for (const std::string& doc : deepspeed_layouts()) {
        std::vector<std::string> names;
        json_names(deepspeed_config(launch(doc, "deepspeed")), "", names);
        for (const std::string& name : names) EXPECT_TRUE(known.count(name)) << name;
    }
    const std::string t = launch(deepspeed_layouts()[0], "deepspeed");
    const Json a = deepspeed_config(t);
    EXPECT_EQ(a["train_batch_size"], 64);
    EXPECT_EQ(a["train_micro_batch_size_per_gpu"], 2);
    EXPECT_EQ(a["gradient_accumulation_steps"], 16);  // 64 / (2 x dp 2)
    EXPECT_EQ(a["bf16"]["enabled"], true);
    EXPECT_EQ(a["zero_optimization"]["stage"], 1);
    EXPECT_FALSE(a["zero_optimization"].contains("offload_optimizer"));
    EXPECT_EQ(a["tensor_parallel"]["autotp_size"], 2);
    for (const char* line : {"num_stages=4, partition_method=\"uniform\"", "DistributedAttention over a group of 2 ranks",
                             "recompute selective: deepspeed.checkpointing.checkpoint around each attention core"})
        EXPECT_NE(t.find(line), std::string::npos) << line << " in\n" << t;
    const std::string moe = launch(deepspeed_layouts()[1], "deepspeed");
    const Json b = deepspeed_config(moe);
    EXPECT_EQ(b["gradient_accumulation_steps"], 8);  // 64 / (1 x dp 8)
    EXPECT_EQ(b["fp16"]["enabled"], true);
    EXPECT_FALSE(b.contains("bf16"));
    EXPECT_FALSE(b.contains("tensor_parallel"));
    EXPECT_EQ(b["zero_optimization"]["stage"], 3);
    EXPECT_EQ(b["zero_optimization"]["offload_optimizer"]["device"], "cpu");
    EXPECT_NE(moe.find("deepspeed.moe.layer.MoE(..., ep_size=8)"), std::string::npos) << moe;
    EXPECT_NE(moe.find("around each transformer layer"), std::string::npos) << moe;
    EXPECT_EQ(moe.find("PipelineModule"), std::string::npos);
}

TEST(LaunchSettings, DeepSpeedRefusesWhatItCannotRun) {
    const auto refusal = [](const std::string& doc) {
        const Scenario s = scenario(doc);
        const Expected<std::string> t = training_launch(s, s.parallel, "deepspeed");
        return t.ok() ? std::string("accepted") : t.error().message();
    };
    const std::string h = std::string("{") + kSystem + R"(, "model": {"preset": "llama3-8b"}, )";
    // Its pipeline engine asserts ZeRO < 2; ZeRO 1 with the pipeline runs.
    EXPECT_NE(refusal(h + R"("parallel": {"pp": 4, "dp": 2, "zero": 2}, "training": {"global_batch": 8}})").find("ZeRO 2 with pipeline parallelism 4"),
              std::string::npos);
    EXPECT_EQ(refusal(h + R"("parallel": {"pp": 4, "dp": 2, "zero": 1}, "training": {"global_batch": 8}})"), "accepted");
    EXPECT_EQ(refusal(h + R"("parallel": {"dp": 8, "zero": 2}, "training": {"global_batch": 8}})"), "accepted");
    EXPECT_NE(refusal(h + R"("parallel": {"dp": 8}, "training": {"global_batch": 8, "precision": "fp8"}})").find("fp8 training"),
              std::string::npos);
    EXPECT_NE(refusal(h + R"("parallel": {"tp": 2, "cp": 2, "cp_kind": "ring"}, "training": {"global_batch": 8}})").find("ring context parallelism"),
              std::string::npos);
}

ServingPoint at(int64_t concurrency) {
    ServingPoint p;
    p.concurrency = concurrency;
    return p;
}

std::string serve(const std::string& doc, const char* target, int64_t concurrency = 64) {
    const Scenario s = scenario(doc, Purpose::infer);
    const Expected<std::string> t = serving_launch(s, s.parallel, at(concurrency), target);
    EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message());
    return t.ok() ? t.value() : std::string();
}

std::vector<std::string> serving_layouts() {
    const std::string h = std::string("{") + kSystem + ", ";
    return {
        h + R"("model": {"preset": "llama3.1-70b"}, "parallel": {"tp": 4, "pp": 2},
             "inference": {"input_len": 2048, "output_len": 256, "precision": "fp8"}})",
        h + R"("model": {"preset": "llama3.1-8b"}, "parallel": {"tp": 2, "dp": 4}, "inference": {"precision": "bf16"}})",
        h + R"("model": {"preset": "deepseek-r1"}, "parallel": {"tp": 1, "dp": 8, "ep": 8},
             "inference": {"input_len": 1024, "output_len": 1024, "precision": "fp8"}})",
        h + R"("model": {"preset": "qwen3-30b-a3b"}, "parallel": {"tp": 4, "ep": 4, "etp": 1}, "inference": {"precision": "bf16"}})",
    };
}

TEST(LaunchSettings, EveryServingNameIsTheEngines) {
    for (const char* target : {"vllm", "sglang", "trtllm"}) {
        const std::set<std::string> known = known_names(target);
        for (const std::string& doc : serving_layouts())
            for (const std::string& name : emitted_names(serve(doc, target))) EXPECT_TRUE(known.count(name)) << target << ": " << name;
    }
}

TEST(LaunchSettings, ServingCommandsByHand) {
    // Attention data-parallel with experts over all 8 GPUs: one SGLang engine of 8 GPUs holding 8 x 64
    // requests; one TensorRT-LLM instance with attention DP; vLLM's 8 DP ranks with expert parallelism.
    const std::string sg = serve(serving_layouts()[2], "sglang");
    for (const char* line : {"--tp-size 8 \\", "--dp-size 8 \\", "--enable-dp-attention \\", "--ep-size 8 \\",
                             "--max-running-requests 512 \\", "--context-length 2048 \\", "--kv-cache-dtype fp8_e4m3 \\"})
        EXPECT_NE(sg.find(line), std::string::npos) << line << " in\n" << sg;
    const std::string trt = serve(serving_layouts()[2], "trtllm");
    for (const char* line : {"--tp_size 8 \\", "--ep_size 8 \\", "--max_batch_size 64 \\", "enable_attention_dp: true\n",
                             "moe_tensor_parallel_size: 1\n", "cuda_graph_config:\n  max_batch_size: 64\n"})
        EXPECT_NE(trt.find(line), std::string::npos) << line << " in\n" << trt;
    const std::string v = serve(serving_layouts()[2], "vllm");
    for (const char* line : {"--tensor-parallel-size 1 \\", "--data-parallel-size 8 \\", "--enable-expert-parallel \\", "--max-num-seqs 64 \\"})
        EXPECT_NE(v.find(line), std::string::npos) << line << " in\n" << v;
    // Plain replicas: TensorRT-LLM runs dp instances; CUDA graphs up to the engine's graph batch.
    const std::string replicas = serve(serving_layouts()[1], "trtllm", 300);
    EXPECT_NE(replicas.find("one of 4 instances behind a router"), std::string::npos) << replicas;
    EXPECT_NE(replicas.find("--tp_size 2 \\"), std::string::npos);
    EXPECT_NE(replicas.find("max_batch_size: 128\n"), std::string::npos);
    EXPECT_EQ(replicas.find("enable_attention_dp"), std::string::npos);
    EXPECT_EQ(replicas.find("--ep_size"), std::string::npos);  // dense
    const std::string piped = serve(serving_layouts()[0], "vllm");
    EXPECT_NE(piped.find("--pipeline-parallel-size 2 \\"), std::string::npos);
    EXPECT_NE(piped.find("--max-model-len 2304 \\"), std::string::npos);
    EXPECT_EQ(piped.find("--data-parallel-size"), std::string::npos);
}

TEST(LaunchSettings, ExpertsBetweenTensorAndExpertParallelAreRefused) {
    const std::string doc = std::string("{") + kSystem +
                            R"(, "model": {"preset": "qwen3-30b-a3b"}, "parallel": {"tp": 4, "ep": 2, "etp": 2}, "inference": {"precision": "bf16"}})";
    const Scenario s = scenario(doc, Purpose::infer);
    const Expected<std::string> t = serving_launch(s, s.parallel, at(8), "vllm");
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().path, "--emit");
    EXPECT_FALSE(serving_launch(s, s.parallel, at(8), "megatron").ok());
    EXPECT_FALSE(training_launch(s, s.parallel, "vllm").ok());
}

}  // namespace
}  // namespace sm
