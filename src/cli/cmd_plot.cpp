// `scalemodel plot KIND ...`: the charts are drawn by the Python package (matplotlib), run as
// `python3 -m scalemodel plot ...` with the arguments unchanged.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <ostream>

#include "cli/commands.hpp"

extern char** environ;

namespace sm::cli {

namespace {

// build/python beside build/scalemodel; else where this build put it.
std::string package_dir() {
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        const auto beside = self.parent_path() / "python";
        if (std::filesystem::exists(beside / "scalemodel" / "__main__.py", ec)) return beside.string();
    }
#ifdef SCALEMODEL_PYTHON_DIR
    return SCALEMODEL_PYTHON_DIR;
#else
    return "";
#endif
}

}  // namespace

Runner add_plot(CLI::App& app, const Io& io) {
    CLI::App* cmd = app.add_subcommand("plot", "Draw a chart (breakdown, memory, roofline, scaling, sweep, waterfall, pareto) or an HTML report "
                                               "into -o FILE.png|svg|pdf (report: FILE.html); `scalemodel plot --help` lists the options");
    cmd->prefix_command();  // every argument goes to the Python side, --help included
    cmd->set_help_flag();
    return [cmd, &io]() -> int {
        if (!cmd->parsed()) return -1;
#ifndef SCALEMODEL_PYTHON
        return bad_input(io, {"plot", "", "this build has no Python module (pybind11, matplotlib): `make build` installs them"});
#else
        const std::string dir = package_dir();
        if (dir.empty()) return bad_input(io, {"plot", "", "the Python package was not found beside the binary (build/python)"});
        std::vector<std::string> args = {SCALEMODEL_PYTHON, "-m", "scalemodel", "plot"};
        for (const std::string& a : cmd->remaining()) args.push_back(a);
        std::vector<char*> argv;
        for (std::string& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        // The package first on the child's PYTHONPATH; everything else of the environment kept.
        std::vector<std::string> env_store;
        const char* old = getenv("PYTHONPATH");
        env_store.push_back("PYTHONPATH=" + dir + (old && *old ? std::string(":") + old : std::string()));
        for (char** e = environ; *e; ++e)
            if (std::string_view(*e).rfind("PYTHONPATH=", 0) != 0) env_store.emplace_back(*e);
        std::vector<char*> envp;
        for (std::string& e : env_store) envp.push_back(e.data());
        envp.push_back(nullptr);
        pid_t pid = 0;
        io.out.flush();
        io.err.flush();
        if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data()) != 0)
            return bad_input(io, {"plot", SCALEMODEL_PYTHON, "could not start the Python interpreter"});
        int status = 0;
        while (waitpid(pid, &status, 0) < 0)
            if (errno != EINTR) return kExitInternal;
        return WIFEXITED(status) ? WEXITSTATUS(status) : kExitInternal;
#endif
    };
}

}  // namespace sm::cli
