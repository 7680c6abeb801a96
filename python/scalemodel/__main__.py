"""`python3 -m scalemodel plot KIND SCENARIO ... -o FILE` (what `scalemodel plot` runs).

Kinds: breakdown, memory, roofline, scaling, sweep, waterfall, pareto, and report (an HTML file). Bad input exits 2 with one
line, as the command line does.
"""
from __future__ import annotations

import argparse
import sys

KINDS = {
    "breakdown": "step time as stacked bars, one per system (--systems) or per layout (--gpus N: the search's --top best)",
    "memory": "memory per GPU as stacked bars against HBM capacity (same choices as breakdown)",
    "roofline": "every op of prefill and decode under each system's roofline (--systems to compare)",
    "scaling": "step time and training days of the best layout vs GPUs (--gpus RANGE, --tokens)",
    "sweep": "a line plot or heatmap of a sweep (--vary PATH=LIST, once or twice)",
    "waterfall": "the attribution of a speed-up to its causes (--to OTHER)",
    "pareto": "serving: tokens/s/GPU vs tokens/s/user (--gpus, --ttft-ms, --tpot-ms)",
    "report": "one self-contained HTML file (-o FILE.html): the numbers, tables and charts of train, or of search with --gpus N",
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line and exit status 2, as the C++ command line
        sys.stderr.write(f"scalemodel: error: plot: {message} (see scalemodel plot --help)\n")
        sys.exit(2)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="scalemodel plot", description="Draw a chart of a scalemodel result.",
                epilog="kinds:\n" + "\n".join(f"  {k:<10} {v}" for k, v in KINDS.items()),
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kind", choices=sorted(KINDS), metavar="KIND", help="one of: " + ", ".join(KINDS))
    p.add_argument("scenario", metavar="SCENARIO", help="scenario JSON file")
    p.add_argument("-o", "--output", required=True, help="the image: .png, .svg or .pdf (report: .html)")
    p.add_argument("--set", action="append", default=[], metavar="PATH=VALUE", help="override a field (repeatable)")
    p.add_argument("--systems", help="system presets side by side: A,B,...")
    p.add_argument("--gpus", help="GPU count (breakdown/memory/pareto/sweep/waterfall) or range (scaling)")
    p.add_argument("--top", type=int, default=5, help="layouts shown by breakdown/memory with --gpus (default 5)")
    p.add_argument("--tokens", type=float, help="scaling: a token budget, for training days")
    p.add_argument("--context", type=int, help="roofline: the decode step's context length")
    p.add_argument("--vary", action="append", default=[], metavar="PATH=LIST", help="sweep: a varied field (repeatable)")
    p.add_argument("--mode", default=None, help="sweep/waterfall: train, infer or search")
    p.add_argument("--objective", help="sweep/waterfall: the result key to judge by")
    p.add_argument("--to", help="waterfall: the other scenario")
    p.add_argument("--ttft-ms", type=float, default=0.0, help="pareto: time-to-first-token target")
    p.add_argument("--tpot-ms", type=float, default=0.0, help="pareto: time-per-output-token target")
    p.add_argument("--title", help="the chart's title (default: says the scenario)")
    return p


def _overrides(sets: list[str]) -> dict:
    out = {}
    for s in sets:
        path, eq, value = s.partition("=")
        if not eq or not path:
            raise ValueError(f"--set: got \"{s}\"; expected PATH=VALUE, e.g. parallel.tp=8")
        out[path] = value
    return out


def plot_main(argv: list[str]) -> int:
    a = _parser().parse_args(argv)
    a.command = " ".join(["scalemodel plot", *argv])
    wanted = (".html",) if a.kind == "report" else (".png", ".svg", ".pdf")
    if not a.output.lower().endswith(wanted):
        sys.stderr.write(f"scalemodel: error: -o: got \"{a.output}\"; a file ending {' or '.join(wanted)}\n")
        return 2
    import warnings

    warnings.showwarning = lambda msg, *rest: sys.stderr.write(f"scalemodel: {msg}\n")
    import matplotlib

    matplotlib.use("Agg")  # files only: no display needed
    import scalemodel as sm
    from scalemodel import plot as smp

    # A chart that takes more than two seconds (a search, an attribution) says so on a terminal's
    # stderr, then how long it took (SCALEMODEL_PLOT_PROGRESS_S: another delay, and off a terminal too).
    import os
    import threading
    import time

    started = time.monotonic()
    announced = threading.Event()

    def announce() -> None:
        announced.set()
        sys.stderr.write(f"scalemodel plot: computing the {a.kind} chart ...\n")
        sys.stderr.flush()

    delay = os.environ.get("SCALEMODEL_PLOT_PROGRESS_S")
    timer = threading.Timer(float(delay) if delay else PROGRESS_AFTER_S, announce)
    timer.daemon = True
    if delay or sys.stderr.isatty():
        timer.start()
    try:
        return _draw(a, sm, smp)
    finally:
        timer.cancel()
        if announced.is_set():
            sys.stderr.write(f"scalemodel plot: done in {time.monotonic() - started:.1f} s\n")


PROGRESS_AFTER_S = 2.0


def _draw(a, sm, smp) -> int:
    try:
        over = _overrides(a.set)
        systems = a.systems.split(",") if a.systems else None
        if a.kind in ("breakdown", "memory"):
            if a.gpus:
                data = sm.search(a.scenario, int(a.gpus), over, top=a.top)
            elif systems:
                data = [sm.train(a.scenario, {**over, "system.preset": s}) for s in systems]
            else:
                data = [sm.train(a.scenario, over)]
            (smp.breakdown if a.kind == "breakdown" else smp.memory)(data, title=a.title, path=a.output)
        elif a.kind == "roofline":
            smp.roofline(sm.roofline(a.scenario, over, systems=systems, context=a.context), title=a.title, path=a.output)
        elif a.kind == "scaling":
            if not a.gpus:
                raise sm.InputError("--gpus: got nothing; scaling needs a GPU range, e.g. 256:8192:x2")
            smp.scaling(sm.search(a.scenario, a.gpus, over, top=1, tokens=a.tokens), title=a.title, path=a.output)
        elif a.kind == "sweep":
            if not a.vary:
                raise sm.InputError("--vary: got nothing; sweep needs PATH=LIST, e.g. parallel.microbatch=1,2,4")
            vary = {}
            for v in a.vary:
                path, eq, values = v.partition("=")
                vary[path] = values
            doc = sm.sweep(a.scenario, vary, over, mode=a.mode or "train", gpus=int(a.gpus) if a.gpus else None,
                           objective=a.objective)
            smp.sweep(doc, title=a.title, path=a.output)
        elif a.kind == "waterfall":
            if not a.to:
                raise sm.InputError("--to: got nothing; waterfall needs the other scenario")
            doc = sm.attribute(a.scenario, a.to, over, mode=a.mode or "train", gpus=int(a.gpus) if a.gpus else None,
                               objective=a.objective)
            smp.waterfall(doc, title=a.title, path=a.output)
        elif a.kind == "report":
            from scalemodel.report import report_html

            if a.gpus:
                found = sm.search(a.scenario, int(a.gpus), over, top=a.top, tables=False)
                page = report_html(found["results"], search=found, command=a.command, title=a.title)
            else:
                page = report_html([sm.train(a.scenario, over, tables=False)], command=a.command, title=a.title)
            with open(a.output, "w", encoding="utf-8") as f:
                f.write(page)
        elif a.kind == "pareto":
            doc = sm.serve_search(a.scenario, over, ttft_ms=a.ttft_ms, tpot_ms=a.tpot_ms,
                                  gpus=int(a.gpus) if a.gpus else None)
            smp.pareto(doc, title=a.title, path=a.output)
    except (sm.InputError, ValueError) as e:
        sys.stderr.write(f"scalemodel: error: {e}\n")
        return 2
    except OSError as e:
        sys.stderr.write(f"scalemodel: error: -o: got \"{a.output}\"; cannot write it ({e.strerror})\n")
        return 2
    print(a.output)
    return 0


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "plot":
        sys.stderr.write("scalemodel: error: usage: python3 -m scalemodel plot KIND SCENARIO ... -o FILE\n")
        return 2
    return plot_main(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
