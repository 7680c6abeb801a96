"""`scalemodel plot KIND ... -o FILE`: the binary runs the Python package; bad input is one line, exit 2."""
import pytest

from conftest import cli, cli_json

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("kind,args", [
    ("breakdown", ["gpt3-175b-64xa100.json", "--systems", "dgx-a100-80gb,dgx-h100"]),
    ("memory", ["search-gpt3-175b.json", "--gpus", "512", "--top", "3", "--set", "parallel.tp=8"]),
    ("roofline", ["infer-llama2-70b-h100.json"]),
    ("scaling", ["search-gpt3-175b.json", "--gpus", "512:2048:x2", "--set", "parallel.tp=8", "--tokens", "3e11"]),
    ("sweep", ["gpt3-175b-64xa100.json", "--vary", "parallel.microbatch=1,2,4"]),
    ("pareto", ["infer-llama2-70b-h100.json", "--gpus", "8"]),
])
def test_each_kind_writes_its_file(examples, tmp_path, kind, args):
    out = tmp_path / f"{kind}.png"
    p = cli("plot", kind, str(examples / args[0]), *args[1:], "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert out.read_bytes().startswith(PNG)
    assert p.stdout.strip() == str(out)


def test_waterfall(examples, tmp_path):
    out = tmp_path / "w.svg"
    st = examples / "studies"
    p = cli("plot", "waterfall", str(st / "gpt3-175b-a100-bf16.json"), "--to", str(st / "gpt3-175b-h100-fp8.json"), "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert "<svg" in out.read_text()


@pytest.mark.parametrize("args,field", [
    (["nonsense", "x.json", "-o", "a.png"], "KIND"),
    (["breakdown", "missing.json", "-o", "a.png"], "missing.json"),
    (["breakdown", "{scenario}", "-o", "a.jpg"], "-o"),
    (["breakdown", "{scenario}", "--set", "parallel.tp=0", "-o", "a.png"], "parallel.tp"),
    (["scaling", "{scenario}", "-o", "a.png"], "--gpus"),
    (["breakdown", "{scenario}"], "-o"),
])
def test_bad_input_is_one_line(examples, tmp_path, args, field):
    args = [a.replace("{scenario}", str(examples / "gpt3-175b-64xa100.json")) for a in args]
    args = [str(tmp_path / a) if a.endswith((".png", ".jpg")) else a for a in args]
    p = cli("plot", *args)
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and p.stderr.startswith("scalemodel: error: ")
    assert field.lower() in p.stderr.lower()
    assert p.stdout == ""


def test_a_slow_chart_says_so(examples, tmp_path, monkeypatch):
    """Past the delay (two seconds on a terminal; here 0) the chart says it is computing, then how long it took."""
    monkeypatch.setenv("SCALEMODEL_PLOT_PROGRESS_S", "0")
    out = tmp_path / "b.png"
    p = cli("plot", "breakdown", str(examples / "gpt3-175b-64xa100.json"), "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert "scalemodel plot: computing the breakdown chart ..." in p.stderr
    assert "scalemodel plot: done in " in p.stderr


def test_report_is_one_self_contained_html_file(examples, tmp_path):
    """`plot report`: the numbers, tables and charts in one HTML file that fetches nothing."""
    out = tmp_path / "r.html"
    p = cli("plot", "report", str(examples / "search-gpt3-175b.json"), "--gpus", "512", "--top", "3", "--set", "parallel.tp=8",
            "-o", str(out))
    assert p.returncode == 0, p.stderr
    page = out.read_text()
    assert page.startswith("<!doctype html>") and page.count("<svg") == 2
    assert page.count("<table") == 3 and page.count("<tr>") >= 3 * 4  # three tables: a header and three layouts each
    assert "src=" not in page and "<link" not in page and "<script" not in page  # nothing to fetch
    found = cli_json("search", str(examples / "search-gpt3-175b.json"), "--gpus", "512", "--top", "3", "--set", "parallel.tp=8")
    best = found["results"][0]["step_time_s"]
    assert (f"{best:.3f} s" if best >= 1 else f"{best * 1e3:.2f} ms") in page
    assert "scalemodel plot report" in page
    bad = cli("plot", "report", str(examples / "gpt3-175b-64xa100.json"), "-o", str(tmp_path / "r.png"))
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and ".html" in bad.stderr
