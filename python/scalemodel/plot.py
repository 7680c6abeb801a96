"""Charts of scalemodel's results (matplotlib): one function per kind, each returning the Figure.

Every function takes what the matching scalemodel function returns (a dict, with or without
DataFrames inside) and, optionally, `path` to save to (.png, .svg or .pdf by its suffix), `title`
and `ax`/`fig` to draw into. Colours are the Okabe-Ito palette (safe for colour-blind readers).

    import scalemodel as sm, scalemodel.plot as smp
    runs = [sm.train("s.json", {"system.preset": p}) for p in ("dgx-a100-80gb", "dgx-h100")]
    smp.breakdown(runs, labels=["A100", "H100"], path="breakdown.png")
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Optional, Sequence

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.ticker import EngFormatter, FuncFormatter, LogLocator, NullFormatter, NullLocator

__all__ = ["breakdown", "memory", "roofline", "scaling", "sweep", "waterfall", "pareto", "PALETTE"]

# Okabe & Ito (2008), "Color Universal Design": distinguishable under the common colour-vision deficiencies.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000", "#999999"]

# The step-time breakdown's parts in stacking order, with the words a reader sees.
BREAKDOWN_PARTS = [
    ("compute_s", "compute"), ("recompute_s", "recompute"), ("bubble_s", "pipeline bubble"),
    ("optimizer_s", "optimizer"), ("tp_comm_exposed_s", "TP comm"), ("pp_comm_exposed_s", "PP comm"),
    ("dp_comm_exposed_s", "DP comm"), ("cp_comm_exposed_s", "CP comm"), ("ep_comm_exposed_s", "EP comm"),
    ("offload_exposed_s", "offload"),
]
MEMORY_PARTS = [
    ("weights_bytes", "weights"), ("gradients_bytes", "gradients"), ("optimizer_bytes", "optimizer state"),
    ("activations_bytes", "activations"), ("overhead_bytes", "buffers + framework"),
]
GIB = 1024.0 ** 3
# Result keys as axis labels, with their units.
LABELS = {"step_time_s": "step time (s)", "tokens_per_s": "tokens/s", "tokens_per_s_per_gpu": "tokens/s per GPU",
          "mfu": "MFU (fraction of the matrix peak)", "e2e_latency_s": "end-to-end latency (s)",
          "ttft_s": "time to first token (s)", "tpot_s": "time per output token (s)",
          "output_tokens_per_s": "output tokens/s"}


def _rows(table: Any) -> list[dict]:
    """A DataFrame or a list of dicts as a list of nested dicts."""
    if hasattr(table, "to_dict"):
        flat = table.to_dict("records")
        return [_nest(r) for r in flat]
    return list(table)


def _nest(flat: Mapping[str, Any]) -> dict:
    out: dict = {}
    for k, v in flat.items():
        node = out
        parts = str(k).split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = v
    return out


def _flat_rows(table: Any) -> list[dict]:
    """A DataFrame or a list of nested dicts as flat dicts with dotted keys."""
    if hasattr(table, "to_dict"):
        return table.to_dict("records")

    def flat(d: Mapping[str, Any], prefix: str = "") -> dict:
        out: dict = {}
        for k, v in d.items():
            if isinstance(v, Mapping):
                out.update(flat(v, f"{prefix}{k}."))
            else:
                out[f"{prefix}{k}"] = v
        return out

    return [flat(r) for r in table]


def _canvas(ax=None, size=(7.5, 4.5)):
    if ax is not None:
        return ax.figure, ax
    fig, ax = plt.subplots(figsize=size, layout="constrained")
    return fig, ax


def _finish(fig: Figure, path: Optional[str]) -> Figure:
    if path:
        fig.savefig(path, dpi=120)
    return fig


# The layout fields a label names when they tell the bars apart: (key, spelling, default).
_LABEL_FIELDS = [("cp", "cp{}", 1), ("ep", "ep{}", 1), ("vp", "vp{}", 1), ("microbatch", "mb{}", 1), ("zero", "ZeRO{}", 0),
                 ("recompute", "rc:{}", "none"), ("sequence_parallel", "SP:{}", False), ("cp_kind", "{}", "ring"),
                 ("order", "{}", "tp-cp-dp-pp")]


def _layout_labels(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """One label per bar, never two alike: tp/pp/dp, then every other field that differs between
    the bars (or is not its default), then a rank when two layouts still read the same."""
    pars = [r.get("parallel", {}) for r in runs]
    labels = []
    for p in pars:
        rows = p.get("tp_rows", 1)
        tp = f"{rows}x{p.get('tp', 1) // rows}" if rows > 1 else str(p.get("tp", 1))
        s = f"tp{tp} pp{p.get('pp', 1)} dp{p.get('dp', 1)}"
        for key, spelling, default in _LABEL_FIELDS:
            values = {str(q.get(key, default)) for q in pars}
            if len(values) > 1 or p.get(key, default) != default:
                v = p.get(key, default)
                s += " " + spelling.format("on" if v is True else "off" if v is False else v)
        labels.append(s)
    if len(set(labels)) < len(labels):
        labels = [f"#{i + 1} {s}" for i, s in enumerate(labels)]
    return labels


def _wrap(label: str, width: int = 14) -> str:
    """A label broken at spaces into lines of about `width` characters."""
    lines, line = [], ""
    for word in label.split(" "):
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return "\n".join(lines + [line])


def _bar_axis(ax, labels: Sequence[str]) -> list[int]:
    """Bars at 0, 1, ... (a category axis would stack two equal labels on one bar), each label
    wrapped to its bar's width; slanted only when there are too many bars for that."""
    xs = list(range(len(labels)))
    many = len(labels) > 6
    ax.set_xticks(xs, labels if many else [_wrap(l) for l in labels], rotation=30 if many else 0, ha="right" if many else "center",
                  fontsize=7 if many or any(len(l) > 14 for l in labels) else None)
    return xs


def _results(data: Any) -> list[dict]:
    """Train results: one dict, a list of them, or a search result (its "results")."""
    if isinstance(data, Mapping):
        return _rows(data["results"]) if "results" in data else [dict(data)]
    return [dict(d) for d in data]


def breakdown(data: Any, *, labels: Optional[Sequence[str]] = None, title: Optional[str] = None, ax=None,
              path: Optional[str] = None) -> Figure:
    """Step time as a stacked bar per layout or system: compute, bubble, exposed communication, ...

    data: a train() result, a list of them, or a search() result (one bar per listed layout).
    labels: one per bar (default: the system for different systems, else the layout).
    """
    runs = _results(data)
    if labels is None:
        systems = {r.get("system") for r in runs}
        labels = [str(r.get("system")) for r in runs] if len(systems) > 1 else _layout_labels(runs)
    fig, ax = _canvas(ax)
    xs = _bar_axis(ax, labels)
    bottom = [0.0] * len(runs)
    for i, (key, name) in enumerate(BREAKDOWN_PARTS):
        vals = [float(r["breakdown"].get(key, 0.0)) for r in runs]
        if not any(v > 0 for v in vals):
            continue
        ax.bar(xs, vals, bottom=bottom, label=name, color=PALETTE[i % len(PALETTE)], gid=f"breakdown:{key}")
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_ylabel("time per training step (s)")
    ax.set_title(title or f"Step time of {runs[0].get('model', 'the model')}: where it goes")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return _finish(fig, path)


def memory(data: Any, *, labels: Optional[Sequence[str]] = None, title: Optional[str] = None, ax=None,
           path: Optional[str] = None) -> Figure:
    """Memory per GPU as a stacked bar per layout or system, against each GPU's HBM capacity (dashes)."""
    runs = _results(data)
    if labels is None:
        systems = {r.get("system") for r in runs}
        labels = [str(r.get("system")) for r in runs] if len(systems) > 1 else _layout_labels(runs)
    fig, ax = _canvas(ax)
    xs = _bar_axis(ax, labels)
    bottom = [0.0] * len(runs)
    for i, (key, name) in enumerate(MEMORY_PARTS):
        vals = [float(r["memory"].get(key, 0.0)) / GIB for r in runs]
        ax.bar(xs, vals, bottom=bottom, label=name, color=PALETTE[i % len(PALETTE)], gid=f"memory:{key}")
        bottom = [b + v for b, v in zip(bottom, vals)]
    for x, r in enumerate(runs):
        cap = float(r["memory"].get("capacity_bytes", 0.0)) / GIB
        if cap > 0:
            ax.hlines(cap, x - 0.45, x + 0.45, colors="black", linestyles="dashed", gid="memory:capacity",
                      label="HBM capacity" if x == 0 else None)
    ax.set_ylabel("memory per GPU (GiB)")
    ax.set_title(title or f"Memory per GPU of {runs[0].get('model', 'the model')}")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return _finish(fig, path)


def roofline(doc: Mapping[str, Any], *, title: Optional[str] = None, fig=None, path: Optional[str] = None) -> Figure:
    """Every op of prefill and one decode step as a point (operational intensity, achieved FLOP/s),
    under the roofline of each system, side by side (roofline() result, one panel per system)."""
    systems = list(doc["systems"])
    n = len(systems)
    if fig is None:
        fig, axes = plt.subplots(1, n, figsize=(5.2 * n, 4.3), squeeze=False, sharey=True, layout="constrained")
        axes = axes[0]
    else:
        axes = fig.subplots(1, n, squeeze=False, sharey=True)[0]
    for ax, s in zip(axes, systems):
        ops = [o for o in _rows(s["ops"]) if o.get("flop", 0) > 0 and o.get("bytes", 0) > 0 and o.get("time_s", 0) > 0]
        # The roof the model applies: its best compute and memory rates (efficiencies included).
        peak = max((o["flop"] / o["compute_s"] for o in ops if o.get("compute_s", 0) > 0), default=0.0)
        bw = max((o["bytes"] / o["memory_s"] for o in ops if o.get("memory_s", 0) > 0), default=0.0)
        for j, phase in enumerate(("prefill", "decode")):
            pts = [o for o in ops if o.get("phase") == phase]
            ax.scatter([o["intensity_flop_per_byte"] for o in pts], [o["flop"] / o["time_s"] / 1e12 for o in pts],
                       s=[12 + 30 * math.sqrt(o["time_s"] / max(p["time_s"] for p in pts)) for o in pts] if pts else [],
                       color=PALETTE[j], alpha=0.8, label=phase, gid=f"roofline:{s['system']}:{phase}")
        if peak > 0 and bw > 0:
            xs = [0.1, peak / bw, 1e5]
            ax.plot(xs, [min(peak, x * bw) / 1e12 for x in xs], color="black", lw=1.2, gid=f"roofline:{s['system']}:roof")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("operational intensity (FLOP/byte)")
        ax.set_title(f"{s['system']} ({s.get('accelerator', '')})", fontsize=10)
        ax.grid(True, which="major", alpha=0.3)
    axes[0].set_ylabel("achieved (TFLOP/s per GPU)")
    axes[-1].legend(frameon=False)
    first = systems[0]
    fig.suptitle(title or f"Roofline of {first.get('model', '')} inference: batch {first.get('batch', '')}, "
                 f"{first.get('input_len', '')} tokens in, decode at context {first.get('decode_context', '')}")
    return _finish(fig, path)


def scaling(doc: Mapping[str, Any], *, tokens: Optional[float] = None, title: Optional[str] = None, fig=None,
            path: Optional[str] = None) -> Figure:
    """Step time (and training days, when a token budget is known) of the best layout per GPU count
    (a search() result over several GPU counts)."""
    runs = sorted(_rows(doc["results"]), key=lambda r: r["gpus"])
    best: dict[int, dict] = {}
    for r in runs:
        best.setdefault(int(r["gpus"]), r)
    gpus = sorted(best)
    tokens = tokens if tokens is not None else doc.get("tokens")
    if fig is None:
        fig, axes = plt.subplots(1, 2 if tokens else 1, figsize=(10 if tokens else 6, 4.2), squeeze=False,
                                 layout="constrained")
        axes = axes[0]
    else:
        axes = fig.subplots(1, 2 if tokens else 1, squeeze=False)[0]
    steps = [best[g]["step_time_s"] for g in gpus]
    axes[0].plot(gpus, steps, marker="o", color=PALETTE[0], gid="scaling:step_time_s")
    if len(gpus) > 1:
        ideal = [steps[0] * gpus[0] / g for g in gpus]
        axes[0].plot(gpus, ideal, ls="--", color=PALETTE[8], label="linear scaling", gid="scaling:ideal")
        axes[0].legend(frameon=False)
    axes[0].set_ylabel("step time of the best layout (s)")
    if tokens:
        days = [tokens / best[g]["tokens_per_s"] / 86400.0 for g in gpus]
        axes[1].plot(gpus, days, marker="s", color=PALETTE[1], gid="scaling:training_days")
        axes[1].set_ylabel(f"training days for {tokens:.3g} tokens")
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("GPUs")
        ax.grid(True, which="both", alpha=0.3)
    r0 = best[gpus[0]]
    fig.suptitle(title or f"Scaling of {r0.get('model', '')} on {r0.get('system', '')}")
    return _finish(fig, path)


def _objective_of(doc: Mapping[str, Any], row: Mapping[str, Any]) -> float:
    obj = doc.get("objective", "step_time_s")
    v = row.get(obj)
    return float(v) if v is not None else float("nan")


def sweep(doc: Mapping[str, Any], *, title: Optional[str] = None, ax=None, path: Optional[str] = None) -> Figure:
    """A sweep() result: a line per value of the second varied field over the first, or a heatmap
    when two fields vary with more than a few values each; points that failed are left blank."""
    varied = list(doc["varied"])
    if len(varied) not in (1, 2):
        raise ValueError(f"sweep plot: one or two varied fields, not {len(varied)} ({', '.join(varied)})")
    pts = _flat_rows(doc["points"])
    obj = doc.get("objective", "step_time_s")
    val = {tuple(str(p["inputs." + v]) for v in varied): (_objective_of(doc, p) if p.get("status") == "ok" else float("nan"))
           for p in pts}
    xs = list(dict.fromkeys(str(p["inputs." + varied[0]]) for p in pts))
    fig, ax = _canvas(ax)
    # Numbers on a numeric axis (log when they span a decade, as geometric sweeps do); names as categories.
    try:
        xnum = [float(x) for x in xs]
    except ValueError:
        xnum = None
    xplot = xnum if xnum is not None else xs
    if len(varied) == 1:
        ax.plot(xplot, [val[(x,)] for x in xs], marker="o", color=PALETTE[0], gid=f"sweep:{obj}")
    elif len(varied) == 2:
        ys = list(dict.fromkeys(str(p["inputs." + varied[1]]) for p in pts))
        if len(xs) > 4 and len(ys) > 4:
            grid = [[val.get((x, y), float("nan")) for x in xs] for y in ys]
            im = ax.imshow(grid, aspect="auto", origin="lower", cmap="cividis", gid=f"sweep:{obj}")
            ax.set_xticks(range(len(xs)), [f"{float(x):.3g}" if xnum else x for x in xs], rotation=45)
            ax.set_yticks(range(len(ys)), ys)
            ax.set_ylabel(varied[1])
            fig.colorbar(im, ax=ax, label=LABELS.get(obj, obj))
        else:
            for j, y in enumerate(ys):
                ax.plot(xplot, [val.get((x, y), float("nan")) for x in xs], marker="o", color=PALETTE[j % len(PALETTE)],
                        label=f"{varied[1]} = {y}", gid=f"sweep:{obj}:{y}")
            ax.legend(frameon=False)
    if xnum is not None and not ax.images:
        if min(xnum) > 0 and max(xnum) >= 8 * min(xnum):
            ax.set_xscale("log")
        ax.set_xticks(xnum, [EngFormatter()(v) for v in xnum])  # ticks at the points swept
        ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel(varied[0])
    if len(varied) == 1 or ax.get_ylabel() == "":
        ax.set_ylabel(LABELS.get(obj, obj))
    ax.set_title(title or f"Sweep of {' and '.join(varied)} ({doc.get('mode', '')})")
    return _finish(fig, path)


def _tick_label(name: str, width: int = 28) -> str:
    """A factor group's name short enough for an axis tick: a group named by its list of fields
    ("other: a, b, c") becomes its head and the count; any other long name is cut."""
    if len(name) <= width:
        return name
    head, sep, rest = name.partition(": ")
    if sep:
        return f"{head} ({len(rest.split(', '))} fields)"
    return name[: width - 3] + "..."


def waterfall(doc: Mapping[str, Any], *, title: Optional[str] = None, ax=None, path: Optional[str] = None) -> Figure:
    """An attribute() result as a waterfall on a log scale: each factor's speed-up multiplies the
    running total from 1x to the whole ratio."""
    factors = _rows(doc["factors"])
    fig, ax = _canvas(ax, size=(8, 4.5))
    level = 1.0
    names = []
    for i, f in enumerate(factors):
        nxt = level * float(f["speedup"])
        lo, hi = min(level, nxt), max(level, nxt)
        ax.bar(i, hi - lo, bottom=lo, color=PALETTE[2] if nxt >= level else PALETTE[3], gid=f"waterfall:{f['name']}")
        ax.text(i, hi * 1.03, f"{float(f['speedup']):.2f}x", ha="center", va="bottom", fontsize=8)
        names.append(_tick_label(f["name"]))
        level = nxt
    ax.bar(len(factors), level - 1.0, bottom=1.0, color=PALETTE[0], gid="waterfall:total")
    ax.text(len(factors), level * 1.03, f"{level:.2f}x", ha="center", va="bottom", fontsize=8, weight="bold")
    ax.set_xticks(range(len(factors) + 1), names + ["total"], rotation=30, ha="right")
    ax.set_yscale("log")
    # Speed-ups as "1.5x" on every tick: a log axis over less than a decade otherwise labels its
    # minor ticks in scientific notation ("2.75 x 10^0").
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 1.5, 2.0, 3.0, 5.0, 7.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.axhline(1.0, color="black", lw=0.8)
    obj = doc.get("objective", "")
    ax.set_ylabel(f"speed-up of the {LABELS.get(obj, obj or 'objective')} (x, log scale)")
    ax.set_title(title or f"What the {float(doc.get('ratio', level)):.2f}x is made of (Shapley attribution)")
    return _finish(fig, path)


def pareto(doc: Mapping[str, Any], *, title: Optional[str] = None, ax=None, path: Optional[str] = None) -> Figure:
    """A serve_search() result: tokens/s per GPU against tokens/s per user, every configuration
    evaluated as a faint point (when listed) and the Pareto front as a line."""
    front = sorted(_rows(doc["pareto"]), key=lambda p: p["output_tokens_per_s_per_user"])
    fig, ax = _canvas(ax)
    if "best" in doc:
        best = _rows(doc["best"])
        ax.scatter([b["output_tokens_per_s_per_user"] for b in best], [b["output_tokens_per_s_per_gpu"] for b in best],
                   color=PALETTE[1], marker="x", label="best under the targets", zorder=3, gid="pareto:best")
    ax.plot([p["output_tokens_per_s_per_user"] for p in front], [p["output_tokens_per_s_per_gpu"] for p in front],
            marker="o", color=PALETTE[0], label="Pareto front", gid="pareto:front")
    # Each front point's layout and concurrency; points that miss the TTFT target hollow.
    ttft = float(doc.get("ttft_target_s") or 0.0)
    tpot = float(doc.get("tpot_target_s") or 0.0)
    slow = [p for p in front if ttft > 0 and p["ttft_s"] > ttft]
    if slow:
        ax.scatter([p["output_tokens_per_s_per_user"] for p in slow], [p["output_tokens_per_s_per_gpu"] for p in slow], s=60,
                   facecolors="white", edgecolors=PALETTE[0], zorder=4, label=f"misses TTFT {ttft * 1e3:g} ms", gid="pareto:slow")
    # Labels where they do not collide: a point within 5% of the axes of the last one labelled keeps none.
    xr = (max(p["output_tokens_per_s_per_user"] for p in front) - min(p["output_tokens_per_s_per_user"] for p in front)) or 1.0
    yr = (max(p["output_tokens_per_s_per_gpu"] for p in front) - min(p["output_tokens_per_s_per_gpu"] for p in front)) or 1.0
    last = None
    for p in front:
        here = (p["output_tokens_per_s_per_user"] / xr, p["output_tokens_per_s_per_gpu"] / yr)
        if last is not None and math.hypot(here[0] - last[0], here[1] - last[1]) < 0.05:
            continue
        last = here
        ax.annotate(f"tp{p['tp']} pp{p['pp']} dp{p['dp']}" + (f" ep{p['ep']}" if p.get("ep", 1) > 1 else "") + f" C{p['concurrency']}",
                    (p["output_tokens_per_s_per_user"], p["output_tokens_per_s_per_gpu"]), textcoords="offset points", xytext=(4, 4),
                    fontsize=6, color="#444444", gid="pareto:label")
    # A TPOT target is a floor on tokens/s per user: 1 / TPOT.
    if tpot > 0:
        ax.axvline(1.0 / tpot, color=PALETTE[3], ls="--", lw=1, label=f"TPOT target {tpot * 1e3:g} ms", gid="pareto:tpot_target")
    ax.set_xlabel("output tokens/s per user")
    ax.set_ylabel("output tokens/s per GPU")
    ax.grid(True, alpha=0.3)
    ax.legend(frameon=False)
    ax.set_title(title or f"Serving {doc.get('model', '')} on {doc.get('gpus', '')} GPUs of {doc.get('system', '')}")
    return _finish(fig, path)
