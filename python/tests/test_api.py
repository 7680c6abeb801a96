"""The Python module against the command line: same results, same errors, same scenario format."""
import json
import threading
import time

import pandas as pd
import pytest

import scalemodel as sm
from conftest import cli, cli_json

SMALL = {  # GPT-3 175B on 64 A100s, Korthikanti et al.'s layout (examples/gpt3-175b-64xa100.json's model and system)
    "model": {"preset": "gpt3-175b"},
    "system": {"preset": "dgx-a100-80gb"},
    "parallel": {"tp": 8, "pp": 8, "dp": 1, "vp": 3, "sequence_parallel": True, "microbatch": 1, "recompute": "selective"},
    "training": {"global_batch": 64, "precision": "fp16"},
}


def test_train_dict_string_and_path_agree_with_the_cli(examples):
    path = examples / "gpt3-175b-64xa100.json"
    want = cli_json("train", str(path))
    text = path.read_text()
    for scenario in (str(path), path, text, json.loads(text)):
        got = sm.train(scenario, tables=False)
        assert got == want


def test_overrides_are_the_cli_set(examples):
    path = str(examples / "gpt3-175b-64xa100.json")
    got = sm.train(path, {"parallel.microbatch": 2, "system.preset": "dgx-h100"}, tables=False)
    want = cli_json("train", path, "--set", "parallel.microbatch=2", "--set", "system.preset=dgx-h100")
    assert got == want
    assert got["overrides"] == {"parallel.microbatch": 2, "system.preset": "dgx-h100"}
    assert got["parallel"]["microbatch"] == 2


def test_default_scenario_is_the_cli_default():
    assert sm.train(tables=False) == cli_json("train")


def test_stages_and_ops_are_dataframes():
    r = sm.train(SMALL, ops=True)
    assert isinstance(r["stages"], pd.DataFrame)
    assert len(r["stages"]) == SMALL["parallel"]["pp"]  # one row per pipeline GPU
    layer = r["ops"]["layer"]["ops"]
    assert isinstance(layer, pd.DataFrame) and {"name", "fwd_flop", "fwd_s"} <= set(layer.columns)
    assert (layer["fwd_flop"] >= 0).all() and len(layer) > 5


def test_bad_input_raises_the_cli_message():
    bad = json.loads(json.dumps(SMALL))
    bad["parallel"]["tpp"] = 2  # a typo: the CLI names the field and suggests "tp"
    p = cli("train", "-", stdin=json.dumps(bad))
    assert p.returncode == 2
    line = p.stderr.strip().splitlines()[-1]
    with pytest.raises(sm.InputError) as e:
        sm.train(bad)
    assert "scalemodel: error: " + str(e.value) == line
    assert "tpp" in str(e.value)


def test_bad_override_and_bad_type():
    with pytest.raises(sm.InputError, match="parallel.tp"):
        sm.train(SMALL, {"parallel.tp": -1})
    with pytest.raises(sm.InputError, match="no-such-file"):
        sm.train("no-such-file.json")
    with pytest.raises(TypeError):
        sm.train(42)


def test_warnings_arrive_as_warnings():
    with pytest.warns(sm.ScalemodelWarning, match="per GPU"):
        r = sm.train(SMALL, {"parallel.tp": 2, "parallel.pp": 2})  # 175B on 4 GPUs: does not fit
    assert r["fits_in_memory"] is False


def test_search_equals_the_cli(examples):
    path = str(examples / "search-gpt3-175b.json")
    got = sm.search(path, 512, {"parallel.tp": 8}, top=3, threads=1, tables=False)
    want = cli_json("search", path, "--gpus", "512", "--set", "parallel.tp=8", "--top", "3", "--threads", "1")
    for k in ("candidates", "evaluated", "feasible", "gpus"):
        assert got[k] == want[k]
    assert got["results"] == want["results"]
    df = sm.search(path, 512, {"parallel.tp": 8}, top=3, threads=1)["results"]
    assert list(df["step_time_s"]) == [r["step_time_s"] for r in want["results"]]
    assert (df["parallel.tp"] == 8).all()


def test_search_curve_lists_one_best_per_count(examples):
    r = sm.search(str(examples / "search-gpt3-175b.json"), [512, 1024], {"parallel.tp": 8}, top=1)
    assert list(r["results"]["gpus"]) == [512, 1024]


def test_search_releases_the_gil(examples):
    ticks = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=tick)
    t.start()
    try:
        start = time.perf_counter()
        sm.search(str(examples / "search-gpt3-175b.json"), "1024:16384:x2", top=1, threads=1)
        end = time.perf_counter()
    finally:
        stop.set()
        t.join()
    during = [x for x in ticks if start < x < end]
    # Held, the GIL would let the other thread run at most once per switch interval of the call.
    assert end - start > 0.05 and len(during) >= 10


def test_infer_and_roofline(examples):
    path = str(examples / "infer-llama2-70b-h100.json")
    assert sm.infer(path, tables=False) == cli_json("infer", path)
    mt = sm.infer(path, max_throughput=True)
    assert mt == cli_json("infer", path, "--max-throughput")
    sw = sm.infer(path, sweep_batch=[1, 8], tables=False)
    assert sw == cli_json("infer", path, "--sweep-batch", "1,8")
    rf = sm.roofline(path, systems=["dgx-a100-80gb", "dgx-h100"])
    assert [s["system"] for s in rf["systems"]] == ["dgx-a100-80gb", "dgx-h100"]
    ops = rf["systems"][0]["ops"]
    assert isinstance(ops, pd.DataFrame) and set(ops["phase"]) == {"prefill", "decode"}


def test_studies(examples):
    base = str(examples / "gpt3-175b-64xa100.json")
    sw = sm.sweep(base, {"parallel.microbatch": [1, 2], "system.preset": "dgx-a100-80gb,dgx-h100"})
    assert sw["count"] == 4 and len(sw["points"]) == 4
    assert set(sw["points"]["inputs.parallel.microbatch"]) == {1, 2}
    # The command line's PATH=LIST strings read the same grid; anything else is named.
    listed = sm.sweep(base, ["parallel.microbatch=1,2", "system.preset=dgx-a100-80gb,dgx-h100"])
    assert list(listed["points"]["step_time_s"]) == list(sw["points"]["step_time_s"])
    with pytest.raises(TypeError, match="PATH=LIST"):
        sm.sweep(base, "parallel.microbatch=1,2")
    a = sm.attribute(str(examples / "studies" / "gpt3-175b-a100-bf16.json"),
                     json.loads((examples / "studies" / "gpt3-175b-h100-fp8.json").read_text()))
    prod = 1.0
    for s in a["factors"]["speedup"]:
        prod *= s
    assert prod == pytest.approx(a["ratio"], rel=1e-9)  # Shapley shares in log space multiply to the whole
    se = sm.sensitivity(base)
    assert "system.accelerator.memory_bw_bytes_per_s" in set(se["fields"]["path"])


def test_serve_search_validate_resolve_presets(examples):
    path = str(examples / "infer-llama2-70b-h100.json")
    s = sm.serve_search(path, gpus=8, tpot_ms=50)
    assert (s["best"]["tpot_s"] <= 0.050).all()
    j = sm.serve_search(path, gpus=8, tpot_ms=50, objective="tokens_per_j")
    assert j["objective"] == "tokens_per_j"
    assert j["best"]["energy_per_token_j"].is_monotonic_increasing  # the per-joule order
    assert j["best"]["energy_per_token_j"].iloc[0] <= s["best"]["energy_per_token_j"].min()
    v = sm.validate()
    cases = v["cases"]
    assert len(cases) == v["summary"]["count"] > 100
    err = (cases["predicted"] - cases["measured"]) / cases["measured"]
    assert (err - cases["error"]).abs().max() < 1e-12
    assert cases["error"].abs().mean() == pytest.approx(v["summary"]["mean_abs_error"], rel=1e-12)
    r = sm.resolve(SMALL)
    assert r["parallel"]["tp"] == 8 and r["system"]["accelerator"]["memory_bytes"] == 80 * 2**30
    p = sm.presets()
    assert {"gpt3-175b", "llama2-70b"} <= set(p["models"]["name"])


def test_run_is_the_binary():
    rc, out, err = sm.run(["train", "--format", "csv"])
    p = cli("train", "--format", "csv")
    assert (rc, out, err) == (p.returncode, p.stdout, p.stderr)
    rc, out, err = sm.run(["train", "--set", "parallel.tp=0"])
    assert rc == 2 and err.count("\n") == 1


def test_help_is_enough():
    doc = sm.train.__doc__
    for word in ("scenario", "overrides", "step_time_s", "InputError"):
        assert word in doc


def test_tables_without_pandas_say_so(monkeypatch, examples):
    """No silent lists: without pandas, tables=True raises an ImportError naming pandas; tables=False works."""
    import builtins
    real_import = builtins.__import__

    def no_pandas(name, *args, **kwargs):
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("No module named 'pandas'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pandas)
    path = str(examples / "search-gpt3-175b.json")
    with pytest.raises(ImportError, match="pandas"):
        sm.search(path, 512, {"parallel.tp": 8}, top=2, threads=1)
    assert isinstance(sm.search(path, 512, {"parallel.tp": 8}, top=2, threads=1, tables=False)["results"], list)


def test_memory_headroom_keeps_memory_free(examples):
    """search --memory-headroom 0.1: every layout listed leaves 10% of the 80 GiB A100 free, where
    without it the best use more than 72 GiB."""
    path = str(examples / "search-gpt3-175b.json")
    gib = 1024.0 ** 3
    free = cli_json("search", path, "--gpus", "512", "--set", "parallel.tp=8", "--top", "3", "--memory-headroom", "0.1")
    full = cli_json("search", path, "--gpus", "512", "--set", "parallel.tp=8", "--top", "3")
    assert [r["memory"]["peak_bytes_per_gpu"] <= 72 * gib for r in free["results"]] == [True] * 3
    assert any(r["memory"]["peak_bytes_per_gpu"] > 72 * gib for r in full["results"])
    assert free["feasible"] < full["feasible"]
