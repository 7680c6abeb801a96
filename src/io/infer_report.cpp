#include "io/infer_report.hpp"

#include <fmt/format.h>

#include "io/csv.hpp"
#include "io/energy_report.hpp"
#include "io/provenance.hpp"

namespace sm {

namespace {

Json pass_json(const PassCost& c) {
    return Json{{"time_s", c.total_s()},     {"compute_s", c.compute_s}, {"tp_comm_exposed_s", c.tp_comm_s},
                {"pp_comm_exposed_s", c.pp_comm_s}, {"ep_comm_exposed_s", c.ep_comm_s}, {"host_overhead_s", c.host_s},
                {"flop", c.flop},            {"hbm_bytes", c.hbm_bytes}};
}

std::string si(double x, const char* unit) {
    const char* prefix[] = {"", "k", "M", "G", "T", "P", "E"};
    int i = 0;
    while (x >= 1000.0 && i < 6) {
        x /= 1000.0;
        ++i;
    }
    return fmt::format("{:.3g} {}{}", x, prefix[i], unit);
}

}  // namespace

Json precision_json(const InferenceSpec& i) {
    return Json{{"math", to_string(i.precision)}, {"weights", to_string(i.weight_precision)}, {"kv_cache", to_string(i.kv_precision)}};
}

Json memory_json(const Scenario& s, const InferMemory& m) {
    return Json{{"peak_bytes_per_gpu", m.peak_bytes_per_gpu},
                {"capacity_bytes", s.system.accel.memory_bytes},
                {"weights_bytes", m.weights_bytes},
                {"kv_cache_bytes", m.kv_cache_bytes},
                {"activations_bytes", m.activations_bytes},
                {"overhead_bytes", m.overhead_bytes}};
}

namespace {

// One replica's batch: its tp x pp GPUs from the prompt to the last token.
EnergyScope infer_energy_scope(const Scenario& s, const InferResult& r) {
    const auto& p = s.parallel;
    const double batch = static_cast<double>(s.inference.batch);
    return {r.energy, r.e2e_latency_s, static_cast<double>(p.tp * p.pp), batch * static_cast<double>(s.inference.output_len), batch};
}

}  // namespace

Json infer_json(const Scenario& s, const InferResult& r) {
    const InferenceSpec& i = s.inference;
    const InferMemory& m = r.memory;
    Json j{
        {"model", s.model.name},
        {"system", s.system.name},
        {"parallel", parallel_json(s.parallel)},
        {"batch", i.batch},
        {"input_len", i.input_len},
        {"output_len", i.output_len},
        {"precision", precision_json(i)},
        {"gpus", r.gpus},
        {"ttft_s", r.ttft_s},
        {"tpot_s", r.tpot_s},
        {"e2e_latency_s", r.e2e_latency_s},
        {"output_tokens_per_s", r.output_tokens_per_s},
        {"fits_in_memory", r.fits_in_memory},
        {"max_batch_fits", r.max_batch_fits},
        {"memory", memory_json(s, m)},
        {"prefill", pass_json(r.prefill)},
        {"decode",
         {{"steps", r.decode_steps},
          {"total", pass_json(r.decode)},
          {"first_step_s", r.decode_first.total_s()},
          {"last_step_s", r.decode_last.total_s()}}},
    };
    add_energy_keys(j, s.system, infer_energy_scope(s, r), true);
    return j;
}

std::string infer_text(const Scenario& s, const InferResult& r) {
    const InferenceSpec& i = s.inference;
    const ParallelConfig& p = s.parallel;
    std::string o;
    o += fmt::format("Inference: {} on {} x {} ({})\n", s.model.name, r.gpus, s.system.accel.name, s.system.name);
    o += provenance_text(s);
    o += fmt::format("Layout: tp {} . pp {} . dp {} (replicas)   batch {}   {} in / {} out   math {} . weights {} . KV {}\n",
                     p.tp, p.pp, p.dp, i.batch, i.input_len, i.output_len, to_string(i.precision),
                     to_string(i.weight_precision), to_string(i.kv_precision));
    o += fmt::format("\n  time to first token  {:>12}\n", seconds(r.ttft_s));
    o += fmt::format("  time per out token   {:>12}   (first step {}, last {})\n", seconds(r.tpot_s),
                     seconds(r.decode_first.total_s()), seconds(r.decode_last.total_s()));
    o += fmt::format("  end-to-end latency   {:>12}\n", seconds(r.e2e_latency_s));
    o += fmt::format("  output tokens/s      {:>12.1f}\n", r.output_tokens_per_s);
    o += "\n  where the time goes        prefill        decode (all steps)\n";
    auto row = [&](const char* name, double a, double b) {
        o += fmt::format("  {:<22} {:>12} {:>14}\n", name, seconds(a), seconds(b));
    };
    row("compute (kernels)", r.prefill.compute_s, r.decode.compute_s);
    row("TP comm", r.prefill.tp_comm_s, r.decode.tp_comm_s);
    row("PP comm", r.prefill.pp_comm_s, r.decode.pp_comm_s);
    if (s.model.moe.enabled()) row("EP comm", r.prefill.ep_comm_s, r.decode.ep_comm_s);
    row("host overhead", r.prefill.host_s, r.decode.host_s);
    const InferMemory& m = r.memory;
    o += "\n  memory per GPU (fullest stage)\n";
    o += fmt::format("  {:<22} {:>12}\n", "weights", gib(m.weights_bytes));
    o += fmt::format("  {:<22} {:>12}\n", "KV cache", gib(m.kv_cache_bytes));
    o += fmt::format("  {:<22} {:>12}\n", "activations", gib(m.activations_bytes));
    o += fmt::format("  {:<22} {:>12}\n", "framework", gib(m.overhead_bytes));
    o += fmt::format("  {:<22} {:>12}   of {} -> {}\n", "peak", gib(m.peak_bytes_per_gpu), gib(s.system.accel.memory_bytes),
                     r.fits_in_memory ? "fits" : "DOES NOT FIT");
    o += fmt::format("  {:<22} {:>12}\n", "largest batch that fits", r.max_batch_fits);
    o += energy_text(s.system, infer_energy_scope(s, r), true);
    return o;
}

Json sweep_json(const Scenario& s, const std::vector<SweepPoint>& pts) {
    Json rows = Json::array();
    for (const SweepPoint& pt : pts) {
        const InferResult& r = pt.result;
        rows.push_back(Json{{"batch", pt.batch},
                            {"ttft_s", r.ttft_s},
                            {"tpot_s", r.tpot_s},
                            {"e2e_latency_s", r.e2e_latency_s},
                            {"output_tokens_per_s", r.output_tokens_per_s},
                            {"fits_in_memory", r.fits_in_memory},
                            {"peak_bytes_per_gpu", r.memory.peak_bytes_per_gpu},
                            {"decode_bound", to_string(pt.decode.dominant())},
                            {"decode_compute_bound_s", pt.decode.compute_s},
                            {"decode_memory_bound_s", pt.decode.memory_s},
                            {"decode_network_s", pt.decode.network_s}});
    }
    return Json{{"model", s.model.name},
                {"system", s.system.name},
                {"parallel", parallel_json(s.parallel)},
                {"input_len", s.inference.input_len},
                {"output_len", s.inference.output_len},
                {"max_batch_fits", pts.empty() ? 0 : pts.front().result.max_batch_fits},
                {"sweep", rows}};
}

std::string sweep_text(const Scenario& s, const std::vector<SweepPoint>& pts) {
    std::string o;
    o += fmt::format("Latency-throughput: {} on {} x {}, tp {} pp {}, {} in / {} out, {}\n", s.model.name,
                     s.parallel.tp * s.parallel.pp, s.system.accel.name, s.parallel.tp, s.parallel.pp,
                     s.inference.input_len, s.inference.output_len, to_string(s.inference.precision));
    o += "decode bound: what bounds most of one decode step's time (ops at the mid context)\n\n";
    o += fmt::format("{:>7} {:>12} {:>12} {:>12} {:>14} {:>10} {:>9} {:>6}\n", "batch", "TTFT", "TPOT", "e2e",
                     "out tokens/s", "memory", "decode", "fits");
    for (const SweepPoint& pt : pts) {
        const InferResult& r = pt.result;
        o += fmt::format("{:>7} {:>12} {:>12} {:>12} {:>14.1f} {:>10} {:>9} {:>6}\n", pt.batch, seconds(r.ttft_s),
                         seconds(r.tpot_s), seconds(r.e2e_latency_s), r.output_tokens_per_s,
                         fmt::format("{:.1f} GiB", r.memory.peak_bytes_per_gpu / 1073741824.0), to_string(pt.decode.dominant()),
                         r.fits_in_memory ? "yes" : "NO");
    }
    if (!pts.empty()) o += fmt::format("\nlargest batch that fits: {}\n", pts.front().result.max_batch_fits);
    return o;
}

std::string sweep_csv(const std::vector<SweepPoint>& pts) {
    std::string o = csv_line({"batch", "ttft_s", "tpot_s", "e2e_latency_s", "output_tokens_per_s", "fits_in_memory",
                              "peak_bytes_per_gpu", "decode_bound"});
    for (const SweepPoint& pt : pts) {
        const InferResult& r = pt.result;
        o += csv_line({std::to_string(pt.batch), csv_number(r.ttft_s), csv_number(r.tpot_s), csv_number(r.e2e_latency_s),
                       csv_number(r.output_tokens_per_s), r.fits_in_memory ? "true" : "false",
                       csv_number(r.memory.peak_bytes_per_gpu), std::string(to_string(pt.decode.dominant()))});
    }
    return o;
}

Json roofline_json(const std::vector<SystemRoofline>& rs) {
    Json systems = Json::array();
    for (const SystemRoofline& sr : rs) {
        Json rows = Json::array();
        for (const RooflineRow& r : sr.roofline.rows)
            rows.push_back(Json{{"phase", r.phase},       {"block", r.block},        {"op", r.name},
                                {"count", r.count},       {"flop", r.flop},          {"bytes", r.bytes},
                                {"intensity_flop_per_byte", r.intensity},           {"balance_flop_per_byte", r.balance},
                                {"compute_s", r.compute_s}, {"memory_s", r.memory_s}, {"time_s", r.time_s},
                                {"bound", to_string(r.bound)}});
        const Scenario& s = sr.scenario;
        systems.push_back(Json{{"system", s.system.name},
                               {"accelerator", s.system.accel.name},
                               {"model", s.model.name},
                               {"parallel", parallel_json(s.parallel)},
                               {"batch", s.inference.batch},
                               {"input_len", s.inference.input_len},
                               {"decode_context", sr.roofline.context},
                               {"balance_flop_per_byte", sr.roofline.balance},
                               {"ops", rows}});
    }
    return Json{{"systems", systems}};
}

std::string roofline_text(const std::vector<SystemRoofline>& rs) {
    if (rs.empty()) return {};
    std::string o;
    const Scenario& s0 = rs.front().scenario;
    o += fmt::format("Roofline: {} batch {}, prefill of {} tokens, one decode step at context {}; tp {} pp {}, {}\n",
                     s0.model.name, s0.inference.batch, s0.inference.input_len, rs.front().roofline.context, s0.parallel.tp,
                     s0.parallel.pp, to_string(s0.inference.precision));
    o += "Per op instance on one GPU; x N = runs per pass. AI = FLOP per HBM byte; bound: which roofline term is larger.\n";
    for (const SystemRoofline& sr : rs)
        o += fmt::format("  {:<16} {}: {} , {} HBM, balance point {:.0f} FLOP/B\n", sr.scenario.system.name,
                         sr.scenario.system.accel.name,
                         si(sr.scenario.system.accel.matrix_peak(sr.scenario.inference.precision).value_or(0), "FLOP/s"),
                         si(sr.scenario.system.accel.memory_bw_bytes_per_s, "B/s"), sr.roofline.balance);
    const auto& rows0 = rs.front().roofline.rows;
    std::string phase;
    for (size_t i = 0; i < rows0.size(); ++i) {
        const RooflineRow& r = rows0[i];
        if (r.phase != phase) {
            phase = r.phase;
            o += fmt::format("\n{:<10} {:<22} {:>5} {:>11} {:>11} {:>8}", phase, "op", "x N", "FLOP", "bytes", "AI");
            for (const SystemRoofline& sr : rs) o += fmt::format(" | {:>11} {:<8}", sr.scenario.system.name.substr(0, 11), "bound");
            o += "\n";
        }
        o += fmt::format("{:<10} {:<22} {:>5.0f} {:>11} {:>11} {:>8.1f}", r.block, r.name, r.count, si(r.flop, ""),
                         si(r.bytes, "B"), r.intensity);
        for (const SystemRoofline& sr : rs) {
            const auto& rows = sr.roofline.rows;
            if (i < rows.size())
                o += fmt::format(" | {:>11} {:<8}", seconds(rows[i].time_s), to_string(rows[i].bound));
        }
        o += "\n";
    }
    o += "\nPass totals (time x N summed):\n";
    for (const SystemRoofline& sr : rs) {
        for (const char* ph : {"prefill", "decode"}) {
            const BoundSplit b = phase_split(sr.roofline, ph);
            o += fmt::format("  {:<16} {:<8} {:>11}  (compute-bound {}, memory-bound {}, network {})\n",
                             sr.scenario.system.name, ph, seconds(b.compute_s + b.memory_s + b.network_s),
                             seconds(b.compute_s), seconds(b.memory_s), seconds(b.network_s));
        }
    }
    return o;
}

std::string roofline_csv(const std::vector<SystemRoofline>& rs) {
    std::string o = csv_line({"system", "phase", "block", "op", "count", "flop", "bytes", "intensity_flop_per_byte",
                              "balance_flop_per_byte", "compute_s", "memory_s", "time_s", "bound"});
    for (const SystemRoofline& sr : rs)
        for (const RooflineRow& r : sr.roofline.rows)
            o += csv_line({csv_field(sr.scenario.system.name), csv_field(r.phase), csv_field(r.block), csv_field(r.name),
                           csv_number(r.count), csv_number(r.flop), csv_number(r.bytes), csv_number(r.intensity),
                           csv_number(r.balance), csv_number(r.compute_s), csv_number(r.memory_s), csv_number(r.time_s),
                           std::string(to_string(r.bound))});
    return o;
}

}  // namespace sm
