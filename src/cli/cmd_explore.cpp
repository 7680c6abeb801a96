// `scalemodel explore`: a page on localhost to try layouts and hardware with sliders, over the HTTP
// API of explore_api.hpp (cpp-httplib). The page is compiled in (web/); Chart.js comes from
// Debian's libjs-chart.js on this machine: nothing is fetched from the network.
#include <fstream>
#include <ostream>
#include <sstream>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/explore_api.hpp"
#include "io/embedded.hpp"

#ifdef SCALEMODEL_HTTP
#include <httplib.h>
#endif

namespace sm::cli {

namespace {

#ifdef SCALEMODEL_HTTP
constexpr const char* kChartJs = "/usr/share/javascript/chart.js/chart.min.js";

std::string content_type_of(std::string_view name) {
    if (name.ends_with(".html")) return "text/html; charset=utf-8";
    if (name.ends_with(".js")) return "text/javascript; charset=utf-8";
    if (name.ends_with(".css")) return "text/css; charset=utf-8";
    return "text/plain; charset=utf-8";
}

void serve(httplib::Server& srv) {
    srv.set_payload_max_length(kMaxRequestBytes);
    for (const EmbeddedFile& f : embedded_web_files()) {
        const std::string path = f.name == "index.html" ? "/" : "/" + std::string(f.name);
        srv.Get(path, [f](const httplib::Request&, httplib::Response& res) {
            res.set_content(std::string(f.text), content_type_of(f.name));
        });
    }
    srv.Get("/chart.js", [](const httplib::Request&, httplib::Response& res) {
        std::ifstream in(kChartJs, std::ios::binary);
        if (!in) {
            res.status = 404;
            res.set_content(fmt::format("// Chart.js not found at {} (Debian package libjs-chart.js)\n", kChartJs), "text/javascript");
            return;
        }
        std::ostringstream text;
        text << in.rdbuf();
        res.set_content(text.str(), "text/javascript; charset=utf-8");
    });
    auto api = [](const std::string& command, const std::string& body, httplib::Response& res) {
        const ApiReply r = api_reply(command, body);
        res.status = r.status;
        if (!r.notes.empty()) {
            std::string one = r.notes;
            for (char& c : one)
                if (c == '\n' || c == '\r') c = ' ';
            res.set_header("X-Scalemodel-Notes", one);
        }
        res.set_content(r.body, r.content_type);
    };
    srv.Post(R"(/api/([a-z-]+))", [api](const httplib::Request& req, httplib::Response& res) { api(req.matches[1], req.body, res); });
    srv.Get(R"(/api/(presets|validate))", [api](const httplib::Request& req, httplib::Response& res) { api(req.matches[1], "", res); });
}
#endif

}  // namespace

Runner add_explore(CLI::App& app, const Io& io) {
    struct Opts {
        std::string host = "127.0.0.1";
        int port = 8731;
    };
    auto o = std::make_shared<Opts>();
    CLI::App* cmd = app.add_subcommand("explore", "Serve the explorer, a page to try layouts and hardware, on http://127.0.0.1:PORT/");
    cmd->add_option("--port", o->port, "TCP port (0: any free port; the URL is printed)")->check(CLI::Range(0, 65535));
    cmd->add_option("--host", o->host, "address to listen on (default loopback only; 0.0.0.0 exposes it to the network)");
    return [cmd, o, &io]() -> int {
        if (!cmd->parsed()) return -1;
#ifndef SCALEMODEL_HTTP
        return bad_input(io, {"explore", "", "this build has no web server (Debian package libcpp-httplib-dev; `make build` installs it)"});
#else
        httplib::Server srv;
        serve(srv);
        const int port = o->port == 0 ? srv.bind_to_any_port(o->host) : (srv.bind_to_port(o->host, o->port) ? o->port : -1);
        if (port < 0)
            return bad_input(io, {"--port", std::to_string(o->port), fmt::format("a free TCP port on {} (this one is taken or not allowed)", o->host)});
        io.out << fmt::format("scalemodel explore: http://{}:{}/ (Ctrl-C to stop)", o->host == "0.0.0.0" ? "127.0.0.1" : o->host, port) << std::endl;
        return srv.listen_after_bind() ? kExitOk : kExitInternal;
#endif
    };
}

}  // namespace sm::cli
