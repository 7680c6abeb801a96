#include "io/provenance.hpp"

#include "io/scenario.hpp"

namespace sm {

void for_each_leaf(const Json& j, const std::string& prefix, const std::function<void(const std::string&, const Json&)>& fn) {
    if (!j.is_object()) {
        fn(prefix, j);
        return;
    }
    for (const auto& [k, v] : j.items()) for_each_leaf(v, prefix.empty() ? k : prefix + "." + k, fn);
}

const Json* at_path(const Json& root, const std::string& path) {
    const Json* node = &root;
    size_t start = 0;
    while (true) {
        const auto dot = path.find('.', start);
        const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        if (!node->is_object()) return nullptr;
        const auto it = node->find(key);
        if (it == node->end()) return nullptr;
        node = &*it;
        if (dot == std::string::npos) return node;
        start = dot + 1;
    }
}

namespace {

// Numbers compare by value: 8 and 8.0 are the same figure.
bool same(const Json& a, const Json& b) {
    if (a.is_number() && b.is_number()) return a.get<double>() == b.get<double>();
    return a == b;
}

}  // namespace

std::vector<std::string> preset_changes(const Json& doc) {
    std::vector<std::string> out;
    for (const char* section : {"model", "system"}) {
        const auto it = doc.find(section);
        if (it == doc.end() || !it->is_object()) continue;
        const auto name = it->find("preset");
        if (name == it->end() || !name->is_string()) continue;
        Expected<Json> preset = std::string(section) == "model" ? model_preset_json(name->get<std::string>())
                                                                : system_preset_json(name->get<std::string>());
        if (!preset) continue;  // an unknown preset is reported by the parser
        Json own = *it;
        own.erase("preset");
        for_each_leaf(own, "", [&](const std::string& path, const Json& v) {
            const Json* was = at_path(preset.value(), path);
            if (!was || !same(*was, v)) out.push_back(std::string(section) + "." + path);
        });
    }
    return out;
}

std::string provenance_text(const Scenario& s) {
    std::string o;
    for (const char* section : {"model", "system"}) {
        const std::string prefix = std::string(section) + ".";
        std::string fields;
        for (const std::string& p : s.modified)
            if (p.rfind(prefix, 0) == 0) fields += (fields.empty() ? "" : ", ") + p;
        if (fields.empty()) continue;
        const std::string& name = std::string(section) == "model" ? s.model.name : s.system.name;
        o += std::string(section) + ": " + name + " (modified: " + fields + ")\n";
    }
    return o;
}

Json overrides_json(const std::vector<std::string>& sets) {
    Json out = Json::object();
    for (const std::string& s : sets) {
        const auto eq = s.find('=');
        if (eq == std::string::npos || eq == 0) continue;  // apply_overrides has refused it already
        out[s.substr(0, eq)] = override_value(s.substr(eq + 1));
    }
    return out;
}

}  // namespace sm
