// model.from_hf: Hugging Face config.json files, written here as released on the model cards,
// read into the model schema. Expectations are the presets built from the same cards by hand,
// parameter counts worked out by hand or published, and the errors that name the config's key.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "io/hf_config.hpp"
#include "io/scenario.hpp"
#include "model/model_spec.hpp"
#include "test_helpers.hpp"

namespace sm {
namespace {
using namespace testing;

// meta-llama/Llama-3.1-8B's config.json (transformers 4.43).
const char* kLlama31_8b = R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 128000, "eos_token_id": 128001, "hidden_act": "silu", "hidden_size": 4096,
  "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 131072,
  "mlp_bias": false, "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32,
  "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "rope_theta": 500000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16", "use_cache": true,
  "vocab_size": 128256})";

// mistralai/Mixtral-8x7B-v0.1.
const char* kMixtral = R"({
  "architectures": ["MixtralForCausalLM"], "attention_dropout": 0.0, "hidden_act": "silu",
  "hidden_size": 4096, "intermediate_size": 14336, "max_position_embeddings": 32768,
  "model_type": "mixtral", "num_attention_heads": 32, "num_experts_per_tok": 2, "num_hidden_layers": 32,
  "num_key_value_heads": 8, "num_local_experts": 8, "rms_norm_eps": 1e-05, "rope_theta": 1000000.0,
  "sliding_window": null, "tie_word_embeddings": false, "vocab_size": 32000})";

// deepseek-ai/DeepSeek-V3.
const char* kDeepSeekV3 = R"({
  "architectures": ["DeepseekV3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "first_k_dense_replace": 3, "hidden_act": "silu", "hidden_size": 7168, "intermediate_size": 18432,
  "kv_lora_rank": 512, "max_position_embeddings": 163840, "model_type": "deepseek_v3",
  "moe_intermediate_size": 2048, "moe_layer_freq": 1, "n_group": 8, "n_routed_experts": 256,
  "n_shared_experts": 1, "norm_topk_prob": true, "num_attention_heads": 128, "num_experts_per_tok": 8,
  "num_hidden_layers": 61, "num_key_value_heads": 128, "num_nextn_predict_layers": 1,
  "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
  "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                          "weight_block_size": [128, 128]},
  "rms_norm_eps": 1e-06, "routed_scaling_factor": 2.5, "scoring_func": "sigmoid",
  "tie_word_embeddings": false, "topk_group": 4, "topk_method": "noaux_tc", "v_head_dim": 128,
  "vocab_size": 129280})";

// openai/gpt-oss-120b (layer_types cut to the rule it follows for all 36 layers below).
std::string gpt_oss_120b() {
    std::string types;
    for (int i = 0; i < 36; ++i) types += std::string(i ? ", " : "") + (i % 2 ? "\"full_attention\"" : "\"sliding_attention\"");
    return R"({
  "architectures": ["GptOssForCausalLM"], "attention_bias": true, "attention_dropout": 0.0,
  "experts_per_token": 4, "head_dim": 64, "hidden_act": "silu", "hidden_size": 2880,
  "initial_context_length": 4096, "intermediate_size": 2880, "layer_types": [)" +
           types + R"(], "max_position_embeddings": 131072, "model_type": "gpt_oss", "num_attention_heads": 64,
  "num_experts_per_tok": 4, "num_hidden_layers": 36, "num_key_value_heads": 8, "num_local_experts": 128,
  "quantization_config": {"quant_method": "mxfp4"}, "rms_norm_eps": 1e-05, "rope_theta": 150000,
  "sliding_window": 128, "swiglu_limit": 7.0, "tie_word_embeddings": false, "vocab_size": 201088})";
}

// Qwen/Qwen1.5-MoE-A2.7B (model_type qwen2_moe): 60 routed experts and one shared expert.
const char* kQwen2Moe = R"({
  "architectures": ["Qwen2MoeForCausalLM"], "attention_dropout": 0.0, "decoder_sparse_step": 1,
  "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 5632, "max_position_embeddings": 8192,
  "max_window_layers": 21, "model_type": "qwen2_moe", "moe_intermediate_size": 1408, "num_attention_heads": 16,
  "num_experts": 60, "num_experts_per_tok": 4, "num_hidden_layers": 24, "num_key_value_heads": 16,
  "rms_norm_eps": 1e-06, "shared_expert_intermediate_size": 5632, "sliding_window": 32768,
  "tie_word_embeddings": false, "use_sliding_window": false, "vocab_size": 151936, "mlp_only_layers": []})";

// google/gemma-2-9b.
const char* kGemma2_9b = R"({
  "architectures": ["Gemma2ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0, "head_dim": 256,
  "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 3584, "intermediate_size": 14336,
  "max_position_embeddings": 8192, "model_type": "gemma2", "num_attention_heads": 16, "num_hidden_layers": 42,
  "num_key_value_heads": 8, "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_theta": 10000.0,
  "sliding_window": 4096, "vocab_size": 256000})";

// google/gemma-3-4b-it: a vision-language wrapper whose language model is text_config.
const char* kGemma3_4b = R"({
  "architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3", "mm_tokens_per_image": 256,
  "text_config": {"head_dim": 256, "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 2560,
                  "intermediate_size": 10240, "model_type": "gemma3_text", "num_attention_heads": 8,
                  "num_hidden_layers": 34, "num_key_value_heads": 4, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                  "sliding_window": 1024, "sliding_window_pattern": 6, "max_position_embeddings": 131072,
                  "vocab_size": 262208},
  "vision_config": {"hidden_size": 1152, "model_type": "siglip_vision_model"}})";

Json parse(const std::string& text) {
    Expected<Json> j = parse_scenario_text(text, "test config");
    EXPECT_TRUE(j.ok()) << (j.ok() ? "" : j.error().message());
    return j.value();
}

ModelSpec mapped(const std::string& config) {
    Expected<ModelSpec> m = parse_model(model_from_hf(parse(config), "model.from_hf"), "model");
    EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message());
    return m.value();
}

// The error a config gives, as the command line prints it.
std::string refusal_of(const std::string& config) {
    try {
        model_from_hf(parse(config), "model.from_hf");
    } catch (const InputException& e) {
        return e.error.message();
    }
    return "accepted";
}

// `config` with `key` set to `value` (a JSON text), or removed when `value` is empty.
std::string with(const std::string& config, const std::string& key, const std::string& value) {
    Json j = parse(config);
    if (value.empty())
        j.erase(key);
    else
        j[key] = Json::parse(value);
    return j.dump();
}

TEST(HfConfig, Llama31MatchesItsPresetAndItsPublishedCount) {
    ModelSpec m = mapped(kLlama31_8b);
    EXPECT_EQ(m.seq_len, 131072);  // the config's context; the preset trains at 8K
    m.seq_len = 8192;
    m.name = "llama3.1-8b";
    EXPECT_EQ(m, model_preset("llama3.1-8b"));
    // Embedding and head 2 x 128,256 x 4,096; per layer Q and O 2 x 4,096^2, K and V 2 x 4,096 x
    // 1,024, MLP 3 x 4,096 x 14,336, two norms; final norm: 8,030,261,248 (the safetensors' count).
    const double layer = 2.0 * 4096 * 4096 + 2.0 * 4096 * 1024 + 3.0 * 4096 * 14336 + 2.0 * 4096;
    EXPECT_DOUBLE_EQ(layer, 218112000.0);
    EXPECT_DOUBLE_EQ(count_params(m).total(), 32.0 * layer + 2.0 * 128256 * 4096 + 4096);
    EXPECT_DOUBLE_EQ(count_params(m).total(), 8030261248.0);
}

TEST(HfConfig, MixtralExpertsAndNoWindowWhenNull) {
    const ModelSpec m = mapped(kMixtral);
    EXPECT_EQ(m.moe.experts, 8);
    EXPECT_EQ(m.moe.top_k, 2);
    EXPECT_EQ(m.moe.expert_ffn_hidden, 14336);
    EXPECT_EQ(m.sliding_window, 0);
    // Per layer: attention 41,943,040, 8 experts of 3 x 4,096 x 14,336, router 4,096 x 8, two
    // norms; embedding and head 2 x 32,000 x 4,096; final norm: 46,702,792,704 (the model card's 46.7B).
    const double layer = 41943040.0 + 8.0 * 3 * 4096 * 14336 + 4096.0 * 8 + 2.0 * 4096;
    EXPECT_DOUBLE_EQ(count_params(m).total(), 32.0 * layer + 2.0 * 32000 * 4096 + 4096);
    EXPECT_DOUBLE_EQ(count_params(m).total(), 46702792704.0);
    // Mistral 7B v0.1 windows every layer at 4,096.
    const ModelSpec w = mapped(with(with(with(kMixtral, "model_type", "\"mistral\""), "sliding_window", "4096"), "num_local_experts", ""));
    EXPECT_EQ(w.sliding_window, 4096);
    EXPECT_EQ(w.sliding_window_pattern, 0);
    EXPECT_FALSE(w.moe.enabled());
}

TEST(HfConfig, DeepSeekV3MatchesItsPresetWithMtp) {
    ModelSpec m = mapped(kDeepSeekV3);
    EXPECT_EQ(m.attention_kind, AttentionKind::mla);
    EXPECT_EQ(m.mtp_layers, 1);  // num_nextn_predict_layers
    ModelSpec p = model_preset("deepseek-v3");
    p.seq_len = 163840;
    p.mtp_layers = 1;
    m.name = p.name;
    EXPECT_EQ(m, p);
    EXPECT_NEAR(count_params(mapped(with(kDeepSeekV3, "num_nextn_predict_layers", "0"))).total() / 1e9, 671.0, 1.0);
    // DeepSeek-R1 is the same network.
    ModelSpec r1 = model_preset("deepseek-r1");
    r1.name = p.name;
    r1.mtp_layers = 1;
    EXPECT_EQ(m, r1);
}

// nvidia/NVIDIA-Nemotron-3-Super-120B-A12B's config.json (the keys read; as ai-dynamo/aiconfigurator
// 095f58a stores it), its pattern given as layers_block_type (the newer configs' form).
std::string nemotron3_super(bool block_types) {
    const std::string pattern = "MEMEMEM*EMEMEMEM*EMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEM*EMEMEMEME";
    std::string layers;
    if (block_types) {
        layers = R"("layers_block_type": [)";
        for (size_t i = 0; i < pattern.size(); ++i)
            layers += std::string(i ? ", " : "") +
                      (pattern[i] == 'M' ? R"("mamba")" : pattern[i] == 'E' ? R"("moe")" : R"("attention")");
        layers += "],";
    } else {
        layers = R"("num_hidden_layers": 88, "hybrid_override_pattern": ")" + pattern + R"(",)";
    }
    return R"({"model_type": "nemotron_h", )" + layers + R"( "hidden_size": 4096, "num_attention_heads": 32,
        "num_key_value_heads": 2, "head_dim": 128, "intermediate_size": 2688, "mlp_hidden_act": "relu2",
        "vocab_size": 131072, "max_position_embeddings": 262144, "use_bias": false, "mlp_bias": false,
        "attention_bias": false, "tie_word_embeddings": false, "ssm_state_size": 128, "n_groups": 8,
        "mamba_head_dim": 64, "mamba_num_heads": 128, "conv_kernel": 4, "chunk_size": 128,
        "n_routed_experts": 512, "num_experts_per_tok": 22, "moe_intermediate_size": 2688,
        "n_shared_experts": 1, "moe_shared_expert_intermediate_size": 5376, "moe_latent_size": 1024,
        "num_nextn_predict_layers": 1})";
}

TEST(HfConfig, NemotronHMatchesTheNemotron3Preset) {
    for (const bool block_types : {false, true}) {
        ModelSpec m = mapped(nemotron3_super(block_types));
        EXPECT_EQ(m.hybrid_pattern.size(), 88u) << block_types;
        EXPECT_EQ(m.moe.latent_size, 1024);
        EXPECT_EQ(m.mamba.num_heads, 128);
        EXPECT_EQ(m.position, PositionKind::none);
        ModelSpec p = model_preset("nemotron-3-super-120b-a12b");
        p.seq_len = 262144;
        m.name = p.name;
        EXPECT_EQ(m, p) << block_types;
    }
    EXPECT_EQ(refusal_of(with(nemotron3_super(false), "mlp_hidden_act", "\"silu\"")).substr(0, 36), "model.from_hf.mlp_hidden_act: got \"s");
    std::string bad = nemotron3_super(true);
    bad.replace(bad.find("\"mamba\""), 7, "\"gdn\"");
    EXPECT_NE(refusal_of(bad).find("model.from_hf.layers_block_type"), std::string::npos);
}

TEST(HfConfig, GptOssWindowsEveryOtherLayerAndMatchesItsPreset) {
    ModelSpec m = mapped(gpt_oss_120b());
    EXPECT_EQ(m.sliding_window, 128);
    EXPECT_EQ(m.sliding_window_pattern, 2);  // layer i full when i + 1 is even: layers 1, 3, ...
    EXPECT_EQ(m.attention_head_dim, 64);
    EXPECT_TRUE(m.bias);
    m.name = "gpt-oss-120b";
    EXPECT_EQ(m, model_preset("gpt-oss-120b"));
    // The model card (arXiv:2508.10925, Table 1): 116.83B total, 5.13B active, the active count
    // without the embedding (201,088 x 2,880); the attention sinks (64 per layer) are not counted.
    const ParamCount p = count_params(m);
    EXPECT_DOUBLE_EQ(p.embedding, 201088.0 * 2880);
    EXPECT_NEAR(p.total() / 1e9, 116.83, 0.05);
    EXPECT_NEAR((p.active() - p.embedding) / 1e9, 5.13, 0.01);
}

TEST(HfConfig, Qwen2MoeSharedExpertAndDensePrefix) {
    const ModelSpec m = mapped(kQwen2Moe);
    EXPECT_EQ(m.moe.experts, 60);
    EXPECT_EQ(m.moe.top_k, 4);
    EXPECT_EQ(m.moe.expert_ffn_hidden, 1408);
    EXPECT_EQ(m.moe.shared_experts, 1);
    EXPECT_EQ(m.moe.shared_expert_ffn_hidden, 5632);
    EXPECT_EQ(m.moe.first_dense_layers, 0);
    EXPECT_EQ(m.sliding_window, 0);  // use_sliding_window false
    // The model card: 14.3B parameters, 2.7B activated (the qkv biases and the shared expert's
    // gate, 6K per layer, are left out).
    EXPECT_NEAR(count_params(m).total() / 1e9, 14.3, 0.05);
    EXPECT_NEAR(count_params(m).active() / 1e9, 2.7, 0.05);
    EXPECT_EQ(mapped(with(kQwen2Moe, "mlp_only_layers", "[0, 1]")).moe.first_dense_layers, 2);
    EXPECT_EQ(mapped(with(kQwen2Moe, "decoder_sparse_step", "2")).moe.interval, 2);
}

TEST(HfConfig, GemmaTiesAndGatesWithGelu) {
    const ModelSpec m = mapped(kGemma2_9b);
    EXPECT_EQ(m.ffn_act, FfnAct::geglu);
    EXPECT_TRUE(m.tied_embeddings);  // Gemma's default, not written in its config
    EXPECT_EQ(m.sliding_window, 4096);
    EXPECT_EQ(m.sliding_window_pattern, 2);
    EXPECT_EQ(m.attention_head_dim, 256);
    // 9.24B on the model card; Gemma 2's extra two norms per layer (300K) are not counted.
    EXPECT_NEAR(count_params(m).total() / 1e9, 9.24, 0.01);
    const ModelSpec g3 = mapped(kGemma3_4b);  // read through text_config
    EXPECT_EQ(g3.layers, 34);
    EXPECT_EQ(g3.sliding_window, 1024);
    EXPECT_EQ(g3.sliding_window_pattern, 6);
    EXPECT_TRUE(g3.tied_embeddings);
}

TEST(HfConfig, WhatCannotBeMappedIsNamed) {
    EXPECT_EQ(refusal_of(with(kLlama31_8b, "model_type", "\"lama\"")).substr(0, 46), "model.from_hf.model_type: got \"lama\"; one of l");
    EXPECT_NE(refusal_of(with(kLlama31_8b, "model_type", "\"lama\"")).find("did you mean \"llama\""), std::string::npos);
    EXPECT_EQ(refusal_of(with(kLlama31_8b, "num_hidden_layers", "")),
              "model.from_hf.num_hidden_layers: got nothing; required: a whole number");
    EXPECT_EQ(refusal_of(with(kLlama31_8b, "hidden_size", "40.5")), "model.from_hf.hidden_size: got 40.5; a whole number, at least 1");
    EXPECT_EQ(refusal_of(with(kLlama31_8b, "hidden_act", "\"relu\"")).substr(0, 42), "model.from_hf.hidden_act: got \"relu\"; silu");
    EXPECT_EQ(refusal_of(with(kQwen2Moe, "use_sliding_window", "true")).substr(0, 49),
              "model.from_hf.use_sliding_window: got true; false");
    EXPECT_EQ(refusal_of(with(kQwen2Moe, "mlp_only_layers", "[1]")).substr(0, 48), "model.from_hf.mlp_only_layers: got [1]; the firs");
    EXPECT_EQ(refusal_of(with(kDeepSeekV3, "q_lora_rank", "null")).substr(0, 45), "model.from_hf.q_lora_rank: got null; a whole ");
    EXPECT_EQ(refusal_of(with(kDeepSeekV3, "moe_layer_freq", "2")).substr(0, 40), "model.from_hf.moe_layer_freq: got 2; 1 (");
    // Full attention on layers 1 and 2 of 4: no every-p-th rule gives it.
    const std::string irregular = with(with(gpt_oss_120b(), "num_hidden_layers", "4"), "layer_types",
                                       R"(["sliding_attention", "full_attention", "full_attention", "sliding_attention"])");
    EXPECT_EQ(refusal_of(irregular).substr(0, 54), "model.from_hf.layer_types: got layer 2 full; full atte");
    EXPECT_EQ(refusal_of(with(gpt_oss_120b(), "layer_types", "[\"full_attention\"]")),
              "model.from_hf.layer_types: got 1 entries; one entry per layer (num_hidden_layers = 36)");
    try {
        model_from_hf(Json::array({1, 2}), "model.from_hf");
        ADD_FAILURE() << "an array was mapped";
    } catch (const InputException& e) {
        EXPECT_EQ(e.error.message().substr(0, 20), "model.from_hf: got a");
        EXPECT_NE(e.error.message().find("a Hugging Face config.json: one JSON object"), std::string::npos);
    }
    // Inside a wrapper the path says where the field was.
    Json g3 = parse(kGemma3_4b);
    g3["text_config"]["hidden_activation"] = "tanh";
    EXPECT_EQ(refusal_of(g3.dump()).substr(0, 52), "model.from_hf.text_config.hidden_activation: got \"ta");
}

// The scenario reads the file: its fields under the section's own, and errors for what is not a
// config file.
TEST(HfConfig, ScenarioReadsTheFileUnderItsOwnFields) {
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / "scalemodel-hf-test";
    std::filesystem::create_directories(dir / "Llama-3.1-8B");
    const std::string file = (dir / "Llama-3.1-8B" / "config.json").string();
    std::ofstream(file) << kLlama31_8b;
    const std::string doc = R"({"model": {"from_hf": ")" + file + R"(", "seq_len": 4096}, "system": {"preset": "dgx-h100"}})";
    const Scenario s = scenario(doc);
    EXPECT_EQ(s.model.seq_len, 4096);  // the section's field over the config's 131,072
    EXPECT_EQ(s.model.layers, 32);
    EXPECT_EQ(s.model.name, "Llama-3.1-8B");  // the folder of a config.json
    EXPECT_EQ(refusal(R"({"model": {"from_hf": ")" + file + R"(", "preset": "llama3-8b"}, "system": {"preset": "dgx-h100"}})")
                  .substr(0, 14),
              "model.from_hf:");
    EXPECT_EQ(refusal(R"({"model": {"from_hf": ")" + dir.string() + R"("}, "system": {"preset": "dgx-h100"}})").substr(0, 20),
              "model.from_hf: got \"");
    EXPECT_NE(refusal(R"({"model": {"from_hf": "/dev/zero"}, "system": {"preset": "dgx-h100"}})").find("a readable file"), std::string::npos);
    EXPECT_EQ(refusal(R"({"model": {"from_hf": 3}, "system": {"preset": "dgx-h100"}})"),
              "model.from_hf: got 3; the path of a Hugging Face config.json (a string)");
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sm
