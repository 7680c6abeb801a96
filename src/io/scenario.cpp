#include "io/scenario.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "hardware/cost.hpp"
#include "hardware/energy.hpp"
#include "io/embedded.hpp"
#include "io/field_table.hpp"
#include "io/hf_config.hpp"
#include "io/provenance.hpp"
#include "io/technology_reader.hpp"
#include "io/read_file.hpp"
#include "layout/rules.hpp"
#include "parallel/pipeline_split.hpp"

namespace sm {

namespace {

std::vector<std::string> precision_names() {
    std::vector<std::string> v;
    for (Precision p : kAllPrecisions) v.emplace_back(to_string(p));
    return v;
}

Precision read_precision(ObjectReader& r, const char* key, Precision def) {
    return *parse_precision(r.choice(key, std::string(to_string(def)), precision_names()));
}

Json parse_json(std::string_view text, const std::string& origin) {
    if (text.size() > kMaxScenarioBytes)
        fail(origin, fmt::format("{} bytes", text.size()), fmt::format("at most {} bytes (4 MiB)", kMaxScenarioBytes));
    // Keys seen in each open object: a repeated key is an error, not a silent last-one-wins.
    std::vector<std::set<std::string>> open_objects;
    auto depth_guard = [&](int depth, Json::parse_event_t event, Json& parsed) {
        if (depth > kMaxJsonDepth)
            fail(origin, fmt::format("JSON nested deeper than {}", kMaxJsonDepth), "scenarios nest a few levels only");
        if (event == Json::parse_event_t::object_start) open_objects.emplace_back();
        if (event == Json::parse_event_t::object_end && !open_objects.empty()) open_objects.pop_back();
        if (event == Json::parse_event_t::key && !open_objects.empty() && parsed.is_string() &&
            !open_objects.back().insert(parsed.get<std::string>()).second)
            fail(origin, "duplicate key \"" + printable(parsed.get<std::string>()) + "\"", "each key may appear once in an object");
        return true;
    };
    try {
        return Json::parse(text.begin(), text.end(), depth_guard);
    } catch (const Json::parse_error& e) {
        std::string what = e.what();
        const auto pos = what.find("syntax error");
        if (pos != std::string::npos) what = what.substr(pos);
        fail(origin, fmt::format("invalid JSON at byte {}", e.byte), printable(what, 200));
    } catch (const Json::exception& e) {  // e.g. out_of_range 406: a number such as 1e400 overflows a double
        std::string what = e.what();
        const auto pos = what.find("] ");
        if (pos != std::string::npos) what = what.substr(pos + 2);
        fail(origin, "invalid JSON", printable(what, 200) + "; numbers must be finite doubles");
    }
}

// Preset values first, the user's fields on top (objects merge recursively).
void merge_into(Json& base, const Json& top) {
    for (const auto& [k, v] : top.items()) {
        if (v.is_object() && base.contains(k) && base[k].is_object())
            merge_into(base[k], v);
        else
            base[k] = v;
    }
}

std::vector<std::string> names_of(std::span<const EmbeddedFile> files) {
    std::vector<std::string> v;
    for (const auto& f : files) v.emplace_back(f.name);
    return v;
}

Json preset_json(std::span<const EmbeddedFile> files, const std::string& name, const std::string& path) {
    for (const auto& f : files)
        if (f.name == name) return parse_json(f.text, "preset " + name);
    const auto names = names_of(files);
    auto hint = did_you_mean(name, names);
    std::string allowed = hint ? "did you mean \"" + *hint + "\"? " : std::string();
    allowed += "see `scalemodel presets`";
    fail(path, quote_input(name), "unknown preset; " + allowed);
}

// A section that may name a preset: the preset's fields, overridden by the section's own.
Json resolve_section(const Json& section, std::span<const EmbeddedFile> presets, const std::string& path) {
    if (!section.is_object()) fail(path, show(section), "expected an object");
    auto it = section.find("preset");
    if (it == section.end()) return section;
    if (!it->is_string()) fail(path + ".preset", show(*it), "expected a preset name (a string)");
    Json merged = preset_json(presets, it->get<std::string>(), path + ".preset");
    Json own = section;
    own.erase("preset");
    merge_into(merged, own);
    return merged;
}

// The inference section with `engine` naming a serving engine's profile (presets/engines/): the
// profile's fields, overridden by the section's own.
Json resolve_engine(const Json& section) {
    if (!section.is_object() || !section.contains("engine")) return section;
    const Json& name = section["engine"];
    if (!name.is_string()) fail("inference.engine", show(name), "expected an engine name (a string): see `scalemodel presets engines`");
    const Json profile = preset_json(embedded_engine_presets(), name.get<std::string>(), "inference.engine");
    Json merged = profile.contains("inference") ? profile["inference"] : Json::object();
    merge_into(merged, section);
    return merged;
}

// The model section: a preset's fields or a Hugging Face config's (model.from_hf), overridden by
// the section's own.
Json resolve_model(const Json& section) {
    if (!section.is_object() || !section.contains("from_hf")) return resolve_section(section, embedded_model_presets(), "model");
    const Json& path = section["from_hf"];
    if (section.contains("preset"))
        fail("model.from_hf", show(path), "not beside model.preset: one names a built-in model, the other reads a config.json");
    if (!path.is_string() || path.get_ref<const std::string&>().empty())
        fail("model.from_hf", show(path), "the path of a Hugging Face config.json (a string)");
    Json merged = read_hf_model(path.get<std::string>(), "model.from_hf");
    Json own = section;
    own.erase("from_hf");
    merge_into(merged, own);
    return merged;
}

// A model field (`path` below model) in its table row's range, `hi` tightened by another field.
int64_t model_count(ObjectReader& r, const char* path, std::optional<int64_t> def, std::optional<int64_t> hi = std::nullopt) {
    return read_count(r, model_field(path), def, hi);
}

// model.image: the grid a ViT cuts into patch x patch tokens. Each side must be a whole number
// of patches (a grid that is not is cropped first, as FourCastNet crops ERA5's 721 latitudes).
ImageSpec read_image(ObjectReader& r) {
    auto c = r.child("image");
    if (!c) fail(r.path_of("image"), "nothing", "required with model.kind \"vit\": {height, width, patch, in_channels[, out_channels]}");
    ImageSpec im;
    im.height = model_count(*c, "image.height", std::nullopt);
    im.width = model_count(*c, "image.width", std::nullopt);
    im.patch = model_count(*c, "image.patch", std::nullopt);
    im.in_channels = model_count(*c, "image.in_channels", std::nullopt);
    im.out_channels = model_count(*c, "image.out_channels", im.in_channels);
    c->finish();
    for (const auto& [key, side] : {std::pair{"height", im.height}, std::pair{"width", im.width}})
        if (side % im.patch != 0)
            fail(c->path_of(key), std::to_string(side),
                 fmt::format("a multiple of model.image.patch ({}); crop the grid first (FourCastNet crops ERA5's 721 latitudes to 720)", im.patch));
    const auto most = static_cast<int64_t>(model_field("seq_len").hi);
    if (im.tokens() > most)
        fail(r.path_of("image"), fmt::format("{} tokens ({} x {} patches)", im.tokens(), im.height / im.patch, im.width / im.patch),
             fmt::format("at most {} tokens (model.seq_len's bound)", most));
    return im;
}

// model.hybrid_pattern and model.mamba: a hybrid Mamba-Transformer (Nemotron-H), one character
// per layer as Megatron-Core's hybrid_override_pattern writes it. Read after the rest of the
// model, whose features a hybrid stack does not combine with are refused by name.
void read_hybrid(ObjectReader& r, ModelSpec& m) {
    auto mamba = r.child("mamba");
    if (!r.has("hybrid_pattern")) {
        if (mamba) fail(r.path_of("mamba"), "an object", "only with model.hybrid_pattern (the layers that are Mamba-2 mixers)");
        return;
    }
    const std::string where = r.path_of("hybrid_pattern");
    const std::string text = r.text("hybrid_pattern", std::nullopt);
    const std::string shown = quote_input(text);
    if (static_cast<int64_t>(text.size()) != m.layers)
        fail(where, shown, fmt::format("one character per layer: {} of them (model.layers), not {}", m.layers, text.size()));
    if (const size_t bad = text.find_first_not_of("M-*E"); bad != std::string::npos)
        fail(where, shown,
             fmt::format("only \"M\" (Mamba-2), \"-\" (FFN), \"*\" (attention) and \"E\" (mixture of experts); character {} is not", bad + 1));
    // "E" blocks are model.moe's experts; the pattern alone says which layers they are.
    const bool experts = text.find('E') != std::string::npos;
    if (experts != m.moe.enabled())
        fail(where, shown.substr(0, 40),
             experts ? "\"E\" layers with model.moe (their experts)" : "an \"E\" layer for model.moe's experts, or no model.moe");
    const std::pair<bool, const char*> clashes[] = {
        {m.kind != ModelKind::decoder, "model.kind \"decoder\""},
        {m.moe.first_dense_layers > 0 || m.moe.interval != 1, "the pattern alone placing the experts (no model.moe.first_dense_layers or interval)"},
        {m.attention_kind == AttentionKind::mla, "model.attention_kind \"mha\""},
        {m.sliding_window > 0, "no model.sliding_window"},
        {m.attention == AttentionImpl::unfused, "model.attention \"fused\""},
    };
    for (const auto& [clash, needs] : clashes)
        if (clash) fail(where, shown.substr(0, 40), fmt::format("a hybrid Mamba stack is modelled with {}", needs));
    m.hybrid_pattern = text;
    if (mamba) {
        m.mamba.state_dim = model_count(*mamba, "mamba.state_dim", m.mamba.state_dim);
        m.mamba.groups = model_count(*mamba, "mamba.groups", m.mamba.groups);
        m.mamba.head_dim = model_count(*mamba, "mamba.head_dim", m.mamba.head_dim);
        m.mamba.expand = model_count(*mamba, "mamba.expand", m.mamba.expand);
        if (mamba->has("num_heads")) m.mamba.num_heads = model_count(*mamba, "mamba.num_heads", std::nullopt);
        m.mamba.conv_kernel = model_count(*mamba, "mamba.conv_kernel", m.mamba.conv_kernel);
        m.mamba.chunk = model_count(*mamba, "mamba.chunk", m.mamba.chunk);
        mamba->finish();
    }
    const int64_t inner = m.mamba.d_inner(m.hidden);
    if (inner % m.mamba.head_dim != 0)  // num_heads x head_dim always divides
        fail(r.path_of("mamba") + ".head_dim", std::to_string(m.mamba.head_dim),
             fmt::format("must divide expand x hidden ({})", inner));
    if (m.mamba.heads(m.hidden) % m.mamba.groups != 0)
        fail(r.path_of("mamba") + ".groups", std::to_string(m.mamba.groups),
             fmt::format("must divide the Mamba heads (expand x hidden / head_dim = {})", m.mamba.heads(m.hidden)));
    if (m.seq_len % m.mamba.chunk != 0)
        fail(r.path_of("mamba") + ".chunk", std::to_string(m.mamba.chunk),
             fmt::format("must divide model.seq_len ({}): the scan runs in whole chunks", m.seq_len));
}

// model.linear_attention: Gated DeltaNet on every layer but each full_attention_interval-th
// (Qwen3-Next, Qwen3.5). Read after the rest of the model; what it is not modelled with is refused
// by name.
void read_linear_attention(ObjectReader& r, ModelSpec& m) {
    auto c = r.child("linear_attention");
    if (!c) return;
    const std::string where = r.path_of("linear_attention");
    LinearAttentionSpec& a = m.linear_attention;
    a.full_attention_interval = model_count(*c, "linear_attention.full_attention_interval", std::nullopt, m.layers);
    a.key_heads = model_count(*c, "linear_attention.key_heads", a.key_heads);
    a.value_heads = model_count(*c, "linear_attention.value_heads", a.value_heads);
    a.key_head_dim = model_count(*c, "linear_attention.key_head_dim", a.key_head_dim);
    a.value_head_dim = model_count(*c, "linear_attention.value_head_dim", a.value_head_dim);
    a.conv_kernel = model_count(*c, "linear_attention.conv_kernel", a.conv_kernel);
    a.chunk = model_count(*c, "linear_attention.chunk", a.chunk);
    c->finish();
    if (a.value_heads % a.key_heads != 0)
        fail(where + ".value_heads", std::to_string(a.value_heads),
             fmt::format("a multiple of linear_attention.key_heads ({}): value heads share the key heads in groups", a.key_heads));
    const std::pair<bool, const char*> clashes[] = {
        {m.kind != ModelKind::decoder, "model.kind \"decoder\""},
        {m.hybrid(), "no model.hybrid_pattern"},
        {m.attention_kind == AttentionKind::mla, "model.attention_kind \"mha\""},
        {m.sliding_window > 0, "no model.sliding_window"},
        {m.mtp_layers > 0, "model.mtp_layers 0"},
        {m.moe.enabled() && (m.moe.first_dense_layers > 0 || m.moe.interval != 1),
         "every layer's FFN of one kind (model.moe.first_dense_layers 0 and interval 1)"},
    };
    for (const auto& [clash, needs] : clashes)
        if (clash) fail(where, "an object", fmt::format("Gated DeltaNet layers are modelled with {}", needs));
}

ModelSpec read_model(const Json& j, const std::string& path, Json* sink = nullptr) {
    ObjectReader r(j, path);
    r.record_into(sink);
    ModelSpec m;
    m.name = r.text("name", "custom");
    r.ignore("description");
    r.ignore("sources");
    const std::string kind = r.choice("kind", "decoder", {"decoder", "encoder", "vit"});
    m.kind = kind == "vit" ? ModelKind::vit : kind == "encoder" ? ModelKind::encoder : ModelKind::decoder;
    m.layers = model_count(r, "layers", std::nullopt);
    m.hidden = model_count(r, "hidden", std::nullopt);
    m.heads = model_count(r, "heads", std::nullopt);
    m.kv_heads = model_count(r, "kv_heads", m.heads);
    m.ffn_hidden = model_count(r, "ffn_hidden", 4 * m.hidden);
    m.ffn_act = *parse_ffn_act(r.choice("ffn_act", "gelu", ffn_act_names()));
    if (m.kind == ModelKind::vit) {
        if (r.has("vocab"))
            fail(r.path_of("vocab"), show(j.at("vocab")), "none with model.kind \"vit\": a ViT has no vocabulary (model.image sets its patch projections)");
        m.image = read_image(r);
        m.seq_len = model_count(r, "seq_len", m.image.tokens());
        if (m.seq_len != m.image.tokens())
            fail(r.path_of("seq_len"), std::to_string(m.seq_len),
                 fmt::format("the image's {} tokens: (height {} / patch {}) x (width {} / patch {}), or left out", m.image.tokens(),
                             m.image.height, m.image.patch, m.image.width, m.image.patch));
    } else {
        if (r.has("image")) fail(r.path_of("image"), show(j.at("image")), "only with model.kind \"vit\"");
        m.vocab = model_count(r, "vocab", std::nullopt);
        m.seq_len = model_count(r, "seq_len", std::nullopt);
    }
    if (auto moe = r.child("moe")) {
        m.moe.experts = model_count(*moe, "moe.experts", std::nullopt);
        m.moe.top_k = model_count(*moe, "moe.top_k", std::nullopt, m.moe.experts);
        m.moe.expert_ffn_hidden = model_count(*moe, "moe.expert_ffn_hidden", m.ffn_hidden);
        m.moe.first_dense_layers = model_count(*moe, "moe.first_dense_layers", 0, m.layers - 1);
        m.moe.interval = model_count(*moe, "moe.interval", 1, m.layers);
        m.moe.shared_experts = model_count(*moe, "moe.shared_experts", 0);
        m.moe.shared_expert_ffn_hidden = model_count(*moe, "moe.shared_expert_ffn_hidden", m.moe.expert_ffn_hidden);
        // At most every copy on one rank: experts / top_k times the mean.
        const NumericField& skew = model_field("moe.load_imbalance");
        m.moe.load_imbalance =
            moe->number("load_imbalance", 1.0, skew.lo, std::min(skew.hi, static_cast<double>(m.moe.experts) / static_cast<double>(m.moe.top_k)));
        if (moe->has("latent_size")) m.moe.latent_size = model_count(*moe, "moe.latent_size", std::nullopt);
        moe->finish();
    }
    m.norm = r.choice("norm", "layernorm", {"layernorm", "rmsnorm"}) == "rmsnorm" ? NormKind::rmsnorm : NormKind::layernorm;
    m.bias = r.boolean("bias", true);
    const std::string pos = r.choice("position", "learned", {"learned", "rope", "alibi", "sincos", "none"});
    m.position = pos == "rope"     ? PositionKind::rope
                 : pos == "alibi"  ? PositionKind::alibi
                 : pos == "sincos" ? PositionKind::sincos
                 : pos == "none"   ? PositionKind::none
                                   : PositionKind::learned;
    m.tied_embeddings = r.boolean("tied_embeddings", false);
    if (m.kind == ModelKind::vit && m.tied_embeddings)
        fail(r.path_of("tied_embeddings"), "true", "false with model.kind \"vit\": its patch embedding and regression head have different shapes");
    m.mtp_layers = model_count(r, "mtp_layers", 0);
    m.mtp_repeated = r.boolean("mtp_repeated", false);
    if (m.mtp_layers > 0 && m.kind == ModelKind::vit)
        fail(r.path_of("mtp_layers"), std::to_string(m.mtp_layers), "0 with model.kind \"vit\": multi-token prediction predicts tokens");
    m.dropout = r.boolean("dropout", false);
    // Decoders mask the future; encoders and ViTs attend both ways (a decoder may too: causal false).
    m.causal = r.boolean("causal", m.kind == ModelKind::decoder);
    if (m.kind != ModelKind::decoder && m.causal)
        fail(r.path_of("causal"), "true", fmt::format("false with model.kind \"{}\" (bidirectional attention); causal attention is model.kind \"decoder\"", kind));
    m.attention = r.choice("attention", "fused", {"fused", "unfused"}) == "unfused" ? AttentionImpl::unfused : AttentionImpl::fused;
    m.attention_kind = r.choice("attention_kind", "mha", {"mha", "mla"}) == "mla" ? AttentionKind::mla : AttentionKind::mha;
    auto mla = r.child("mla");
    if (m.attention_kind == AttentionKind::mla) {
        if (!mla) fail(path + ".mla", "nothing", "required with attention_kind mla: {q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim}");
        m.mla.q_lora_rank = model_count(*mla, "mla.q_lora_rank", std::nullopt);
        m.mla.kv_lora_rank = model_count(*mla, "mla.kv_lora_rank", std::nullopt);
        m.mla.qk_nope_head_dim = model_count(*mla, "mla.qk_nope_head_dim", std::nullopt);
        m.mla.qk_rope_head_dim = model_count(*mla, "mla.qk_rope_head_dim", std::nullopt);
        m.mla.v_head_dim = model_count(*mla, "mla.v_head_dim", std::nullopt);
        mla->finish();
    } else if (mla) {
        fail(path + ".mla", "an object", "only with model.attention_kind \"mla\"");
    }
    if (r.has("head_dim")) {
        if (m.attention_kind == AttentionKind::mla)
            fail(r.path_of("head_dim"), show(j.at("head_dim")), "none with model.attention_kind \"mla\" (model.mla sets its head dimensions)");
        m.attention_head_dim = model_count(r, "head_dim", std::nullopt);
    }
    if (r.has("sliding_window")) {
        if (m.attention_kind == AttentionKind::mla)
            fail(r.path_of("sliding_window"), show(j.at("sliding_window")), "none with model.attention_kind \"mla\" (no latent-attention model uses a window)");
        if (m.attention == AttentionImpl::unfused)
            fail(r.path_of("sliding_window"), show(j.at("sliding_window")),
                 "none with model.attention \"unfused\" (its two batched GEMMs compute every score; windowed kernels are fused)");
        m.sliding_window = model_count(r, "sliding_window", std::nullopt);
        m.sliding_window_pattern = model_count(r, "sliding_window_pattern", 0, m.layers);
    } else if (r.has("sliding_window_pattern")) {
        fail(r.path_of("sliding_window_pattern"), show(j.at("sliding_window_pattern")), "only with model.sliding_window");
    }
    read_hybrid(r, m);
    read_linear_attention(r, m);
    r.finish();
    if (m.attention_kind == AttentionKind::mla && m.kv_heads != m.heads)
        fail(path + ".kv_heads", std::to_string(m.kv_heads), fmt::format("must equal model.heads ({}) with attention_kind mla (every head has its own K and V)", m.heads));
    if (m.attention_head_dim == 0 && m.hidden % m.heads != 0)
        fail(path + ".heads", std::to_string(m.heads), fmt::format("must divide model.hidden ({}), or model.head_dim given", m.hidden));
    if (m.kv_heads > m.heads || m.heads % m.kv_heads != 0)
        fail(path + ".kv_heads", std::to_string(m.kv_heads), fmt::format("must divide model.heads ({})", m.heads));
    return m;
}

// `generated`: the bandwidth system.technology's SerDes give, which replaces any figure given.
// `level`: scale_up or scale_out.
LinkLevel read_link(ObjectReader& r, const std::string& level, std::optional<double> generated) {
    LinkLevel l;
    l.bw_bytes_per_s = system_number(r, level, "bw_bytes_per_s", generated);
    if (generated) {
        l.bw_bytes_per_s = *generated;
        r.set_recorded("bw_bytes_per_s", *generated);
    }
    l.latency_s = system_number(r, level, "latency_s", 0.0);
    return l;
}

struct HbmMemory {
    double bytes = 0, bw_bytes_per_s = 0;
    double j_per_bit = 0;  // the generation's, the default of system.energy.hbm_j_per_bit
};

// `accelerator.hbm`: {generation, stacks[, stack_bw_bytes_per_s, stack_bytes]}, the memory as
// stacks of one HBM generation (presets/memory/hbm.json), or nothing when absent.
std::optional<HbmMemory> read_hbm(ObjectReader& a) {
    auto h = a.child("hbm");
    if (!h) return std::nullopt;
    const HbmStack stack = read_hbm_stack(*h, "accelerator.hbm", std::nullopt);
    const auto stacks = static_cast<double>(system_count(*h, "accelerator.hbm", "stacks", std::nullopt));
    h->finish();
    return HbmMemory{stacks * stack.bytes, stacks * stack.bw_bytes_per_s, stack.entry.at("j_per_bit").get<double>()};
}

// system.energy (docs/CALIBRATION.md, "Energy and cost"), read after the peaks, bandwidths and
// efficiencies it is calibrated against. Absent: the system has no energy figures. With
// system.technology every figure is the generated chip's, replacing any given (as for the peaks).
void read_energy(ObjectReader& r, SystemSpec& s, const std::optional<TechnologyReading>& tech, std::optional<double> hbm_j_per_bit) {
    std::optional<ObjectReader> e = tech ? r.child_or_empty("energy") : r.child("energy");
    if (!e) return;
    EnergySpec& en = s.energy;
    std::optional<double> tdp, idle, up, out;
    double sram = 0;  // not given: the SRAM level's energy is inside active_w
    if (tech) {
        const TechnologySpec& t = tech->spec;
        tdp = t.tdp_w;
        idle = tech->chip.power.static_w;
        sram = t.node.sram_j_per_bit;
        hbm_j_per_bit = t.hbm.j_per_bit;
        up = t.scale_up_serdes.j_per_bit;
        out = t.scale_out_serdes.j_per_bit;
    }
    en.tdp_w = system_number(*e, "energy", "tdp_w", tdp);
    en.idle_w = system_number(*e, "energy", "idle_w", idle);
    en.sram_j_per_bit = system_number(*e, "energy", "sram_j_per_bit", sram);
    en.hbm_j_per_bit = system_number(*e, "energy", "hbm_j_per_bit", hbm_j_per_bit);
    en.scale_up_j_per_bit = system_number(*e, "energy", "scale_up_j_per_bit", up);
    en.scale_out_j_per_bit = system_number(*e, "energy", "scale_out_j_per_bit", out);
    if (tech) {  // generated: the technology's figures replace any given
        en.tdp_w = *tdp;
        en.idle_w = *idle;
        en.sram_j_per_bit = sram;
        en.hbm_j_per_bit = *hbm_j_per_bit;
        en.scale_up_j_per_bit = *up;
        en.scale_out_j_per_bit = *out;
    }
    const double budget = dynamic_budget_w(s);
    if (!(budget > 0 && sustained_matrix_peak(s, Precision::bf16) > 0))
        fail(e->path_of("idle_w"), fmt::format("{:g} W", en.idle_w),
             fmt::format("expected idle plus SRAM, HBM and scale-up links at full bandwidth ({:.0f} W) below tdp_w ({:g} W), and a bf16 matrix peak",
                         en.tdp_w - budget, en.tdp_w));
    // The tensor power first where it is given (or generated): the active power takes what it
    // leaves of the TDP. Otherwise the active power's default share, and the tensors the rest.
    const bool given_j = !tech && e->has("tensor_j_per_flop");
    const bool given_active = !tech && e->has("active_w");
    if (tech) {
        const GeneratedChip& g = tech->chip;
        const double j = g.power.tensor_w / g.matrix_flop_per_s[static_cast<size_t>(Precision::bf16)];
        system_number(*e, "energy", "tensor_j_per_flop", j);
        en.tensor_j_per_flop = j;
    } else if (given_j) {
        en.tensor_j_per_flop = system_number(*e, "energy", "tensor_j_per_flop", std::nullopt);
    }
    const double active_def = tech || given_j ? std::max(0.0, budget - tensor_power_w(s)) : kDefaultActiveShare * budget;
    en.active_w = system_number(*e, "energy", "active_w", active_def);
    if (tech) en.active_w = active_def;
    if (!tech && !given_j) {
        const double calibrated = tdp_calibrated_j_per_flop(s);
        if (!(calibrated > 0))
            fail(e->path_of("active_w"), fmt::format("{:g} W", en.active_w),
                 fmt::format("expected below the {:.0f} W tdp_w leaves above idle, SRAM, HBM and scale-up links at full bandwidth", budget));
        en.tensor_j_per_flop = system_number(*e, "energy", "tensor_j_per_flop", calibrated);
    }
    // A calibrated figure follows the peaks, bandwidths and TDP it came from: not recorded, so
    // a study that varies them (sweep, sensitivity, attribute) calibrates again.
    if (!tech && !given_j) e->drop_recorded("tensor_j_per_flop");
    if (!tech && !given_active) e->drop_recorded("active_w");
    if (tech) {
        const std::pair<const char*, double> generated[] = {{"tdp_w", en.tdp_w},
                                                            {"idle_w", en.idle_w},
                                                            {"sram_j_per_bit", en.sram_j_per_bit},
                                                            {"hbm_j_per_bit", en.hbm_j_per_bit},
                                                            {"scale_up_j_per_bit", en.scale_up_j_per_bit},
                                                            {"scale_out_j_per_bit", en.scale_out_j_per_bit},
                                                            {"tensor_j_per_flop", en.tensor_j_per_flop},
                                                            {"active_w", en.active_w}};
        for (const auto& [k, v] : generated) e->set_recorded(k, v);
    }
    // The model charges a GPU at most its full-load power: that must fit the TDP.
    if (full_load_power_w(s) > en.tdp_w * (1.0 + 1e-9)) {
        const char* field = given_j ? "tensor_j_per_flop" : "active_w";
        const double given = given_j ? en.tensor_j_per_flop : en.active_w;
        fail(e->path_of(field), given_j ? fmt::format("{:g} J", given) : fmt::format("{:g} W", given),
             fmt::format("idle, active and tensor power with SRAM, HBM and scale-up at full bandwidth ({:.0f} W) must fit tdp_w ({:g} W): "
                         "active_w plus tensor_j_per_flop x the sustained bf16 peak at most {:.0f} W",
                         full_load_power_w(s), en.tdp_w, budget));
    }
    e->finish();
}

SystemSpec read_system(const Json& j, const std::string& path, Json* sink = nullptr) {
    ObjectReader r(j, path);
    r.record_into(sink);
    SystemSpec s;
    s.name = r.text("name", "custom");
    r.ignore("description");
    r.ignore("sources");
    // A technology description generates the accelerator and the link bandwidths: they replace
    // the figures (a preset's included), and resolve shows what was generated.
    const std::optional<TechnologyReading> tech = read_technology(r);
    std::optional<double> hbm_j_per_bit;  // the default energy per bit when the memory is HBM stacks
    {
        std::optional<ObjectReader> a = tech ? r.child_or_empty("accelerator") : r.child("accelerator");
        if (!a) fail(path + ".accelerator", "nothing", "required: an object with the GPU's peaks and memory (or system.technology)");
        s.accel.name = a->text("name", "custom");
        auto peaks = a->child("matrix_flop_per_s");
        if (!peaks && !tech) fail(a->path_of("matrix_flop_per_s"), "nothing", "required: {precision: FLOP/s, ...}");
        const auto names = precision_names();
        const NumericField& peak = system_field("accelerator.matrix_flop_per_s.PRECISION");
        for (const auto& name : names) {
            if (!peaks || !peaks->has(name.c_str())) continue;
            s.accel.matrix_flop_per_s[static_cast<size_t>(*parse_precision(name))] =
                peaks->number(name.c_str(), std::nullopt, peak.lo, peak.hi);
        }
        if (peaks) peaks->finish();
        const std::optional<double> none;
        s.accel.vector_flop_per_s = system_number(*a, "accelerator", "vector_flop_per_s", tech ? std::optional(0.0) : none,
                                              tech ? std::optional(0.0) : none);
        if (tech && a->has("hbm"))
            fail(a->path_of("hbm"), "HBM stacks beside system.technology", "the technology's own hbm {generation, stacks}");
        const std::optional<HbmMemory> hbm = read_hbm(*a);
        if (hbm) hbm_j_per_bit = hbm->j_per_bit;
        const bool derived = hbm || tech;
        s.accel.memory_bytes =
            system_number(*a, "accelerator", "memory_bytes", derived ? std::optional(0.0) : none, derived ? std::optional(0.0) : none);
        s.accel.memory_bw_bytes_per_s =
            system_number(*a, "accelerator", "memory_bw_bytes_per_s", derived ? std::optional(0.0) : none, derived ? std::optional(0.0) : none);
        s.accel.sram_bytes = system_number(*a, "accelerator", "sram_bytes", 0.0);
        s.accel.sram_bw_bytes_per_s = system_number(*a, "accelerator", "sram_bw_bytes_per_s", 0.0);
        if (hbm) {  // the stacks replace the figures (a preset's included); resolve shows the result
            s.accel.memory_bytes = hbm->bytes;
            s.accel.memory_bw_bytes_per_s = hbm->bw_bytes_per_s;
            a->drop_recorded("hbm");
        }
        if (tech) {
            const GeneratedChip& g = tech->chip;
            const TechnologySpec& t = tech->spec;
            s.accel.name = fmt::format("{}x{:g}mm2-{:g}W", t.dies, t.die_area_m2 * 1e6, t.tdp_w);
            Json recorded = Json::object();
            for (Precision p : kAllPrecisions) {
                const auto i = static_cast<size_t>(p);
                s.accel.matrix_flop_per_s[i] = g.matrix_flop_per_s[i] > 0 ? std::optional(g.matrix_flop_per_s[i]) : std::nullopt;
                if (g.matrix_flop_per_s[i] > 0) recorded[std::string(to_string(p))] = g.matrix_flop_per_s[i];
            }
            a->set_recorded("matrix_flop_per_s", recorded);
            a->set_recorded("name", s.accel.name);
            s.accel.vector_flop_per_s = g.vector_flop_per_s;
            s.accel.memory_bytes = g.memory_bytes;
            s.accel.memory_bw_bytes_per_s = g.memory_bw_bytes_per_s;
            s.accel.sram_bytes = g.sram_bytes;
            s.accel.sram_bw_bytes_per_s = g.sram_bw_bytes_per_s;
            a->set_recorded("vector_flop_per_s", s.accel.vector_flop_per_s);
            a->set_recorded("sram_bytes", s.accel.sram_bytes);
            a->set_recorded("sram_bw_bytes_per_s", s.accel.sram_bw_bytes_per_s);
            r.set_recorded("description", tech->summary);
        }
        if (derived) {
            a->set_recorded("memory_bytes", s.accel.memory_bytes);
            a->set_recorded("memory_bw_bytes_per_s", s.accel.memory_bw_bytes_per_s);
        }
        a->finish();
    }
    s.node_gpus = system_count(r, "", "node_gpus", 8);
    {
        auto up = r.child("scale_up");
        if (!up) fail(path + ".scale_up", "nothing", "required: {domain_gpus, bw_bytes_per_s, latency_s}");
        s.scale_up_domain = system_count(*up, "scale_up", "domain_gpus", s.node_gpus);
        s.gpus_used_per_domain = system_count(*up, "scale_up", "gpus_used_per_domain", s.scale_up_domain, s.scale_up_domain);
        s.scale_up = read_link(*up, "scale_up", tech ? std::optional(tech->chip.scale_up_bw_bytes_per_s) : std::nullopt);
        up->finish();
        auto out = r.child("scale_out");
        if (!out) fail(path + ".scale_out", "nothing", "required: {bw_bytes_per_s, latency_s}");
        s.scale_out = read_link(*out, "scale_out", tech ? std::optional(tech->chip.scale_out_bw_bytes_per_s) : std::nullopt);
        out->finish();
    }
    if (auto h = r.child("host_memory")) {
        s.host_memory.capacity_bytes = system_number(*h, "host_memory", "capacity_bytes", std::nullopt);
        s.host_memory.bw_bytes_per_s = system_number(*h, "host_memory", "bw_bytes_per_s", std::nullopt);
        s.host_memory.memory_bw_bytes_per_s = system_number(*h, "host_memory", "memory_bw_bytes_per_s", std::nullopt);
        h->finish();
    }
    {  // absent: the defaults, recorded so that `resolve` shows them
        std::optional<ObjectReader> e = r.child_or_empty("efficiency");
        Efficiency& f = s.eff;
        for (const EfficiencyField& field : efficiency_fields()) {
            double def = f.*field.member;
            if (field.default_from)
                for (const EfficiencyField& earlier : efficiency_fields())
                    if (std::string_view(earlier.key) == field.default_from) def = f.*earlier.member;
            f.*field.member = e->number(field.key, def, field.lo, field.hi);
        }
        const auto units = decode_attention_choices();
        f.decode_attention = e->choice("decode_attention", units[0], {units[0], units[1]}) == units[1] ? DecodeAttentionUnits::cuda_core
                                                                                                      : DecodeAttentionUnits::tensor_core;
        e->finish();
    }
    s.scale_up.efficiency = s.eff.scale_up;
    s.scale_out.efficiency = s.eff.scale_out;
    read_energy(r, s, tech, hbm_j_per_bit);
    s.price_per_gpu_hour = system_number(r, "", "price_per_gpu_hour", 0.0);
    r.finish();
    return s;
}

// A list field's names as bits, each by its place in `all` (ObjectReader::choices refuses an
// unknown or repeated name); all of them when the field is left out.
unsigned chosen_bits(ObjectReader& r, const char* key, const std::vector<std::string>& all) {
    unsigned bits = 0;
    for (const std::string& name : r.choices(key, all, all)) bits |= 1u << (std::find(all.begin(), all.end(), name) - all.begin());
    return bits;
}

ParallelConfig read_parallel(ObjectReader r, std::set<std::string>& given) {
    static const char* const keys[] = {"tp", "tp_rows", "pp", "dp", "cp", "ep", "etp", "vp", "sequence_parallel", "microbatch", "zero",
                                       "recompute", "recompute_layers", "offload", "first_stage_layers", "last_stage_layers", "order", "cp_kind",
                                       "pipeline_layout"};
    for (const char* k : keys)
        if (r.has(k)) given.insert(k);
    ParallelConfig p;
    // The degrees, micro-batch, ZeRO stage and stage layer counts; etp is recorded only as given
    // (its default follows tp).
    read_spec_fields(r, p, parallel_fields());
    // SUMMA keeps activations sharded between GEMMs: sequence parallelism is implied.
    p.sequence_parallel = r.boolean("sequence_parallel", p.summa());
    if (p.summa() && !p.sequence_parallel)
        fail(r.path_of("sequence_parallel"), "false",
             fmt::format("true or left out: SUMMA (tp_rows {}) keeps activations sharded over the whole grid", p.tp_rows));
    const std::string rc = r.choice("recompute", "none", {"none", "selective", "full"});
    p.recompute = rc == "full" ? Recompute::full : rc == "selective" ? Recompute::selective : Recompute::none;
    if (r.has("recompute_modules")) {
        // Megatron-Core's recompute_modules: what selective recompute re-runs (the search's
        // selective mode too, when the mode is searched).
        p.recompute_modules = static_cast<ModuleSet>(
            chosen_bits(r, "recompute_modules", std::vector<std::string>(kRecomputeModuleNames.begin(), kRecomputeModuleNames.end())));
        // Modules without a mode mean selective, as Megatron-Bridge's recompute override sets it
        // (the search still searches the mode: "recompute" is not among the given fields). Beside
        // none or full they are kept and not read, as Megatron-Core reads them only under
        // selective: `--set parallel.recompute=full` on a scenario that names modules works.
        if (!r.has("recompute")) p.recompute = Recompute::selective;
    }
    if (p.recompute_layers > 0 && p.recompute != Recompute::full)
        fail(r.path_of("recompute_layers"), std::to_string(p.recompute_layers),
             "0 or left out unless parallel.recompute is \"full\": it counts the layers full recompute re-runs per chunk");
    const std::string off = r.choice("offload", "none", {"none", "optimizer", "activations", "optimizer+activations"});
    for (Offload o : {Offload::optimizer, Offload::activations, Offload::optimizer_and_activations})
        if (off == to_string(o)) p.offload = o;
    // "auto" (the default) is resolved against the model in resolve_pipeline_split; a named split
    // is held by the search.
    const std::string split =
        r.choice("pipeline_split", "auto", {"auto", "even", "embedding_loss", "embedding", "loss", "uniform", "fill"});
    for (PipelineSplit ps : {PipelineSplit::even, PipelineSplit::embedding_loss, PipelineSplit::embedding, PipelineSplit::loss,
                             PipelineSplit::uniform, PipelineSplit::fill})
        if (split == to_string(ps)) {
            p.split = ps;
            given.insert("pipeline_split");
        }
    if (r.has("pipeline_layout")) {
        const std::string text = r.text("pipeline_layout", std::nullopt);
        ParsedLayout parsed = parse_pipeline_layout(text);
        if (!parsed.problem.empty())
            fail(r.path_of("pipeline_layout"), fmt::format("\"{}\"", text.substr(0, 80)), parsed.problem);
        p.layout = std::move(parsed.chunks);
        p.layout_mtp = parsed.mtp;
    }
    const std::string order = r.choice("order", "tp-cp-dp-pp", {"tp-cp-dp-pp", "tp-dp-cp-pp", "cp-tp-dp-pp", "cp-dp-tp-pp",
                                                                 "dp-tp-cp-pp", "dp-cp-tp-pp"});
    for (RankOrder o : kRankOrders)
        if (order == to_string(o)) p.order = o;
    const std::string cp_kind = r.choice("cp_kind", "ring", {"ring", "all_gather", "ulysses"});
    for (CpKind k : kCpKinds)
        if (cp_kind == to_string(k)) p.cp_kind = k;
    r.finish();
    return p;
}

// A disaggregated deployment's role: `workers` instances of one layout (the `parallel` fields).
RolePool read_role(ObjectReader r, const ModelSpec& m) {
    RolePool pool;
    pool.workers = r.integer("workers", 1, 1, int64_t{1} << 20);
    std::set<std::string> given;
    pool.layout = read_parallel(r, given);
    if (!given.count("pipeline_split")) pool.layout.split = default_split(m.layers, pool.layout);
    return pool;
}

DisaggDeployment read_disaggregated(ObjectReader r, const ModelSpec& m) {
    DisaggDeployment d;
    for (auto [key, pool] : {std::pair{"prefill", &d.prefill}, std::pair{"decode", &d.decode}}) {
        std::optional<ObjectReader> role = r.child(key);
        if (!role) fail(r.path_of(key), "nothing", "required: {\"workers\": N, \"tp\": ..., \"dp\": ..., \"ep\": ...}");
        *pool = read_role(*role, m);
    }
    // The benchmark steps every engine (a worker's dp ranks): bounded so it stays seconds.
    constexpr int64_t kMaxEngines = 4096;
    const double engines = static_cast<double>(d.prefill.workers) * static_cast<double>(d.prefill.layout.dp) +
                           static_cast<double>(d.decode.workers) * static_cast<double>(d.decode.layout.dp);
    if (engines > static_cast<double>(kMaxEngines))
        fail(r.path_of("prefill").substr(0, r.path_of("prefill").rfind('.')), fmt::format("{:.0f} engines", engines),
             fmt::format("at most {} engines (workers x dp, both roles): the benchmark steps each", kMaxEngines));
    r.finish();
    return d;
}

// Recompute modules Megatron-Core refuses beside an overlap: the whole MoE layer with the A2A
// overlap (its backward interleaves with a paired micro-batch's forward), the shared experts with
// their overlap (they hide the dispatch). Megatron-Bridge docs/training/activation-recomputation.md.
void check_recompute_modules(const Scenario& s) {
    if (s.parallel.recompute != Recompute::selective) return;  // the modules are not read
    const ModuleSet mods = s.parallel.recompute_modules;
    if ((mods & module_bit(RecomputeModule::moe)) != 0 && s.model.moe.enabled() && s.training.moe_a2a_overlap)
        fail("parallel.recompute_modules", "\"moe\" beside training.moe_a2a_overlap true",
             "modules without \"moe\", or training.moe_a2a_overlap false: the A2A overlap cannot recompute the MoE layer whole");
    if ((mods & module_bit(RecomputeModule::shared_experts)) != 0 && s.model.moe.shared_experts > 0 &&
        s.training.moe_shared_expert_overlap)
        fail("parallel.recompute_modules", "\"shared_experts\" beside training.moe_shared_expert_overlap true",
             "modules without \"shared_experts\", or training.moe_shared_expert_overlap false: overlapped shared experts are not recomputed");
}

TrainingSpec read_training(ObjectReader r, const ParallelConfig& p, int64_t seq_len) {
    TrainingSpec t;
    if (r.has("batch_tokens")) {
        // The batch as papers state it (Llama 3: 4M, then 8M and 16M tokens), in whole sequences.
        if (r.has("global_batch"))
            fail(r.path_of("batch_tokens"), "a value beside training.global_batch", "one of the two: tokens per step or sequences per step");
        const int64_t tokens = r.integer("batch_tokens", std::nullopt, 1, int64_t{1} << 50);
        if (tokens % seq_len != 0 || tokens / seq_len > (int64_t{1} << 30))
            fail(r.path_of("batch_tokens"), std::to_string(tokens),
                 fmt::format("a multiple of model.seq_len ({}), at most 2^30 sequences: a step holds whole sequences", seq_len));
        t.global_batch = tokens / seq_len;
        r.drop_recorded("batch_tokens");  // resolve shows the sequences, so its output reads back
        r.set_recorded("global_batch", t.global_batch);
    } else {
        t.global_batch = r.integer("global_batch", p.dp * p.microbatch, 1, int64_t{1} << 30);
    }
    t.precision = read_precision(r, "precision", Precision::bf16);
    t.grad_precision = *parse_precision(r.choice("grad_precision", "fp32", {"fp32", "bf16", "fp16"}));
    t.fp8_recipe = *parse_fp8_recipe(r.choice("fp8_recipe", "delayed", {"delayed", "current", "mxfp8"}));
    t.dp_overlap = r.boolean("dp_overlap", t.dp_overlap);
    read_spec_fields(r, t, training_fields());
    t.overlap_p2p_comm = r.boolean("overlap_p2p_comm", t.overlap_p2p_comm);
    t.grad_sync_per_chunk = r.boolean("grad_sync_per_chunk", t.grad_sync_per_chunk);
    t.moe_shared_expert_overlap = r.boolean("moe_shared_expert_overlap", t.moe_shared_expert_overlap);
    t.moe_a2a_overlap = r.boolean("moe_a2a_overlap", t.moe_a2a_overlap);
    t.moe_dispatcher = r.choice("moe_dispatcher", "alltoall", {"alltoall", "flex"}) == "flex" ? MoeDispatcher::flex : MoeDispatcher::alltoall;
    const std::string gr = r.choice("grad_reduce", "auto", {"auto", "per_step", "per_microbatch"});
    t.grad_reduce = gr == "per_step" ? GradReduce::per_step : gr == "per_microbatch" ? GradReduce::per_microbatch : GradReduce::automatic;
    if (r.choice("method", "full", {"full", "lora"}) == "lora") {
        t.lora.rank = r.integer("lora_rank", std::nullopt, 1, 65536);
        t.lora.targets = static_cast<uint8_t>(chosen_bits(r, "lora_targets", {"linear_qkv", "linear_proj", "linear_fc1", "linear_fc2"}));
    } else {
        for (const char* k : {"lora_rank", "lora_targets"})
            if (r.has(k)) fail(r.path_of(k), "a value", "only with training.method \"lora\"");
    }
    r.finish();
    return t;
}

InferenceSpec read_inference(ObjectReader r) {
    InferenceSpec s;
    read_spec_fields(r, s, inference_fields());
    s.precision = read_precision(r, "precision", s.precision);
    s.weight_precision = read_precision(r, "weight_precision", s.precision);
    // An 8- or 4-bit deployment keeps an fp8 cache (TensorRT-LLM's FP8 KV cache, which its
    // published fp8/fp4 configurations use); otherwise the cache holds activations as computed.
    const bool low_bit = bytes_per_element(s.precision) <= 1.0;
    s.kv_precision = read_precision(r, "kv_precision", low_bit ? Precision::fp8 : activation_precision(s.precision));
    s.kv_reservation = r.choice("kv_reservation", "full", {"full", "average"}) == "average" ? KvReservation::average : KvReservation::full;
    s.prefill_schedule =
        r.choice("prefill_schedule", "mixed", {"mixed", "separate"}) == "separate" ? PrefillSchedule::separate : PrefillSchedule::mixed;
    s.window_cache = r.choice("window_cache", "window", {"window", "sequence"}) == "sequence" ? WindowCache::sequence : WindowCache::window;
    s.activation_quantisation = r.choice("activation_quantisation", "separate", {"separate", "fused"}) == "fused"
                                    ? ActivationQuantisation::fused
                                    : ActivationQuantisation::separate;
    r.ignore("engine");  // its profile's fields are already in the section (resolve_engine)
    r.finish();
    return s;
}

// `auto` becomes default_split; explicit first/last stage layers are Megatron's uneven split,
// which Megatron refuses to combine with the embedding/loss accounting (and so do we).
void resolve_pipeline_split(Scenario& s) {
    ParallelConfig& p = s.parallel;
    if (!p.layout.empty()) {
        const std::string text = fmt::format("\"{}\"", layout_text(p.layout, p.layout_mtp).substr(0, 80));
        if (s.parallel_given.count("pipeline_split") || p.first_stage_layers > 0 || p.last_stage_layers > 0)
            fail("parallel.pipeline_layout", text,
                 "alone: it says every stage's layers, so parallel.pipeline_split, first_stage_layers and last_stage_layers "
                 "stay out");
        // Megatron-Core's layout places every MTP module, and only those the model trains.
        if (p.layout_mtp != s.model.mtp_layers)
            fail("parallel.pipeline_layout", text,
                 fmt::format("{} multi-token-prediction layer{} (m) in the last stage, as model.mtp_layers says", s.model.mtp_layers,
                             s.model.mtp_layers == 1 ? "" : "s"));
        p.split = PipelineSplit::layout;
    } else if (p.first_stage_layers > 0 || p.last_stage_layers > 0) {
        if (s.parallel_given.count("pipeline_split"))
            fail("parallel.pipeline_split", fmt::format("\"{}\"", to_string(p.split)),
                 "\"auto\" (or left out) when parallel.first_stage_layers or last_stage_layers is set");
        p.split = PipelineSplit::first_last;
    } else if (!s.parallel_given.count("pipeline_split")) {
        p.split = default_split(s.model.layers, p);
    }
}

// The first rule a layout breaks (layout/rules.hpp), as the scenario's error.
void report_first(const std::vector<InputError>& broken) {
    if (!broken.empty()) throw InputException(broken.front());
}

}  // namespace

Expected<Json> parse_scenario_text(std::string_view text, const std::string& origin) {
    return capture([&] {
        Json j = parse_json(text, origin);
        if (!j.is_object()) fail(origin, show(j), "a scenario is a JSON object");
        return j;
    });
}

Expected<Json> read_scenario_file(const std::string& path) {
    Expected<std::string> text = read_bounded({path, "SCENARIO", "a JSON file"});
    if (!text) return text.error();
    return parse_scenario_text(text.value(), path == "-" ? "stdin" : printable_path(path));
}

Json override_value(const std::string& text) {
    Json v = Json::parse(text, nullptr, false);
    if (v.is_discarded() || v.is_object() || v.is_array()) v = text;  // a bare word is a string
    return v;
}

namespace {

// Whether `s` is UTF-8 (what JSON text must be: a result naming a field's value is dumped later).
bool is_utf8(const std::string& s) {
    try {
        (void)Json(s).dump();
        return true;
    } catch (const Json::type_error&) {
        return false;
    }
}

}  // namespace

Expected<Json> apply_overrides(Json doc, const std::vector<std::string>& sets) {
    return capture([&] {
        for (const std::string& s : sets) {
            const auto eq = s.find('=');
            if (eq == std::string::npos || eq == 0) fail("--set", quote_input(s), "expected PATH=VALUE, e.g. parallel.tp=8");
            if (!is_utf8(s)) fail("--set", quote_input(s), "UTF-8 text (a scenario is JSON, whose text is UTF-8)");
            const std::string path = s.substr(0, eq);
            const std::string value = s.substr(eq + 1);
            const Json v = override_value(value);
            Json* node = &doc;
            std::string walked;
            size_t start = 0;
            int depth = 0;
            while (true) {
                const auto dot = path.find('.', start);
                const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
                if (key.empty()) fail("--set", quote_input(path), "a dotted path such as parallel.tp");
                walked += (walked.empty() ? "" : ".") + key;
                if (++depth > kMaxJsonDepth)
                    fail("--set", quote_input(path), fmt::format("a path of at most {} fields", kMaxJsonDepth));
                if (dot == std::string::npos) {
                    (*node)[key] = v;
                    break;
                }
                Json& next = (*node)[key];
                if (next.is_null()) next = Json::object();
                if (!next.is_object()) fail(printable(walked), show(next), "is not an object; cannot set " + printable(path));
                node = &next;
                start = dot + 1;
            }
        }
        return doc;
    });
}

Expected<Scenario> build_scenario(const Json& input, Purpose purpose) {
    return capture([&] {
        // A serving engine's profile fills the inference fields the scenario leaves out.
        Json engined;
        const bool has_engine = input.is_object() && input.contains("inference") && input["inference"].is_object() &&
                                input["inference"].contains("engine");
        if (has_engine) {
            engined = input;
            engined["inference"] = resolve_engine(input["inference"]);
        }
        const Json& doc = has_engine ? engined : input;
        Scenario s;
        ObjectReader root(doc, "");
        root.ignore("description");
        root.ignore("name");
        const Json* model = doc.contains("model") ? &doc["model"] : nullptr;
        const Json* system = doc.contains("system") ? &doc["system"] : nullptr;
        root.ignore("model");
        root.ignore("system");
        if (!model) fail("model", "nothing", "required: {\"preset\": NAME} or the model's dimensions");
        if (!system) fail("system", "nothing", "required: {\"preset\": NAME} or the system's figures");
        Json resolved = Json::object();
        resolved["model"] = resolve_model(*model);
        resolved["system"] = resolve_section(*system, embedded_system_presets(), "system");
        root.record_into(&s.full);
        s.model = read_model(resolved["model"], "model", &s.full["model"]);
        s.system = read_system(resolved["system"], "system", &s.full["system"]);
        s.parallel = read_parallel(root.child_or_empty("parallel"), s.parallel_given);
        s.training = read_training(root.child_or_empty("training"), s.parallel, s.model.seq_len);
        check_recompute_modules(s);
        s.inference = read_inference(root.child_or_empty("inference"));
        if (std::optional<ObjectReader> d = root.child("disaggregated")) s.disaggregated = read_disaggregated(*d, s.model);
        root.finish();
        for (const char* k : {"parallel", "training", "inference", "disaggregated"})
            if (doc.contains(k)) resolved[k] = doc[k];
        s.resolved = std::move(resolved);
        resolve_pipeline_split(s);
        s.modified = preset_changes(doc);
        if (purpose == Purpose::train) report_first(check_layout(s.model, s.system, s.training, s.parallel));
        if (purpose == Purpose::infer) report_first(check_layout(s.model, s.system, s.inference, s.parallel));
        if (purpose == Purpose::infer && s.disaggregated)
            for (auto [role, pool] : {std::pair{"prefill", &s.disaggregated->prefill}, std::pair{"decode", &s.disaggregated->decode}}) {
                // The role's own fields named, not the scenario's `parallel`.
                std::vector<InputError> broken = check_layout(s.model, s.system, s.inference, pool->layout);
                for (InputError& e : broken)
                    if (e.path.rfind("parallel.", 0) == 0) e.path = fmt::format("disaggregated.{}.{}", role, e.path.substr(9));
                report_first(broken);
            }
        if (purpose == Purpose::search) {
            report_first(check_trainable(s.model, s.system, s.training, s.parallel.cp));
            if (s.parallel_given.count("recompute_layers"))
                fail("parallel.recompute_layers", std::to_string(s.parallel.recompute_layers),
                     "not searched: the search re-runs every layer under full recompute; give it to `train`");
            if (s.parallel_given.count("etp"))
                fail("parallel.etp", std::to_string(s.parallel.etp), "not searched: the search keeps experts tensor-parallel (etp = tp); give it to `train`");
        }
        return s;
    });
}

std::vector<std::string> model_preset_names() { return names_of(embedded_model_presets()); }
std::vector<std::string> system_preset_names() { return names_of(embedded_system_presets()); }
std::vector<std::string> engine_preset_names() { return names_of(embedded_engine_presets()); }
Expected<Json> engine_preset_json(const std::string& name) {
    return capture([&] { return preset_json(embedded_engine_presets(), name, "inference.engine"); });
}
Expected<Json> model_preset_json(const std::string& name) {
    return capture([&] { return preset_json(embedded_model_presets(), name, "model.preset"); });
}
Expected<Json> system_preset_json(const std::string& name) {
    return capture([&] { return preset_json(embedded_system_presets(), name, "system.preset"); });
}
Expected<ModelSpec> parse_model(const Json& j, const std::string& path) {
    return capture([&] { return read_model(j, path); });
}
Expected<SystemSpec> parse_system(const Json& j, const std::string& path) {
    return capture([&] { return read_system(j, path); });
}

}  // namespace sm
