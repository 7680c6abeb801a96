"""`scalemodel explore`'s HTTP API: the scenario format in, the CLI's JSON out, bad requests refused."""
import http.client
import json
import re
import subprocess

import pytest

from conftest import BIN, cli, cli_json

SCENARIO = {"model": {"preset": "gpt3-175b"}, "system": {"preset": "dgx-h100"},
            "parallel": {"tp": 8, "pp": 8, "dp": 2, "sequence_parallel": True}, "training": {"global_batch": 256}}


@pytest.fixture(scope="module")
def server():
    p = subprocess.Popen([BIN, "explore", "--port", "0"], stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    m = re.search(r"http://([0-9.]+):(\d+)/", line)
    assert m, line
    yield m.group(1), int(m.group(2))
    p.terminate()
    p.wait(timeout=10)


def request(server, method, path, body=None):
    c = http.client.HTTPConnection(*server, timeout=120)
    c.request(method, path, body=body if body is None or isinstance(body, bytes) else json.dumps(body).encode())
    r = c.getresponse()
    data = r.read()
    headers = dict(r.getheaders())
    c.close()
    return r.status, headers, data


def test_listens_on_loopback(server):
    assert server[0] == "127.0.0.1"


def test_page_and_chart_library(server):
    status, headers, body = request(server, "GET", "/")
    assert status == 200 and headers["Content-Type"].startswith("text/html") and b"scalemodel explorer" in body
    status, headers, body = request(server, "GET", "/app.js")
    assert status == 200 and b"/api/" in body
    status, _, body = request(server, "GET", "/chart.js")
    assert status == 200 and b"Chart.js" in body[:200]  # Debian's libjs-chart.js, served locally


def test_train_is_the_cli(server, tmp_path):
    status, headers, body = request(server, "POST", "/api/train", SCENARIO)
    assert status == 200 and headers["Content-Type"] == "application/json"
    path = tmp_path / "s.json"
    path.write_text(json.dumps(SCENARIO))
    assert json.loads(body) == cli_json("train", str(path))


def test_envelope_options(server, tmp_path):
    body = {"scenario": SCENARIO, "options": {"set": {"parallel.microbatch": 2}, "stages": True}}
    status, _, data = request(server, "POST", "/api/train", body)
    assert status == 200
    path = tmp_path / "s.json"
    path.write_text(json.dumps(SCENARIO))
    assert json.loads(data) == cli_json("train", str(path), "--set", "parallel.microbatch=2")
    s = {k: v for k, v in SCENARIO.items() if k != "parallel"}
    status, _, data = request(server, "POST", "/api/search", {"scenario": s, "options": {"gpus": 512, "top": 2}})
    doc = json.loads(data)
    assert status == 200 and doc["gpus"] == 512 and len(doc["results"]) == 2
    status, _, data = request(server, "POST", "/api/sweep",
                              {"scenario": SCENARIO, "options": {"vary": ["parallel.microbatch=1,2", "parallel.dp=1,2"]}})
    assert status == 200 and json.loads(data)["count"] == 4


def test_attribute_takes_a_scenario_object(server):
    a100 = {"model": {"preset": "gpt3-175b"}, "system": {"preset": "dgx-a100-80gb"}, "training": {"global_batch": 256}}
    h100 = dict(a100, system={"preset": "dgx-h100"})
    status, _, data = request(server, "POST", "/api/attribute", {"scenario": a100, "options": {"to": h100, "mode": "search", "gpus": 256}})
    doc = json.loads(data)
    assert status == 200, doc
    prod = 1.0
    for f in doc["factors"]:
        prod *= f["speedup"]
    assert prod == pytest.approx(doc["ratio"], rel=1e-9)


def test_warnings_in_a_header(server):
    small = dict(SCENARIO, parallel={"tp": 2, "pp": 1, "dp": 1})
    status, headers, _ = request(server, "POST", "/api/train", small)
    assert status == 200 and "per GPU" in headers["X-Scalemodel-Notes"]


@pytest.mark.parametrize("path,body,words", [
    ("/api/train", dict(SCENARIO, parallel={"tp": 0}), "parallel.tp"),
    ("/api/train", b"{not json", "request"),
    ("/api/train", [1, 2], "request"),
    ("/api/train", {"scenario": 3}, "scenario"),
    ("/api/train", {"scenario": SCENARIO, "options": {"dataset": "/etc/passwd"}}, "options.dataset"),
    ("/api/attribute", {"scenario": SCENARIO, "options": {"to": "/etc/passwd"}}, "options.to"),
    ("/api/search", {"scenario": SCENARIO, "options": {"gpus": "lots"}}, "--gpus"),
    ("/api/train", {"scenario": SCENARIO, "options": {"set": {"model.layers": -4}}}, "model.layers"),
])
def test_bad_requests_are_400_with_the_cli_line(server, path, body, words):
    status, _, data = request(server, "POST", path, body)
    assert status == 400
    err = json.loads(data)["error"]
    assert err.startswith("scalemodel: error: ") and "\n" not in err and words in err


def test_the_cli_line_is_the_same(server, tmp_path):
    bad = dict(SCENARIO, parallel={"tp": 0})
    status, _, data = request(server, "POST", "/api/train", bad)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    assert json.loads(data)["error"] == cli("train", str(path)).stderr.strip()


def test_unknown_command_and_size_cap(server):
    status, _, _ = request(server, "POST", "/api/rm-rf", SCENARIO)
    assert status == 404
    status, _, _ = request(server, "POST", "/api/train", b" " * (2 << 20))
    assert status == 413  # over the 1 MiB cap


def test_presets_and_validate(server):
    status, _, data = request(server, "GET", "/api/presets")
    assert status == 200 and "gpt3-175b" in {m["name"] for m in json.loads(data)["models"]}
