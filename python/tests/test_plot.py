"""Every chart kind renders headlessly (Agg) and plots the numbers of the result it was given."""
import json
import math

import matplotlib

matplotlib.use("Agg")
import pytest  # noqa: E402
from matplotlib.collections import LineCollection, PathCollection  # noqa: E402

import scalemodel as sm  # noqa: E402
import scalemodel.plot as smp  # noqa: E402
from test_api import SMALL  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"


def bars(fig, prefix):
    return [p for ax in fig.axes for p in ax.patches if (p.get_gid() or "").startswith(prefix)]


def saved(path, magic):
    data = path.read_bytes()
    assert data.startswith(magic) and len(data) > 2000
    return data


def test_breakdown_stacks_each_part_to_the_step_time(tmp_path):
    runs = [sm.train(SMALL, {"system.preset": p}) for p in ("dgx-a100-80gb", "dgx-h100")]
    fig = smp.breakdown(runs, path=str(tmp_path / "b.png"))
    saved(tmp_path / "b.png", PNG)
    for x, r in enumerate(runs):
        top = max(p.get_y() + p.get_height() for p in bars(fig, "breakdown:") if abs(p.get_x() + p.get_width() / 2 - x) < 0.1)
        parts = sum(v for v in r["breakdown"].values())
        assert top == pytest.approx(parts, rel=1e-12)
        # The parts are the step time: the breakdown is complete.
        assert parts == pytest.approx(r["step_time_s"], rel=1e-6)
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["dgx-a100-80gb", "dgx-h100"]
    assert "(s)" in fig.axes[0].get_ylabel()


def test_memory_bars_and_capacity_line(tmp_path):
    r = sm.train(SMALL)
    fig = smp.memory(r, path=str(tmp_path / "m.svg"))
    assert (tmp_path / "m.svg").read_text().lstrip().startswith("<?xml")
    gib = 1024.0 ** 3
    w = [p for p in bars(fig, "memory:weights_bytes")]
    assert w[0].get_height() == pytest.approx(r["memory"]["weights_bytes"] / gib)
    cap = [c for c in fig.axes[0].collections if isinstance(c, LineCollection) and c.get_gid() == "memory:capacity"]
    assert cap and cap[0].get_segments()[0][0][1] == pytest.approx(80.0)  # an 80 GiB A100
    assert "GiB" in fig.axes[0].get_ylabel()


def test_roofline_one_point_per_op_per_system(examples, tmp_path):
    doc = sm.roofline(str(examples / "infer-llama2-70b-h100.json"), systems=["dgx-a100-80gb", "dgx-h100"], tables=False)
    fig = smp.roofline(doc, path=str(tmp_path / "r.pdf"))
    saved(tmp_path / "r.pdf", b"%PDF")
    assert len(fig.axes) == 2
    for ax, s in zip(fig.axes, doc["systems"]):
        ops = [o for o in s["ops"] if o["flop"] > 0 and o["bytes"] > 0 and o["time_s"] > 0]
        pts = [c for c in ax.collections if isinstance(c, PathCollection)]
        assert sum(len(c.get_offsets()) for c in pts) == len(ops)
        xs = sorted(float(x) for c in pts for x, _ in c.get_offsets())
        assert xs == pytest.approx(sorted(o["intensity_flop_per_byte"] for o in ops))
        assert ax.get_xscale() == "log" and "FLOP/byte" in ax.get_xlabel()


def test_scaling_curve(examples, tmp_path):
    doc = sm.search(str(examples / "search-gpt3-175b.json"), [512, 1024, 2048], {"parallel.tp": 8}, top=1, tokens=300e9)
    fig = smp.scaling(doc, path=str(tmp_path / "s.png"))
    saved(tmp_path / "s.png", PNG)
    line = next(l for l in fig.axes[0].lines if l.get_gid() == "scaling:step_time_s")
    assert list(line.get_xdata()) == [512, 1024, 2048]
    assert list(line.get_ydata()) == list(doc["results"]["step_time_s"])
    days = next(l for l in fig.axes[1].lines if l.get_gid() == "scaling:training_days")
    r0 = doc["results"].iloc[0]
    assert days.get_ydata()[0] == pytest.approx(300e9 / r0["tokens_per_s"] / 86400)


def test_sweep_lines_and_heatmap(examples, tmp_path):
    base = str(examples / "gpt3-175b-64xa100.json")
    doc = sm.sweep(base, {"parallel.microbatch": [1, 2], "system.preset": ["dgx-a100-80gb", "dgx-h100"]})
    fig = smp.sweep(doc, path=str(tmp_path / "w.png"))
    saved(tmp_path / "w.png", PNG)
    lines = [l for l in fig.axes[0].lines if (l.get_gid() or "").startswith("sweep:")]
    assert len(lines) == 2
    got = sorted(float(y) for l in lines for y in l.get_ydata())
    assert got == pytest.approx(sorted(doc["points"]["step_time_s"]))
    grid = sm.sweep(base, {"parallel.microbatch": [1, 2, 4, 8, 16], "training.global_batch": [64, 128, 256, 512, 1024]})
    fig = smp.sweep(grid, path=str(tmp_path / "h.png"))
    assert fig.axes[0].images and fig.axes[0].images[0].get_array().shape == (5, 5)


def test_waterfall_multiplies_to_the_ratio(examples, tmp_path):
    a = sm.attribute(str(examples / "studies" / "gpt3-175b-a100-bf16.json"),
                     str(examples / "studies" / "gpt3-175b-h100-fp8.json"))
    fig = smp.waterfall(a, path=str(tmp_path / "a.png"))
    saved(tmp_path / "a.png", PNG)
    total = bars(fig, "waterfall:total")[0]
    assert total.get_y() + total.get_height() == pytest.approx(a["ratio"], rel=1e-9)
    assert len(bars(fig, "waterfall:")) == len(a["factors"]) + 1
    assert fig.axes[0].get_yscale() == "log"


def test_waterfall_shortens_long_group_names(tmp_path):
    # The bar keeps the group's whole name (its gid); the tick shows the head and the field count.
    other = "other: system.accelerator.sram_bw_bytes_per_s, system.accelerator.sram_bytes, system.energy.idle_w"
    doc = {"ratio": 2.0, "objective": "step_time_s",
           "factors": [{"name": "matrix peak", "speedup": 1.6}, {"name": other, "speedup": 1.25}]}
    fig = smp.waterfall(doc, path=str(tmp_path / "w.png"))
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert ticks == ["matrix peak", "other (3 fields)", "total"]
    assert len(bars(fig, "waterfall:other: system.accelerator")) == 1
    assert smp._tick_label("x" * 40) == "x" * 25 + "..."


def test_pareto_front(examples, tmp_path):
    doc = sm.serve_search(str(examples / "infer-llama2-70b-h100.json"), gpus=8)
    fig = smp.pareto(doc, path=str(tmp_path / "p.png"))
    saved(tmp_path / "p.png", PNG)
    front = next(l for l in fig.axes[0].lines if l.get_gid() == "pareto:front")
    xs = list(front.get_xdata())
    assert xs == sorted(xs) and len(xs) == len(doc["pareto"])
    ys = list(front.get_ydata())
    # A Pareto front: more per user costs throughput per GPU.
    assert all(b <= a + 1e-9 for a, b in zip(ys, ys[1:]))
    assert "per GPU" in fig.axes[0].get_ylabel() and "per user" in fig.axes[0].get_xlabel()


def test_every_listed_layout_gets_its_own_bar(tmp_path):
    """Five search results are five bars with five labels, also when two layouts would read alike
    by tp/pp/dp (a category axis stacked equal labels on one bar: --top 5 drew 2)."""
    runs = [{"model": "m", "system": "s", "breakdown": {"compute_s": 1.0 + i}, "memory": {"weights_bytes": 2.0 ** 30},
             "parallel": {"tp": 8, "pp": 2, "dp": 4, "zero": z, "microbatch": mb}}
            for i, (z, mb) in enumerate([(1, 1), (2, 1), (1, 2), (1, 1), (1, 1)])]
    for draw, prefix in ((smp.breakdown, "breakdown:"), (smp.memory, "memory:weights")):
        fig = draw(runs, path=str(tmp_path / "b.png"))
        centres = sorted({round(p.get_x() + p.get_width() / 2, 6) for p in bars(fig, prefix)})
        assert centres == [0, 1, 2, 3, 4]
        ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
        assert len(set(ticks)) == 5 and ticks[1].startswith("#2 tp8 pp2") and "ZeRO2" in ticks[1] and "mb2" in ticks[2]
        assert all(len(line) <= 16 for t in ticks for line in t.split("\n"))  # wrapped to a bar's width: no overlap
    labels = smp._layout_labels([{"parallel": {"tp": 4, "pp": 1, "dp": 2, "cp": 2}}, {"parallel": {"tp": 8, "pp": 1, "dp": 2}}])
    assert labels == ["tp4 pp1 dp2 cp2", "tp8 pp1 dp2 cp1"]


def test_waterfall_ticks_read_as_speedups(tmp_path):
    """A ratio under one decade: ticks such as 1.5x and 2x, no scientific notation."""
    doc = {"ratio": 2.75, "objective": "step_time_s", "factors": [{"name": "matrix peak", "speedup": 2.2}, {"name": "HBM", "speedup": 1.25}]}
    fig = smp.waterfall(doc, path=str(tmp_path / "w.png"))
    ax = fig.axes[0]
    shown = [t.get_text() for t in ax.get_yticklabels() if t.get_text()] + [t.get_text() for t in ax.get_yticklabels(minor=True) if t.get_text()]
    assert shown and all(t.endswith("x") and "times" not in t and "^" not in t for t in shown), shown
    assert "1.5x" in shown and "2x" in shown


def test_pareto_names_its_layouts_and_draws_the_targets(examples, tmp_path):
    doc = sm.serve_search(str(examples / "infer-llama2-70b-h100.json"), gpus=8, ttft_ms=300, tpot_ms=40)
    fig = smp.pareto(doc, path=str(tmp_path / "p.png"))
    ax = fig.axes[0]
    target = next(l for l in ax.lines if l.get_gid() == "pareto:tpot_target")
    assert list(target.get_xdata()) == [pytest.approx(1 / 0.040)] * 2  # 25 tokens/s per user
    labels = [t for t in ax.texts if t.get_gid() == "pareto:label"]
    front = sorted(_rows_of(doc["pareto"]), key=lambda p: p["output_tokens_per_s_per_user"])
    # Every point labelled but those crowding the last labelled one; the first always.
    assert 2 <= len(labels) <= len(front)
    assert labels[0].get_text() == f"tp{front[0]['tp']} pp{front[0]['pp']} dp{front[0]['dp']} C{front[0]['concurrency']}"
    slow = [p for p in _rows_of(doc["pareto"]) if p["ttft_s"] > 0.3]
    hollow = [c for c in ax.collections if c.get_gid() == "pareto:slow"]
    assert (len(hollow[0].get_offsets()) if hollow else 0) == len(slow)


def _rows_of(table):
    return table.to_dict("records") if hasattr(table, "to_dict") else list(table)


def test_palette_is_colour_blind_safe():
    assert smp.PALETTE[:8] == ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
