#include "search/frameworks.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace sm {

namespace {

constexpr unsigned bit(CpKind k) { return 1U << static_cast<unsigned>(k); }
constexpr unsigned kAllCp = bit(CpKind::ring) | bit(CpKind::all_gather) | bit(CpKind::ulysses);

}  // namespace

const std::vector<Framework>& frameworks() {
    static const std::vector<Framework> all = {
        // --use-distributed-optimizer (ZeRO-1); Megatron-FSDP's --data-parallel-sharding-strategy
        // optim_grads / optim_grads_params (ZeRO-2/3); --cp-comm-type p2p | all_gather | a2a;
        // --num-layers-per-virtual-pipeline-stage; parallel_state's order "tp-cp-ep-dp-pp".
        {"megatron", "Megatron-LM core_v0.19.0, data/frameworks/megatron.txt", 0xF, kAllCp, true, "Megatron-Core's default order",
         "0, 1 (distributed optimizer), 2 or 3 (Megatron-FSDP)", "ring, all-gather or Ulysses"},
        // NeMo 2 and Megatron-Bridge configure Megatron-Core: the same space.
        {"nemo", "NeMo 2.6 MegatronStrategy on Megatron-Core, data/frameworks/nemo.txt", 0xF, kAllCp, true,
         "Megatron-Core's default order", "0, 1 (distributed optimizer), 2 or 3 (Megatron-FSDP)", "ring, all-gather or Ulysses"},
        // DDP (dp_replicate), FSDP2 with reshard_after_forward never (ZeRO-2) or always (ZeRO-3);
        // context parallelism rotates K/V by all-gather or all-to-all (ring); Interleaved1F1B.
        {"torchtitan", "TorchTitan v0.2.2, data/frameworks/torchtitan.txt", 0b1101, bit(CpKind::ring) | bit(CpKind::all_gather),
         true, "the order of TorchTitan's device mesh", "0 (DDP), 2 or 3 (FSDP2)", "ring or all-gather"},
        // ZeRO stages 0-3, but 0 or 1 under its pipeline engine, which asserts "ZeRO-2 and ZeRO-3
        // are incompatible with pipeline parallelism" (runtime/pipe/engine.py); DeepSpeed-Ulysses
        // sequence parallelism (all-to-all); the pipeline engine runs plain 1F1B.
        {"deepspeed", "DeepSpeed 0.19.6, data/frameworks/deepspeed.txt, runtime/pipe/engine.py, sequence/layer.py",
         0xF, bit(CpKind::ulysses), false, "DeepSpeed's topology order", "0, 1, 2 or 3 (0 or 1 with pipeline parallelism)", "Ulysses",
         0b0011},
    };
    return all;
}

const Framework* framework_named(std::string_view name) {
    const auto& all = frameworks();
    const auto it = std::find_if(all.begin(), all.end(), [&](const Framework& f) { return f.name == name; });
    return it == all.end() ? nullptr : &*it;
}

Expected<LayoutConstraints> restrict_to(LayoutConstraints f, const Framework& fw) {
    const auto refuse = [&](const std::string& field, const std::string& given, const std::string& why) {
        return InputError{field, given, fmt::format("{} with --framework {} ({}); leave --framework out for the what-if", why, fw.name, fw.source)};
    };
    if (f.tp_rows && !Framework::ships_tp_rows(*f.tp_rows)) return refuse("parallel.tp_rows", std::to_string(*f.tp_rows), "1: 1D tensor parallelism, not SUMMA");
    if (f.order && !Framework::ships_order(*f.order))
        return refuse("parallel.order", std::string(to_string(*f.order)), "tp-cp-dp-pp, its default rank order");
    if (f.zero && !fw.ships_zero(*f.zero))
        return refuse("parallel.zero", std::to_string(*f.zero), "a ZeRO stage it ships");
    if (f.zero && f.pp && !fw.ships_zero(*f.zero, *f.pp))
        return refuse("parallel.zero", std::to_string(*f.zero), fmt::format("a ZeRO stage it runs with pipeline parallelism {}", *f.pp));
    if (f.cp_kind && !fw.ships_cp(f.cp.value_or(0), *f.cp_kind))
        return refuse("parallel.cp_kind", std::string(to_string(*f.cp_kind)), "a context-parallel kind it ships");
    if (f.vp && !fw.ships_vp(*f.vp)) return refuse("parallel.vp", std::to_string(*f.vp), "1: no interleaved pipeline schedule");
    const bool selective = !f.recompute || *f.recompute == Recompute::selective;  // the only mode that reads the modules
    if (selective && !fw.ships_recompute_modules(f.recompute_modules))
        return refuse("parallel.recompute_modules", module_names(f.recompute_modules, ","), "left out (the attention core)");
    f.tp_rows = 1;
    f.order = RankOrder::tp_cp_dp;
    f.zero_stages &= fw.zero_stages;
    f.zero_stages_pipelined &= fw.zero_stages_pipelined;
    f.cp_kinds &= fw.cp_kinds;
    if (!fw.interleaving) f.vp = 1;
    return f;
}

}  // namespace sm
