// Multi-token prediction (model.mtp_layers): DeepSeek-V3's MTP modules, trained beside the model
// on the last pipeline stage (Megatron-Core's MultiTokenPredictionBlock). Parameters and ops by
// hand on the toy models; the stage that holds them; the layout string's 'm'.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "io/report.hpp"
#include "test_helpers.hpp"

namespace sm {
namespace {

using testing::op_named;
using testing::refusal;
using testing::round_system;
using testing::tiny_llama;
using testing::tiny_moe;

// tiny_llama: a block is 36,992 parameters (36,864 matrix weights + 2 norms of 64). One module
// adds the [128 -> 64] projection (8,192) and three norms of 64 (the embedding's, the hidden
// state's, its own final one): 8,384, so 45,376 per module. None of it is the model's.
TEST(Mtp, ParametersOfAModuleByHand) {
    ModelSpec m = tiny_llama(2);
    const double model = count_params(m).total();
    m.mtp_layers = 1;
    const ParamCount one = count_params(m);
    EXPECT_DOUBLE_EQ(one.mtp.total, 45376);
    EXPECT_DOUBLE_EQ(one.mtp.active, 45376);
    EXPECT_DOUBLE_EQ(one.mtp.experts, 0);
    EXPECT_DOUBLE_EQ(one.mtp.trainable, 45376);
    EXPECT_DOUBLE_EQ(one.total(), model);
    m.mtp_layers = 2;
    EXPECT_DOUBLE_EQ(count_params(m).mtp.total, 2 * 45376);
    // LoRA: the projection and norms are frozen; the block keeps its adapters (rank 4 on the
    // four matrices: 4 x (64 + 128) + 4 x (64 + 64) + 4 x (64 + 256) + 4 x (128 + 64) = 3,328).
    m.mtp_layers = 1;
    LoraSpec lora;
    lora.rank = 4;
    EXPECT_DOUBLE_EQ(count_params(m, lora).mtp.trainable, 3328);
}

// The module's block is of the last layer's kind: tiny_moe's 4 layers are all MoE (8 experts of
// 24,576: 196,608 expert parameters); with every second layer MoE on 3 layers the last (layer 2)
// is dense and the module has no experts.
TEST(Mtp, TheModulesBlockIsOfTheLastLayersKind) {
    ModelSpec m = tiny_moe();
    m.mtp_layers = 1;
    const ParamCount pc = count_params(m);
    EXPECT_DOUBLE_EQ(pc.mtp.experts, 196608);
    EXPECT_DOUBLE_EQ(pc.mtp.total, pc.layer[idx(LayerKind::moe)].total + 8384);
    EXPECT_DOUBLE_EQ(pc.mtp.active, pc.layer[idx(LayerKind::moe)].active + 8384);
    m.layers = 3;
    m.moe.interval = 2;
    const ParamCount alternate = count_params(m);
    EXPECT_DOUBLE_EQ(alternate.mtp.experts, 0);
    EXPECT_DOUBLE_EQ(alternate.mtp.total, alternate.layer[idx(LayerKind::dense)].total + 8384);
}

std::vector<std::string> names(const LayerOps& l) {
    std::vector<std::string> out;
    for (const Op& o : l.ops) out.emplace_back(o.name);
    return out;
}

// The head block of a training step: each module embeds the next tokens, normalises both inputs,
// projects [2h -> h] (column-parallel: 32 of 64 outputs per rank at tp 2, over all 2 x 128
// tokens), runs a block, then its own final norm, the shared output layer and a loss; then the
// model's own output. Serving (no loss) runs none of it.
TEST(Mtp, TheHeadBlockRunsEachModuleBeforeTheModelsOutput) {
    ModelSpec m = tiny_llama(2);
    m.mtp_layers = 1;
    LayerShape s;
    s.batch = 2;
    s.q_len = s.kv_len = 128;
    s.tp = 2;
    const LayerOps head = head_ops(m, s, true);
    const std::vector<std::string> block = names(layer_ops(m, s, LayerKind::dense));
    std::vector<std::string> want{"mtp_embedding", "mtp_enorm", "mtp_hnorm", "mtp_eh_proj"};
    want.insert(want.end(), block.begin(), block.end());
    for (const char* n : {"mtp_final_norm", "mtp_lm_head", "mtp_cross_entropy", "final_norm", "lm_head", "cross_entropy"})
        want.emplace_back(n);
    EXPECT_EQ(names(head), want);
    const GemmShape& proj = op_named(head, "mtp_eh_proj").gemm;
    EXPECT_EQ((std::vector<double>{proj.m, proj.n, proj.k}), (std::vector<double>{256, 32, 128}));
    // It keeps its concatenated [2h] input for the weight gradient: 256 x 128 x 2 B, the rank's
    // half of the tokens under sequence parallelism.
    EXPECT_DOUBLE_EQ(op_named(head, "mtp_eh_proj").saved_bytes, 65536);
    LayerShape sp = s;
    sp.sequence_parallel = true;
    const LayerOps sp_head = head_ops(m, sp, true);
    EXPECT_DOUBLE_EQ(op_named(sp_head, "mtp_eh_proj").saved_bytes, 32768);
    // Under sequence parallelism the projection's [2h] input is gathered over tp: 256 tokens x 128
    // x 2 B forward (the module's first gather; the embedding's comes from the reduce-scatter
    // before it), and the same bytes reduce-scattered in backward.
    EXPECT_DOUBLE_EQ(testing::comm_named(sp_head, "sp_all_gather").bytes, 65536);
    EXPECT_DOUBLE_EQ(testing::comm_named(sp_head, "sp_reduce_scatter_grad").bytes, 65536);
    EXPECT_DOUBLE_EQ(testing::comm_named(sp_head, "sp_reduce_scatter").bytes, 256.0 * 64 * 2);  // the embedding, [h]
    EXPECT_EQ(names(head_ops(m, s, false)), (std::vector<std::string>{"final_norm", "lm_head"}));
    m.mtp_layers = 2;
    EXPECT_EQ(names(head_ops(m, s, true)).size(), 2 * (want.size() - 3) + 3);
}

// On pp 2 the last GPU holds layer 1, the head and the module: its weights grow by the module's
// 45,376 parameters and its own copy of the 100 x 64 embedding (2 bytes each, bf16, no ZeRO); the
// first GPU's not at all. Its micro-batch more than doubles (a second block and a second output
// layer beside one of each). On one GPU the embedding is already there.
TEST(Mtp, TheLastStageHoldsAndRunsTheModules) {
    const SystemSpec sys = round_system();
    TrainingSpec t = testing::batch_of(8);
    ParallelConfig p;
    p.pp = 2;
    p.dp = 1;
    p.split = PipelineSplit::even;
    ModelSpec m = tiny_llama(2);
    const std::vector<StageReport> plain = training_stages({m, sys, t}, p);
    m.mtp_layers = 1;
    const std::vector<StageReport> mtp = training_stages({m, sys, t}, p);
    ASSERT_EQ(plain.size(), 2u);
    ASSERT_EQ(mtp.size(), 2u);
    EXPECT_DOUBLE_EQ(mtp[0].memory.weights_bytes, plain[0].memory.weights_bytes);
    EXPECT_DOUBLE_EQ(mtp[1].memory.weights_bytes - plain[1].memory.weights_bytes, 2 * (45376 + 6400));
    EXPECT_DOUBLE_EQ(mtp[0].micro_batch_s, plain[0].micro_batch_s);
    EXPECT_GT(mtp[1].micro_batch_s, 2 * plain[1].micro_batch_s);
    const TrainResult r = evaluate_training({m, sys, t}, p);
    EXPECT_DOUBLE_EQ(r.params_total, count_params(m).total() + 45376);
    p.pp = 1;
    ModelSpec without = m;
    without.mtp_layers = 0;
    EXPECT_DOUBLE_EQ(training_stages({m, sys, t}, p)[0].memory.weights_bytes -
                         training_stages({without, sys, t}, p)[0].memory.weights_bytes,
                     2 * 45376);
}

// Expert parameters of a module are split over ep like the model's: on ep 2 each GPU keeps half
// of the 196,608 (bf16: 196,608 bytes), the rest whole.
TEST(Mtp, AModulesExpertsAreShardedOverEp) {
    const SystemSpec sys = round_system();
    const TrainingSpec t = testing::batch_of(8);
    ParallelConfig p;
    p.dp = 2;
    p.ep = 2;
    ModelSpec m = tiny_moe();
    const double plain = training_stages({m, sys, t}, p)[0].memory.weights_bytes;
    m.mtp_layers = 1;
    const ParamCount pc = count_params(m);
    const double dense = pc.mtp.total - pc.mtp.experts;
    EXPECT_DOUBLE_EQ(training_stages({m, sys, t}, p)[0].memory.weights_bytes - plain, 2 * (dense + 196608 / 2.0));
    // ZeRO-3 partitions each over its own replicas: the dense part over dp 2, the experts over
    // the dp / ep = 1 GPU that holds the same ones.
    p.zero = 3;
    ModelSpec none = m;
    none.mtp_layers = 0;
    EXPECT_DOUBLE_EQ(training_stages({m, sys, t}, p)[0].memory.weights_bytes -
                         training_stages({none, sys, t}, p)[0].memory.weights_bytes,
                     2 * (dense / 2 + 196608 / 2.0));
}

// Megatron-Core's layout places each module with an 'm' in the last stage; the count must be the
// model's, and it is spelled back.
TEST(Mtp, LayoutStringsPlaceTheModulesInTheLastStage) {
    const ParsedLayout bridge = parse_pipeline_layout("Et*4|(t*4|)*14tmL");
    ASSERT_EQ(bridge.problem, "");
    EXPECT_EQ(bridge.mtp, 1);
    EXPECT_EQ(bridge.chunks.size(), 16u);
    EXPECT_EQ(bridge.chunks[15], 1);
    EXPECT_EQ(layout_text({4, 4}, 1), "Et*4|t*4mL");
    EXPECT_EQ(layout_text({4, 4}, 2), "Et*4|t*4mmL");
    EXPECT_NE(parse_pipeline_layout("Et*4m|t*4L").problem, "");
    const std::string base = R"({"model": {"preset": "llama2-7b", "mtp_layers": MTP}, "system": {"preset": "dgx-a100-80gb"},
        "parallel": {"tp": 1, "pp": 2, "dp": 4, "pipeline_layout": "LAYOUT"}, "training": {"global_batch": 64}})";
    auto with = [&](const std::string& mtp, const std::string& layout) {
        std::string j = base;
        j.replace(j.find("MTP"), 3, mtp);
        j.replace(j.find("LAYOUT"), 6, layout);
        return j;
    };
    const Scenario s = testing::scenario(with("1", "Et*16|t*16mL"));
    EXPECT_EQ(s.model.mtp_layers, 1);
    EXPECT_EQ(parallel_json(s.parallel)["pipeline_layout"], "Et*16|t*16mL");
    for (const auto& [mtp, layout] : std::vector<std::pair<std::string, std::string>>{
             {"1", "Et*16|t*16L"}, {"0", "Et*16|t*16mL"}, {"1", "Et*16|t*16mmL"}, {"1", "Et*16m|t*16L"}})
        EXPECT_NE(refusal(with(mtp, layout)).find("parallel.pipeline_layout"), std::string::npos) << mtp << " " << layout;
    EXPECT_NE(refusal(with("17", "Et*16|t*16mL")).find("model.mtp_layers"), std::string::npos);
    EXPECT_NE(refusal(with("-1", "Et*16|t*16mL")).find("model.mtp_layers"), std::string::npos);
}

TEST(Mtp, RefusedWhereItIsNotModelled) {
    EXPECT_NE(refusal(R"({"model": {"preset": "vit-era5", "mtp_layers": 1}, "system": {"preset": "dgx-a100-80gb"},
        "parallel": {"tp": 1}, "training": {"global_batch": 8}})")
                  .find("model.mtp_layers"),
              std::string::npos);
    EXPECT_NE(refusal(R"({"model": {"preset": "llama2-7b", "mtp_layers": 1}, "system": {"preset": "dgx-a100-80gb"},
        "parallel": {"tp": 4, "tp_rows": 2, "sequence_parallel": true}, "training": {"global_batch": 8}})")
                  .find("parallel.tp_rows"),
              std::string::npos);
}

}  // namespace
}  // namespace sm
