// Megatron-Core's selective-recompute modules (parallel.recompute_modules): which ops each re-runs
// and which saved tensors each drops, by hand on a block of round numbers and by closed form on
// GPT-3's, Mixtral's and DeepSeek-V3's layers; the bad inputs; the launch settings.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "io/launch_settings.hpp"
#include "model/ops.hpp"
#include "parallel/pipeline_split.hpp"
#include "test_helpers.hpp"
#include "training/block_cost.hpp"
#include "training/step.hpp"

namespace sm {
namespace {

constexpr double ms = 1e-3;
constexpr ModuleSet kLayernorm = module_bit(RecomputeModule::layernorm);
constexpr ModuleSet kMoeAct = module_bit(RecomputeModule::moe_act);
constexpr ModuleSet kMoe = module_bit(RecomputeModule::moe);

// An element-wise op of `flop` vector FLOP and no bytes: flop / 1e15 s forward on round_system().
Op vector_op(double flop, double saved) {
    Op op;
    op.kind = OpKind::elementwise;
    op.vector_flop = flop;
    op.saved_bytes = saved;
    return op;
}

// A norm (1 ms forward, saves its input, 100 B), the GEMM reading its output (2 ms, saves that
// output, 400 B), an expert activation (3 ms, saves its input, 50 B) and the down projection
// reading its output (4 ms, 200 B); a forward dispatch of 1e8 B over ep 2 inside the MoE module
// (0.5 ms at 100 GB/s: each of the 2 ranks sends the other half its buffer) and its backward twin
// outside it.
LayerOps hand_layer() {
    LayerOps l;
    Op norm = vector_op(1e12, 100);
    norm.modules = kLayernorm;
    Op reader = vector_op(2e12, 400);
    reader.frees = kLayernorm;
    Op act = vector_op(3e12, 50);
    act.modules = kMoeAct;
    Op down = vector_op(4e12, 200);
    down.frees = kMoeAct;
    l.ops = {norm, reader, act, down};
    l.input_bytes = 100;
    CommOp dispatch{"dispatch", Collective::all_to_all, CommGroup::ep, Pass::fwd, 1e8, 1, false};
    dispatch.modules = kMoe;
    l.comms.push_back(dispatch);
    l.comms.push_back({"dispatch_grad", Collective::all_to_all, CommGroup::ep, Pass::bwd, 1e8, 1, false});
    return l;
}

CommSpans ep_spans() {
    CommSpans c;
    c.span[idx(CommGroup::ep)] = {2, 2, 1};
    return c;
}

BlockCost hand_cost(RecomputePlan plan) {
    return cost_block(hand_layer(), testing::round_system(), CostContext{}, ep_spans(), plan, 0);
}

TEST(RecomputeModules, EachModuleRerunsItsOpsAndDropsWhatTheyFree) {
    const BlockCost none = hand_cost(Recompute::none);
    EXPECT_DOUBLE_EQ(none.saved_bytes, 750);
    EXPECT_EQ(none.recompute_s, 0.0);
    // The default modules (the attention core) free nothing here and re-run nothing.
    const BlockCost core = hand_cost(Recompute::selective);
    EXPECT_EQ(core.recompute_s, 0.0);
    EXPECT_DOUBLE_EQ(core.activation_bytes(Recompute::selective), 750);
    // layernorm: the norm again (1 ms), the reader's copy of its output dropped.
    const BlockCost ln = hand_cost({Recompute::selective, kLayernorm});
    EXPECT_NEAR(ln.recompute_s, 1 * ms, 1e-15);
    EXPECT_DOUBLE_EQ(ln.selective_freed_bytes, 400);
    EXPECT_DOUBLE_EQ(ln.activation_bytes(Recompute::selective), 350);
    // layernorm + moe_act: both ops again (4 ms), both outputs dropped.
    const BlockCost both = hand_cost({Recompute::selective, static_cast<ModuleSet>(kLayernorm | kMoeAct)});
    EXPECT_NEAR(both.recompute_s, 4 * ms, 1e-15);
    EXPECT_DOUBLE_EQ(both.activation_bytes(Recompute::selective), 150);
    // moe: its forward dispatch runs again (0.5 ms more on the wire, none of it hidden).
    const BlockCost moe = hand_cost({Recompute::selective, kMoe});
    EXPECT_NEAR(none.comm_link_s[idx(CommGroup::ep)], 1 * ms, 1e-12);
    EXPECT_NEAR(moe.comm_link_s[idx(CommGroup::ep)], 1.5 * ms, 1e-12);
    EXPECT_NEAR(moe.comm_exposed_s[idx(CommGroup::ep)], 1.5 * ms, 1e-12);
    EXPECT_NEAR(ln.comm_link_s[idx(CommGroup::ep)], 1 * ms, 1e-12);
    // What selective would drop follows the plan's modules whatever its mode; none re-runs nothing.
    const BlockCost idle = hand_cost({Recompute::none, kLayernorm});
    EXPECT_EQ(idle.recompute_s, 0.0);
    EXPECT_DOUBLE_EQ(idle.activation_bytes(Recompute::selective), 350);
    // Full re-runs every op (10 ms) and every forward collective, whatever the modules.
    const BlockCost full = hand_cost({Recompute::full, kLayernorm});
    EXPECT_NEAR(full.recompute_s, 10 * ms, 1e-15);
    EXPECT_NEAR(full.comm_link_s[idx(CommGroup::ep)], 1.5 * ms, 1e-12);
    EXPECT_DOUBLE_EQ(full.activation_bytes(Recompute::full), 100);
}

// Megatron's block method: full recompute of half the layers re-runs half of each op (5 ms of
// 10), half of the forward dispatch (0.25 ms more on the wire), and the other half of the layers
// keep all they saved: 100 + 0.5 x (750 - 100) bytes per layer.
TEST(RecomputeModules, PartialFullRecomputeIsItsShareOfFull) {
    const BlockCost half = hand_cost({Recompute::full, kDefaultRecomputeModules, 0.5});
    EXPECT_NEAR(half.recompute_s, 5 * ms, 1e-15);
    EXPECT_NEAR(half.comm_link_s[idx(CommGroup::ep)], 1.25 * ms, 1e-12);
    EXPECT_DOUBLE_EQ(half.activation_bytes(Recompute::full), 425);
    EXPECT_DOUBLE_EQ(hand_cost(Recompute::full).activation_bytes(Recompute::full), 100);
}

// The share of the pipeline's layers the first N of each chunk are: 32 layers over pp 4 x vp 2
// are chunks of 4, so N = 1 re-runs a quarter, 3 three quarters, 5 (more than a chunk) all; a
// first/last split of 30 over pp 4 (2, 12, 12, 4) re-runs 2 + 3 + 3 + 3 = 11 of 30 at N = 3.
TEST(RecomputeModules, RecomputeLayersShareByClosedForm) {
    ParallelConfig p;
    p.pp = 4;
    p.vp = 2;
    p.recompute = Recompute::full;
    for (const auto& [n, share] : {std::pair{0, 1.0}, {1, 0.25}, {3, 0.75}, {5, 1.0}}) {
        p.recompute_layers = n;
        EXPECT_DOUBLE_EQ(recompute_plan(p, 32).full_share, share) << n;
    }
    p.vp = 1;
    p.split = PipelineSplit::first_last;
    p.first_stage_layers = 2;
    p.last_stage_layers = 4;
    p.recompute_layers = 3;
    EXPECT_DOUBLE_EQ(recompute_plan(p, 30).full_share, 11.0 / 30.0);
    // Under selective the layer count is not read.
    p.recompute = Recompute::selective;
    EXPECT_DOUBLE_EQ(recompute_plan(p, 30).full_share, 1.0);
}

// Re-running more layers per chunk never shortens the step nor grows the memory; as many as a
// chunk holds is full recompute. Llama 3 8B (32 layers) on pp 4 x vp 2: chunks of 4.
TEST(RecomputeModules, MoreRecomputedLayersNeverFasterNorBigger) {
    auto s = testing::load(R"({"model": {"preset": "llama3-8b"}, "system": {"preset": "dgx-h100"},
                               "parallel": {"tp": 2, "pp": 4, "vp": 2, "dp": 1, "recompute": "full"}, "training": {"global_batch": 16}})",
                           {});
    ASSERT_TRUE(s.ok()) << s.error().message();
    const TrainContext c{s.value().model, s.value().system, s.value().training};
    ParallelConfig p = s.value().parallel;
    const TrainResult full = evaluate_training(c, p);
    p.recompute = Recompute::none;
    const TrainResult none = evaluate_training(c, p);
    p.recompute = Recompute::full;
    double step = none.step_time_s, peak = none.memory.peak_bytes_per_gpu * (1 + 1e-12);
    for (int64_t n = 1; n <= 4; ++n) {
        p.recompute_layers = n;
        const TrainResult r = evaluate_training(c, p);
        EXPECT_GE(r.step_time_s, step * (1 - 1e-12)) << n;
        EXPECT_LE(r.memory.peak_bytes_per_gpu, peak) << n;
        step = r.step_time_s;
        peak = r.memory.peak_bytes_per_gpu * (1 + 1e-12);
    }
    EXPECT_DOUBLE_EQ(step, full.step_time_s);
    EXPECT_DOUBLE_EQ(peak / (1 + 1e-12), full.memory.peak_bytes_per_gpu);
    p.recompute_layers = 2;  // half the layers: half full's recompute
    EXPECT_NEAR(evaluate_training(c, p).breakdown.recompute_s, 0.5 * full.breakdown.recompute_s, 1e-12);
}

const auto shape = testing::layer_shape;

double freed(const LayerOps& ops, ModuleSet modules) {
    return cost_block_compute(ops, testing::round_system(), CostContext{}, {Recompute::selective, modules}).cost.selective_freed_bytes;
}

std::set<std::string> rerun_by(const LayerOps& ops, RecomputeModule m) {
    std::set<std::string> names;
    for (const Op& op : ops.ops)
        if ((op.modules & module_bit(m)) != 0) names.emplace(op.name);
    return names;
}

// GPT-3's layer, tp 8 with sequence parallelism, bf16 (Korthikanti et al. 2022's terms, per
// s b h / t): layernorm drops the two norms' outputs the QKV and FC1 GEMMs saved (2 + 2); mlp
// keeps its input and drops the GeLU's input and output (8 + 8); both, all of them (20).
TEST(RecomputeModules, DenseLayerByClosedForm) {
    const ModelSpec m = testing::model_preset("gpt3-175b");
    const double s = 2048, b = 1, h = 12288, t = 8;
    const LayerOps l = layer_ops(m, shape(b, s, 8, true), LayerKind::dense);
    EXPECT_DOUBLE_EQ(freed(l, kLayernorm), 4 * s * b * h / t);
    EXPECT_DOUBLE_EQ(freed(l, module_bit(RecomputeModule::mlp)), 16 * s * b * h / t);
    EXPECT_DOUBLE_EQ(freed(l, kLayernorm | module_bit(RecomputeModule::mlp)), 20 * s * b * h / t);
    // Modules the layer lacks free nothing.
    EXPECT_EQ(freed(l, kMoeAct | kMoe | module_bit(RecomputeModule::mla_up_proj) | module_bit(RecomputeModule::shared_experts)), 0.0);
    EXPECT_EQ(rerun_by(l, RecomputeModule::layernorm), (std::set<std::string>{"attn_norm", "ffn_norm"}));
    EXPECT_EQ(rerun_by(l, RecomputeModule::mlp), (std::set<std::string>{"ffn_up", "ffn_act", "ffn_down"}));
    // The MLP's sequence-parallel gather and reduce-scatter run again with it; attention's do not.
    std::multiset<std::string> mlp_comms, other;
    for (const CommOp& c : l.comms) ((c.modules & module_bit(RecomputeModule::mlp)) != 0 ? mlp_comms : other).emplace(c.name);
    const std::multiset<std::string> sp{"sp_all_gather", "sp_reduce_scatter_grad", "sp_regather_input", "sp_reduce_scatter",
                                        "sp_all_gather_grad"};
    EXPECT_EQ(mlp_comms, sp);
    EXPECT_EQ(other, sp);
    // Re-running the two norms: each reads and writes s b h / t bf16 elements at 1 TB/s.
    const BlockCompute c = cost_block_compute(l, testing::round_system(), CostContext{}, {Recompute::selective, kLayernorm});
    EXPECT_NEAR(c.cost.recompute_s, 2 * (2 * 2 * s * b * h / t) / 1e12, 1e-12);
}

// DeepSeek-V3's MLA on one GPU, s = 4096: mla_up_proj keeps the latents and drops the two
// up-projections' inputs (q_lora 1536, kv_lora 512 wide) and the core's Q, K (192 wide) and V
// (128) for 128 heads, bf16.
TEST(RecomputeModules, MlaUpProjectionByClosedForm) {
    const ModelSpec m = testing::model_preset("deepseek-v3");
    const double T = 4096;
    const LayerOps l = layer_ops(m, shape(1, T, 1, false), LayerKind::moe);
    EXPECT_DOUBLE_EQ(freed(l, module_bit(RecomputeModule::mla_up_proj)), 2 * T * (1536 + 512 + 128 * (192 + 192 + 128)));
    EXPECT_EQ(rerun_by(l, RecomputeModule::mla_up_proj),
              (std::set<std::string>{"kv_norm", "q_norm", "q_up_proj", "kv_up_proj", "rope"}));
    // The input norm's output is what the KV down-projection saved (the query's shares it).
    EXPECT_DOUBLE_EQ(freed(l, kLayernorm), 2 * (2 * T * 7168));
}

// Mixtral's MoE layer on one GPU, s = 4096, top 2 of 8 experts 14,336 wide, SwiGLU, h 4096:
// moe_act drops the activation's output the down projection saved (T x 2 x 14336); moe keeps
// the router's input and drops the rest: the experts' gathered input and the unpermute's copies
// (T x 2 x 4096 each), the activation's two halves and its output (3 x T x 2 x 14336).
TEST(RecomputeModules, MoeLayerByClosedForm) {
    const ModelSpec m = testing::model_preset("mixtral-8x7b");
    const double T = 4096, copies = T * 2;
    const LayerOps l = layer_ops(m, shape(1, T, 1, false), LayerKind::moe);
    EXPECT_DOUBLE_EQ(freed(l, kMoeAct), 2 * copies * 14336);
    EXPECT_EQ(rerun_by(l, RecomputeModule::moe_act), (std::set<std::string>{"expert_act"}));
    EXPECT_DOUBLE_EQ(freed(l, kMoe), 2 * (2 * copies * 4096 + 3 * copies * 14336));
    EXPECT_EQ(freed(l, module_bit(RecomputeModule::mlp)), 0.0);  // "no effect on pure-MoE layers"
    // Expert parallel: the dispatch and combine run again under moe, forward only (x 3/2 on the wire).
    LayerShape ep2 = shape(1, T, 1, false);
    ep2.ep = 2;
    const LayerOps e = layer_ops(m, ep2, LayerKind::moe);
    const auto link = [&](RecomputePlan plan) {
        return cost_block(e, testing::round_system(), CostContext{}, ep_spans(), plan, 0).comm_link_s[idx(CommGroup::ep)];
    };
    EXPECT_NEAR(link({Recompute::selective, kMoe}), 1.5 * link(Recompute::none), 1e-12);
    EXPECT_DOUBLE_EQ(link({Recompute::selective, kMoeAct}), link(Recompute::none));
}

// Whatever the modules, selective keeps no more than none and no less than full, and re-runs no
// more than full: every subset of the seven on a dense, a MoE and an MLA layer.
TEST(RecomputeModules, EverySubsetBetweenNoneAndFull) {
    const SystemSpec sys = testing::round_system();
    for (const char* preset : {"gpt3-175b", "mixtral-8x7b", "deepseek-v3"}) {
        const ModelSpec m = testing::model_preset(preset);
        LayerShape sh = shape(1, 2048, 2, true);
        sh.ep = 2;
        const LayerOps l = layer_ops(m, sh, m.moe.enabled() ? LayerKind::moe : LayerKind::dense);
        const BlockCost full = cost_block(l, sys, CostContext{}, ep_spans(), Recompute::full, 0);
        for (unsigned set = 0; set < 128; ++set) {
            const BlockCost b = cost_block(l, sys, CostContext{}, ep_spans(), {Recompute::selective, static_cast<ModuleSet>(set)}, 0);
            EXPECT_LE(b.activation_bytes(Recompute::selective), b.activation_bytes(Recompute::none)) << preset << " " << set;
            EXPECT_GE(b.activation_bytes(Recompute::selective), full.activation_bytes(Recompute::full)) << preset << " " << set;
            EXPECT_LE(b.recompute_s, full.recompute_s * (1 + 1e-12)) << preset << " " << set;
            EXPECT_LE(b.total_s(), full.total_s() * (1 + 1e-12)) << preset << " " << set;
        }
    }
}

const char* kMoeBase = R"({"model": {"preset": "deepseek-v3"}, "system": {"preset": "dgx-b200"},
                           "parallel": {"pp": 8, "dp": 32, "ep": 32}})";

TEST(RecomputeModules, ScenarioReadsTheModules) {
    auto ok = testing::load(kMoeBase, {"parallel.recompute=selective", "parallel.recompute_modules=mla_up_proj,moe_act"});
    ASSERT_TRUE(ok.ok()) << ok.error().message();
    EXPECT_EQ(ok.value().parallel.recompute_modules, module_bit(RecomputeModule::mla_up_proj) | kMoeAct);
    auto dflt = testing::load(kMoeBase, {"parallel.recompute=selective"});
    ASSERT_TRUE(dflt.ok());
    EXPECT_EQ(dflt.value().parallel.recompute_modules, module_bit(RecomputeModule::core_attn));
    // Modules without a mode mean selective (Megatron-Bridge's override); the search still
    // searches the mode, and the modules are what its selective mode means.
    auto implied = testing::load(kMoeBase, {"parallel.recompute_modules=moe"});
    ASSERT_TRUE(implied.ok()) << implied.error().message();
    EXPECT_EQ(implied.value().parallel.recompute, Recompute::selective);
    // Beside another mode the modules are kept, not read (Megatron-Core reads them only under
    // selective): full stays full, and the overlap rules do not apply.
    auto beside = testing::load(kMoeBase, {"parallel.recompute=full", "parallel.recompute_modules=moe", "training.moe_a2a_overlap=true"});
    ASSERT_TRUE(beside.ok()) << beside.error().message();
    EXPECT_EQ(beside.value().parallel.recompute, Recompute::full);
    auto searched = testing::load(kMoeBase, {"parallel.recompute_modules=moe"}, Purpose::search);
    ASSERT_TRUE(searched.ok()) << searched.error().message();
    EXPECT_EQ(searched.value().parallel_given.count("recompute"), 0u);
}

InputError error_of(const std::vector<std::string>& sets) {
    auto s = testing::load(kMoeBase, sets);
    EXPECT_FALSE(s.ok());
    return s.ok() ? InputError{} : s.error();
}

TEST(RecomputeModules, BadModulesExitWithOneLine) {
    const InputError typo = error_of({"parallel.recompute=selective", "parallel.recompute_modules=mla_upproj"});
    EXPECT_EQ(typo.path, "parallel.recompute_modules");
    EXPECT_NE(typo.message().find("did you mean \"mla_up_proj\""), std::string::npos) << typo.message();
    EXPECT_EQ(error_of({"parallel.recompute=selective", "parallel.recompute_modules=mlp,mlp"}).path, "parallel.recompute_modules");
    // Megatron-Core refuses the whole MoE layer beside the A2A overlap, the shared experts beside theirs.
    const InputError a2a = error_of({"parallel.recompute=selective", "parallel.recompute_modules=moe", "training.moe_a2a_overlap=true"});
    EXPECT_EQ(a2a.path, "parallel.recompute_modules");
    EXPECT_NE(a2a.message().find("moe_a2a_overlap"), std::string::npos) << a2a.message();
    EXPECT_EQ(error_of({"parallel.recompute=selective", "parallel.recompute_modules=shared_experts"}).path, "parallel.recompute_modules");
    EXPECT_TRUE(testing::load(kMoeBase, {"parallel.recompute=selective", "parallel.recompute_modules=shared_experts",
                                         "training.moe_shared_expert_overlap=false"})
                    .ok());
}

std::string launch(const std::vector<std::string>& sets, const char* target) {
    auto s = testing::load(kMoeBase, sets);
    EXPECT_TRUE(s.ok());
    const Expected<std::string> t = training_launch(s.value(), s.value().parallel, target);
    return t.ok() ? t.value() : "refused: " + t.error().message();
}

TEST(RecomputeModules, RecomputeLayersReadAndRefused) {
    auto ok = testing::load(kMoeBase, {"parallel.recompute=full", "parallel.recompute_layers=2"});
    ASSERT_TRUE(ok.ok()) << ok.error().message();
    EXPECT_EQ(ok.value().parallel.recompute_layers, 2);
    EXPECT_EQ(error_of({"parallel.recompute=selective", "parallel.recompute_layers=2"}).path, "parallel.recompute_layers");
    EXPECT_EQ(error_of({"parallel.recompute_layers=2"}).path, "parallel.recompute_layers");  // none by default
    EXPECT_EQ(error_of({"parallel.recompute=full", "parallel.recompute_layers=-1"}).path, "parallel.recompute_layers");
    auto searched = testing::load(kMoeBase, {"parallel.recompute=full", "parallel.recompute_layers=2"}, Purpose::search);
    ASSERT_FALSE(searched.ok());
    EXPECT_EQ(searched.error().path, "parallel.recompute_layers");
    const std::vector<std::string> block = {"parallel.recompute=full", "parallel.recompute_layers=2"};
    EXPECT_NE(launch(block, "megatron").find("--recompute-method block \\\n  --recompute-num-layers 2"), std::string::npos)
        << launch(block, "megatron");
    EXPECT_NE(launch(block, "nemo").find("model.config.recompute_method=\"block\", model.config.recompute_num_layers=2"),
              std::string::npos);
    EXPECT_EQ(launch(block, "deepspeed").rfind("refused: --emit", 0), 0u);
}

TEST(RecomputeModules, LaunchSettingsNameTheModules) {
    const std::vector<std::string> sets = {"parallel.recompute=selective", "parallel.recompute_modules=moe_act,mla_up_proj"};
    const std::string megatron = launch(sets, "megatron");
    EXPECT_NE(megatron.find("--recompute-granularity selective \\\n  --recompute-modules mla_up_proj moe_act"), std::string::npos)
        << megatron;
    EXPECT_NE(launch(sets, "nemo").find("model.config.recompute_modules=[\"mla_up_proj\", \"moe_act\"]"), std::string::npos);
    EXPECT_EQ(launch({"parallel.recompute=selective"}, "megatron").find("--recompute-modules"), std::string::npos);
    EXPECT_EQ(launch(sets, "torchtitan").rfind("refused: --emit", 0), 0u) << launch(sets, "torchtitan");
}

}  // namespace
}  // namespace sm
