#include "io/hf_config.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "core/error.hpp"
#include "io/read_file.hpp"
#include "io/scenario.hpp"

namespace sm {

namespace {

// The families whose config.json keys differ; the model_types of one family share a mapping.
enum class Family { llama, mistral, mixtral, qwen, qwen_moe, deepseek, gpt_oss, gemma, gemma2, gemma3, nemotron_h };

struct TypeName {
    const char* model_type;
    Family family;
};

constexpr TypeName kTypes[] = {
    {"llama", Family::llama},         {"mistral", Family::mistral},     {"mixtral", Family::mixtral},
    {"qwen2", Family::qwen},          {"qwen3", Family::qwen},          {"qwen2_moe", Family::qwen_moe},
    {"qwen3_moe", Family::qwen_moe},  {"deepseek_v2", Family::deepseek}, {"deepseek_v3", Family::deepseek},
    {"gpt_oss", Family::gpt_oss},     {"gemma", Family::gemma},         {"gemma2", Family::gemma2},
    {"gemma3_text", Family::gemma3},  {"nemotron_h", Family::nemotron_h},
};

// One config object's keys, read with errors that name `where`.key. A key set to null is absent
// (Hugging Face writes `"q_lora_rank": null`, `"sliding_window": null`).
class Config {
public:
    Config(const Json& j, std::string where) : j_(j), where_(std::move(where)) {}

    [[nodiscard]] const Json* get(const char* key) const {
        const auto it = j_.find(key);
        return it == j_.end() || it->is_null() ? nullptr : &*it;
    }
    [[nodiscard]] std::string path(const char* key) const { return where_ + "." + key; }

    // A whole number >= lo: required when `def` is nullopt.
    [[nodiscard]] int64_t count(const char* key, std::optional<int64_t> def = std::nullopt, int64_t lo = 1) const {
        const Json* v = get(key);
        if (!v) {
            if (def) return *def;
            fail(path(key), "nothing", "required: a whole number");
        }
        // 2^53: beyond it a JSON number is no longer an exact integer (and no dimension is near it).
        constexpr double kMost = 9007199254740992.0;
        const bool whole = v->is_number_integer() || (v->is_number_float() && std::trunc(v->get<double>()) == v->get<double>());
        if (!whole || v->get<double>() < static_cast<double>(lo) || v->get<double>() > kMost)
            fail(path(key), show(*v), fmt::format("a whole number, at least {}", lo));
        return v->get<int64_t>();
    }
    [[nodiscard]] bool flag(const char* key, bool def) const {
        const Json* v = get(key);
        if (!v) return def;
        if (!v->is_boolean()) fail(path(key), show(*v), "true or false");
        return v->get<bool>();
    }
    [[nodiscard]] double number(const char* key, double def) const {
        const Json* v = get(key);
        if (!v) return def;
        if (!v->is_number()) fail(path(key), show(*v), "a number");
        return v->get<double>();
    }
    [[nodiscard]] std::optional<std::string> text(const char* key) const {
        const Json* v = get(key);
        if (!v) return std::nullopt;
        if (!v->is_string()) fail(path(key), show(*v), "a string");
        return v->get<std::string>();
    }

private:
    const Json& j_;
    std::string where_;
};

std::vector<std::string> type_names() {
    std::vector<std::string> v;
    for (const TypeName& t : kTypes) v.emplace_back(t.model_type);
    return v;
}

std::string type_list() {
    std::string s;
    for (const std::string& t : type_names()) s += (s.empty() ? "" : ", ") + t;
    return s;
}

// The gated MLPs of these families: SiLU gates SwiGLU, GELU (any approximation) GeGLU; NemotronH's
// MLP is squared ReLU, ungated (its own key).
std::string ffn_act(const Config& c, Family f) {
    if (f == Family::nemotron_h) {
        const std::string act = c.text("mlp_hidden_act").value_or("relu2");
        if (act != "relu2") fail(c.path("mlp_hidden_act"), quote_input(act), "relu2 (squared ReLU, NemotronH's)");
        return "squared-relu";
    }
    const char* key = c.get("hidden_activation") ? "hidden_activation" : "hidden_act";
    const std::string act = c.text(key).value_or("silu");
    if (act == "silu" || act == "swish") return "swiglu";
    if (act == "gelu" || act == "gelu_pytorch_tanh" || act == "gelu_new" || act == "gelu_fast") return "geglu";
    fail(c.path(key), quote_input(act), "silu (SwiGLU) or gelu, gelu_pytorch_tanh, gelu_new (GeGLU): the gated MLPs of the mapped families");
}

// Layer i keeps full attention when i + 1 is a multiple of the pattern (the model schema's
// sliding_window_pattern; 0: every layer windowed), or no layer is windowed (nullopt).
std::optional<int64_t> pattern_of_layer_types(const Config& c, int64_t layers) {
    const Json* types = c.get("layer_types");
    if (!types->is_array() || static_cast<int64_t>(types->size()) != layers)
        fail(c.path("layer_types"), types->is_array() ? fmt::format("{} entries", types->size()) : show(*types),
             fmt::format("one entry per layer (num_hidden_layers = {})", layers));
    std::vector<bool> full;
    for (const Json& t : *types) {
        if (!t.is_string() || (t != "full_attention" && t != "sliding_attention"))
            fail(c.path("layer_types"), show(t), "entries \"full_attention\" or \"sliding_attention\"");
        full.push_back(t == "full_attention");
    }
    const auto first_full = std::find(full.begin(), full.end(), true);
    if (std::all_of(full.begin(), full.end(), [](bool f) { return f; })) return std::nullopt;
    if (first_full == full.end()) return 0;
    const int64_t p = (first_full - full.begin()) + 1;
    for (int64_t i = 0; i < layers; ++i)
        if (full[static_cast<size_t>(i)] != ((i + 1) % p == 0))
            fail(c.path("layer_types"), fmt::format("layer {} {}", i, full[static_cast<size_t>(i)] ? "full" : "sliding"),
                 fmt::format("full attention on every {}th layer and only there (layer i full when i + 1 is a multiple of {}), "
                             "as gpt-oss and Gemma 2/3 place it; other mixes are not modelled",
                             p, p));
    return p;
}

// model.sliding_window and sliding_window_pattern, when some layer attends through a window.
void map_window(const Config& c, Family f, int64_t layers, Json& m) {
    std::optional<int64_t> pattern;
    if (f == Family::qwen || f == Family::qwen_moe) {
        // Qwen's window starts at layer max_window_layers, which the schema cannot place.
        if (c.flag("use_sliding_window", false))
            fail(c.path("use_sliding_window"), "true", "false: Qwen's window from layer max_window_layers on is not modelled");
        return;
    }
    if (c.get("layer_types"))
        pattern = pattern_of_layer_types(c, layers);
    else if (f == Family::mistral || f == Family::mixtral)
        pattern = 0;  // one window on every layer (Mistral 7B v0.1: 4,096), or none when null
    else if (f == Family::gemma2 || f == Family::gpt_oss)
        pattern = 2;  // local and global layers alternate, the first local
    else if (f == Family::gemma3)
        pattern = c.count("sliding_window_pattern", 6);
    if (!pattern || !c.get("sliding_window")) {
        if (pattern && *pattern != 0 && c.get("layer_types"))
            fail(c.path("sliding_window"), "nothing", "the window of the layer_types' sliding layers (positions, a whole number)");
        return;
    }
    m["sliding_window"] = c.count("sliding_window");
    if (*pattern > 0) m["sliding_window_pattern"] = *pattern;
}

// The dense layers Qwen's MoE configs name (mlp_only_layers) must be the first k: the schema's
// model.moe.first_dense_layers.
int64_t dense_prefix(const Config& c) {
    const Json* only = c.get("mlp_only_layers");
    if (!only) return 0;
    if (!only->is_array()) fail(c.path("mlp_only_layers"), show(*only), "a list of layer indices");
    for (size_t i = 0; i < only->size(); ++i)
        if (!(*only)[i].is_number_integer() || (*only)[i].get<int64_t>() != static_cast<int64_t>(i))
            fail(c.path("mlp_only_layers"), printable(only->dump(), 40), "the first k layers (0, 1, ..., k-1): dense layers elsewhere are not modelled");
    return static_cast<int64_t>(only->size());
}

void map_moe(const Config& c, Family f, Json& m) {
    Json moe = Json::object();
    switch (f) {
        case Family::mixtral:
        case Family::gpt_oss:
            moe["experts"] = c.count("num_local_experts");
            moe["top_k"] = c.count(c.get("num_experts_per_tok") || f == Family::mixtral ? "num_experts_per_tok" : "experts_per_token");
            moe["expert_ffn_hidden"] = c.count("intermediate_size");
            break;
        case Family::qwen_moe: {
            moe["experts"] = c.count("num_experts");
            moe["top_k"] = c.count("num_experts_per_tok");
            moe["expert_ffn_hidden"] = c.count("moe_intermediate_size");
            if (const int64_t k = dense_prefix(c); k > 0) moe["first_dense_layers"] = k;
            moe["interval"] = c.count("decoder_sparse_step", 1);
            if (const int64_t shared = c.count("shared_expert_intermediate_size", 0, 0); shared > 0) {
                moe["shared_experts"] = 1;
                moe["shared_expert_ffn_hidden"] = shared;
            }
            break;
        }
        case Family::deepseek: {
            if (!c.get("n_routed_experts")) return;  // a dense DeepSeek
            moe["experts"] = c.count("n_routed_experts");
            moe["top_k"] = c.count("num_experts_per_tok");
            moe["expert_ffn_hidden"] = c.count("moe_intermediate_size");
            moe["first_dense_layers"] = c.count("first_k_dense_replace", 0, 0);
            // DeepSeek's rule is i % freq == 0 past the dense prefix, the schema's (i + 1) % interval:
            // the same only at 1, which every released DeepSeek uses.
            if (const int64_t freq = c.count("moe_layer_freq", 1); freq != 1)
                fail(c.path("moe_layer_freq"), std::to_string(freq), "1 (every layer past first_k_dense_replace is MoE); others are not modelled");
            if (const int64_t shared = c.count("n_shared_experts", 0, 0); shared > 0) {
                moe["shared_experts"] = shared;
                moe["shared_expert_ffn_hidden"] = c.count("moe_intermediate_size");
            }
            break;
        }
        case Family::nemotron_h: {
            // Experts only where the pattern places them (an "E" layer).
            if (m["hybrid_pattern"].get<std::string>().find('E') == std::string::npos) return;
            moe["experts"] = c.count("n_routed_experts");
            moe["top_k"] = c.count("num_experts_per_tok");
            moe["expert_ffn_hidden"] = c.count("moe_intermediate_size");
            if (const int64_t shared = c.count("n_shared_experts", 0, 0); shared > 0) {
                moe["shared_experts"] = shared;
                moe["shared_expert_ffn_hidden"] = c.count("moe_shared_expert_intermediate_size");
            }
            if (c.get("moe_latent_size")) moe["latent_size"] = c.count("moe_latent_size");
            break;
        }
        default: return;
    }
    m["moe"] = moe;
}

void map_mla(const Config& c, Json& m) {
    if (!c.get("q_lora_rank"))
        fail(c.path("q_lora_rank"), "null", "a whole number: latent attention without query compression (DeepSeek-V2-Lite) is not modelled");
    m["attention_kind"] = "mla";
    m["mla"] = {{"q_lora_rank", c.count("q_lora_rank")},
                {"kv_lora_rank", c.count("kv_lora_rank")},
                {"qk_nope_head_dim", c.count("qk_nope_head_dim")},
                {"qk_rope_head_dim", c.count("qk_rope_head_dim")},
                {"v_head_dim", c.count("v_head_dim")}};
    if (const int64_t mtp = c.count("num_nextn_predict_layers", 0, 0); mtp > 0) m["mtp_layers"] = mtp;
}

bool is_gemma(Family f) { return f == Family::gemma || f == Family::gemma2 || f == Family::gemma3; }

// The layer pattern of a NemotronH config: hybrid_override_pattern as Megatron-Core writes it, or
// (newer configs) layers_block_type, one name per layer.
std::string nemotron_h_pattern(const Config& c) {
    if (const std::optional<std::string> p = c.text("hybrid_override_pattern")) return *p;
    const Json* types = c.get("layers_block_type");
    if (!types || !types->is_array() || types->empty())
        fail(c.path("hybrid_override_pattern"), "nothing", "the layer pattern, or layers_block_type (one name per layer)");
    std::string out;
    for (const Json& t : *types) {
        const std::string name = t.is_string() ? t.get<std::string>() : "";
        const char ch = name == "mamba" ? 'M' : name == "moe" ? 'E' : name == "attention" ? '*' : name == "mlp" ? '-' : '?';
        if (ch == '?') fail(c.path("layers_block_type"), show(t), "entries \"mamba\", \"moe\", \"attention\" or \"mlp\"");
        out += ch;
    }
    return out;
}

// NemotronH's (Nemotron-H, Nemotron 3) Mamba-2 mixers and its MTP module (attention then MoE in
// Nemotron 3: model.mtp_layers' block in a hybrid model); the pattern is already in `m`.
void map_hybrid(const Config& c, Json& m) {
    m["mamba"] = Json{{"state_dim", c.count("ssm_state_size")}, {"groups", c.count("n_groups")},
                      {"head_dim", c.count("mamba_head_dim")},  {"num_heads", c.count("mamba_num_heads")},
                      {"conv_kernel", c.count("conv_kernel", 4)}, {"chunk", c.count("chunk_size", 128)}};
    if (const int64_t mtp = c.count("num_nextn_predict_layers", 0, 0); mtp > 0) m["mtp_layers"] = mtp;
}

}  // namespace

Json model_from_hf(const Json& config, const std::string& where) {
    if (!config.is_object()) fail(where, show(config), "a Hugging Face config.json: one JSON object");
    const Config c(config, where);
    const std::optional<std::string> type = c.text("model_type");
    const auto known = std::find_if(std::begin(kTypes), std::end(kTypes), [&](const TypeName& t) { return type && *type == t.model_type; });
    if (known == std::end(kTypes)) {
        // A multimodal wrapper (Gemma 3, Mistral 3) keeps its language model in text_config.
        if (const Json* text = c.get("text_config"); text && text->is_object()) return model_from_hf(*text, c.path("text_config"));
        const std::optional<std::string> hint = type ? did_you_mean(*type, type_names()) : std::nullopt;
        fail(c.path("model_type"), type ? quote_input(*type) : "nothing",
             "one of " + type_list() + (hint ? " (did you mean \"" + *hint + "\"?)" : ""));
    }
    const Family f = known->family;
    Json m = Json::object();
    m["name"] = c.text("_name_or_path").value_or(*type);
    m["description"] = fmt::format("read from a Hugging Face config.json (model_type {}){}", *type,
                                   c.get("quantization_config") ? "; the checkpoint is quantised: set the inference precisions to match" : "");
    // NemotronH: a hybrid stack whose layer count its pattern gives (the newest configs drop
    // num_hidden_layers).
    const bool hybrid = f == Family::nemotron_h;
    const std::string pattern = hybrid ? nemotron_h_pattern(c) : "";
    if (hybrid) m["hybrid_pattern"] = pattern;
    const int64_t layers = hybrid && !c.get("num_hidden_layers") ? static_cast<int64_t>(pattern.size()) : c.count("num_hidden_layers");
    m["layers"] = layers;
    m["hidden"] = c.count("hidden_size");
    m["heads"] = c.count("num_attention_heads");
    if (f != Family::deepseek) {  // MLA: every head keeps its own K and V, its widths in model.mla
        m["kv_heads"] = c.count("num_key_value_heads", m["heads"].get<int64_t>());
        if (c.get("head_dim")) m["head_dim"] = c.count("head_dim");
    }
    m["ffn_hidden"] = c.count("intermediate_size");
    m["ffn_act"] = ffn_act(c, f);
    m["vocab"] = c.count("vocab_size");
    // The context the model supports; training runs set their own (--seq, model.seq_len).
    m["seq_len"] = c.count("max_position_embeddings");
    m["norm"] = "rmsnorm";
    m["position"] = hybrid ? "none" : "rope";  // NemotronH's Mamba layers carry the order
    m["causal"] = true;
    m["bias"] = c.flag("attention_bias", f == Family::gpt_oss) || c.flag("mlp_bias", false) || (hybrid && c.flag("use_bias", false));
    m["tied_embeddings"] = c.flag("tie_word_embeddings", is_gemma(f));
    m["dropout"] = c.number("attention_dropout", 0.0) > 0.0;
    if (f == Family::deepseek) map_mla(c, m);
    if (hybrid) map_hybrid(c, m);
    map_window(c, f, layers, m);
    map_moe(c, f, m);
    return m;
}

Json read_hf_model(const std::string& path, const std::string& where) {
    // Only a regular file: a FIFO or device named here would block or never end.
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
        fail(where, quote_path(path), "the path of a Hugging Face config.json (a readable file, relative to the working directory)");
    Expected<std::string> text = read_bounded(InputSource{path, where, "a Hugging Face config.json"});
    if (!text) throw InputException(text.error());
    Expected<Json> doc = parse_scenario_text(text.value(), where);
    if (!doc) throw InputException(doc.error());
    Json m = model_from_hf(doc.value(), where);
    // Released configs drop _name_or_path: name the model by its file (llama-3.1-8b.json), or by
    // the folder a config.json sits in (a download of meta-llama/Llama-3.1-8B).
    if (!doc.value().contains("_name_or_path")) {
        const std::filesystem::path p(path);
        std::string name = p.stem().string();
        if (name == "config") name = p.parent_path().filename().string();
        if (!name.empty() && name != "." && name != "..") m["name"] = name;
    }
    return m;
}

}  // namespace sm
