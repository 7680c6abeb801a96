#include <iostream>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "inference/roofline.hpp"
#include "io/infer_report.hpp"

namespace sm::cli {

namespace {

std::vector<std::string> split_commas(const std::string& s) {
    std::vector<std::string> v;
    size_t start = 0;
    while (start <= s.size()) {
        const auto c = s.find(',', start);
        v.push_back(s.substr(start, c == std::string::npos ? std::string::npos : c - start));
        if (c == std::string::npos) break;
        start = c + 1;
    }
    return v;
}

}  // namespace

Runner add_roofline(CLI::App& app, const Io& io) {
    struct Opts {
        std::string scenario;
        std::vector<std::string> sets;
        std::string systems;
        int64_t context = 0;
        std::string format = "text";
    };
    auto o = std::make_shared<Opts>();
    CLI::App* cmd = app.add_subcommand("roofline", "Per-op roofline of inference: prefill and one decode step");
    cmd->add_option("SCENARIO", o->scenario, "scenario JSON file, '-' for stdin")->required();
    cmd->add_option("--set", o->sets, "override a field: PATH=VALUE (repeatable)")->take_all();
    cmd->add_option("--systems", o->systems, "compare system presets side by side: A,B,... (default: the scenario's)");
    cmd->add_option("--context", o->context, "decode step's context length (default input_len + output_len/2)");
    cmd->add_option("--format", o->format, "output format")->check(CLI::IsMember({"text", "json", "csv"}));
    return [cmd, o, &io]() -> int {
        if (!cmd->parsed()) return -1;
        if (o->context < 0 || o->context > (int64_t{1} << 25))
            return bad_input(io, {"--context", std::to_string(o->context), "a context length from 1 to 33554432 (0: default)"});
        Expected<Json> doc = read_scenario(io, o->scenario);
        if (!doc) return bad_input(io, doc.error());
        Expected<Json> over = apply_overrides(std::move(doc).value(), o->sets);
        if (!over) return bad_input(io, over.error());
        std::vector<Json> docs;
        if (o->systems.empty()) {
            docs.push_back(over.value());
        } else {
            for (const std::string& name : split_commas(o->systems)) {
                if (name.empty()) return bad_input(io, {"--systems", quote_input(o->systems), "comma-separated system presets, e.g. dgx-a100-80gb,dgx-h100"});
                Json d = over.value();
                d["system"] = Json{{"preset", name}};  // the whole system replaced, overrides included
                docs.push_back(std::move(d));
            }
        }
        std::vector<SystemRoofline> rs;
        for (const Json& d : docs) {
            Expected<Scenario> s = build_scenario(d, Purpose::infer);
            if (!s) {
                InputError e = s.error();
                if (!o->systems.empty() && e.path == "system.preset") e.path = "--systems";
                return bad_input(io, e);
            }
            const InferContext c{s->model, s->system, s->inference};
            Roofline r = inference_roofline(c, s->parallel, o->context);
            rs.push_back({std::move(s).value(), std::move(r)});
        }
        note_assumptions(io, rs.front().scenario, Purpose::infer);
        const Json j = roofline_json(rs);
        switch (parse_format(o->format)) {
            case Format::json: return emit_json(io, j);
            case Format::csv: return emit_checked(io, j, roofline_csv(rs));
            case Format::text: return emit_checked(io, j, roofline_text(rs));
        }
        return kExitOk;
    };
}

}  // namespace sm::cli
