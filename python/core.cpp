// scalemodel._core: the command line run in-process, and train() without it (the call a notebook
// makes thousands of times). Python's side (scalemodel/__init__.py) turns results into dicts and
// DataFrames and errors into scalemodel.InputError.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/train_run.hpp"

namespace py = pybind11;
using sm::Json;

namespace {

// JSON -> Python objects: dict, list, str, int, float, bool, None.
py::object to_py(const Json& j) {
    switch (j.type()) {
        case Json::value_t::object: {
            py::dict d;
            for (const auto& [k, v] : j.items()) d[py::str(k)] = to_py(v);
            return d;
        }
        case Json::value_t::array: {
            py::list l(j.size());
            size_t i = 0;
            for (const Json& v : j) l[i++] = to_py(v);
            return l;
        }
        case Json::value_t::string: return py::str(j.get_ref<const std::string&>());
        case Json::value_t::boolean: return py::bool_(j.get<bool>());
        case Json::value_t::number_integer: return py::int_(j.get<int64_t>());
        case Json::value_t::number_unsigned: return py::int_(j.get<uint64_t>());
        case Json::value_t::number_float: return py::float_(j.get<double>());
        default: return py::none();
    }
}

struct Outcome {
    int rc;
    std::string out, err;
};

// The command line with `args` (no program name); `stdin_text` is what SCENARIO `-` reads.
Outcome run(const std::vector<std::string>& args, const std::optional<std::string>& stdin_text) {
    std::ostringstream out, err;
    sm::cli::Io io{out, err, false, stdin_text};
    int rc = 0;
    {
        py::gil_scoped_release unlocked;  // searches and studies run on their own threads meanwhile
        rc = sm::cli::run_command_line(args, io, sm::Cluster{});
    }
    return {rc, out.str(), err.str()};
}

// `train`: the scenario as JSON text or a file path, `sets` as the command line's PATH=VALUE.
// Returns (rc, result or None, stderr text) with the same exit statuses and messages as the CLI.
py::tuple train(const std::string& scenario, bool is_path, const std::vector<std::string>& sets, bool ops) {
    std::ostringstream err;
    const sm::cli::Io io{err, err, false, is_path ? std::nullopt : std::optional<std::string>(scenario)};
    auto s = sm::cli::load(io, is_path ? scenario : "-", sets, sm::Purpose::train);
    if (!s) {
        const int rc = sm::cli::bad_input(io, s.error());
        return py::make_tuple(rc, py::none(), err.str());
    }
    sm::cli::TrainRun r = sm::cli::run_train(io, *s, ops);
    const std::string bad = sm::find_non_finite(r.doc);
    if (!bad.empty()) return py::make_tuple(sm::cli::kExitInternal, py::none(), "scalemodel: internal error: " + bad + " is not finite\n");
    return py::make_tuple(sm::cli::kExitOk, to_py(sm::cli::with_overrides(std::move(r.doc), sets)), err.str());
}

// The same call as train() n times in C++ alone (no Python objects): what the Python side adds is
// train()'s time less this (bench/python_overhead.py).
double time_train_cpp(const std::string& scenario, const std::vector<std::string>& sets, int n) {
    std::ostringstream err;
    const sm::cli::Io io{err, err, false, scenario};
    py::gil_scoped_release unlocked;
    const auto start = std::chrono::steady_clock::now();
    size_t sink = 0;
    for (int i = 0; i < n; ++i) {
        auto s = sm::cli::load(io, "-", sets, sm::Purpose::train);
        if (!s) return -1;
        sm::cli::TrainRun r = sm::cli::run_train(io, *s, false);
        sink += sm::find_non_finite(r.doc).size() + sm::cli::with_overrides(std::move(r.doc), sets).size();
        err.str("");
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return sink == size_t(-1) ? 0 : s / n;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
    m.doc() = "scalemodel's C++ engine; use the functions of the `scalemodel` package";
    py::class_<Outcome>(m, "Outcome")
        .def_readonly("rc", &Outcome::rc)
        .def_readonly("out", &Outcome::out)
        .def_readonly("err", &Outcome::err);
    m.def("run", &run, py::arg("args"), py::arg("stdin_text") = std::nullopt,
          "Run the command line in-process: returns Outcome(rc, out, err).");
    m.def("train", &train, py::arg("scenario"), py::arg("is_path"), py::arg("sets"), py::arg("ops") = false,
          "One training prediction: (rc, result dict or None, stderr text).");
    m.def("_time_train_cpp", &time_train_cpp, py::arg("scenario"), py::arg("sets"), py::arg("n"),
          "Seconds per train() call in C++ alone, over n calls (benchmarking).");
}
