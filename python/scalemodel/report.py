"""One self-contained HTML file of a training result or a layout search: the numbers, the tables
and the charts (inline SVG), to send to a colleague. Nothing in it is fetched when it is opened."""
from __future__ import annotations

import datetime
import html
import io
from typing import Any, Mapping, Optional, Sequence

from . import plot as smp

_STYLE = """body{font-family:system-ui,sans-serif;max-width:60em;margin:1em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:0.6em 0;font-variant-numeric:tabular-nums}
th,td{padding:0.2em 0.7em;border-bottom:1px solid #ddd;text-align:right}th:first-child,td:first-child{text-align:left}
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.4em}.note{color:#555;font-size:0.9em}
svg{max-width:100%;height:auto}"""


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    text = buf.getvalue()
    return text[text.index("<svg"):]  # the XML prologue and DOCTYPE stay out of the page


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _seconds(s: float) -> str:
    return f"{s:.3f} s" if s >= 1 else f"{s * 1e3:.2f} ms"


def report_html(runs: Sequence[Mapping[str, Any]], *, search: Optional[Mapping[str, Any]] = None,
                command: str = "", title: Optional[str] = None) -> str:
    """The HTML page of train() results (one or several) or of a search()'s results (tables=False)."""
    import matplotlib.pyplot as plt

    if not runs:
        raise ValueError("report: no result to report (the search found no layout that fits in memory)")
    first = runs[0]
    title = title or f"{first.get('model', 'model')} on {first.get('gpus', '?')} x {first.get('system', 'system')}"
    labels = smp._layout_labels(runs)
    summary = _table(["layout", "GPUs", "step time", "tokens/s per GPU", "MFU", "memory per GPU", "fits"],
                     [[label, r.get("gpus", ""), _seconds(float(r["step_time_s"])), f"{float(r['tokens_per_s_per_gpu']):.1f}",
                       f"{100 * float(r['mfu']):.1f}%", f"{float(r['memory']['peak_bytes_per_gpu']) / smp.GIB:.2f} GiB",
                       "yes" if r.get("fits_in_memory") else "no"] for label, r in zip(labels, runs)])
    parts = [(k, n) for k, n in smp.BREAKDOWN_PARTS if any(float(r["breakdown"].get(k, 0.0)) > 0 for r in runs)]
    breakdown = _table(["layout", *[n for _, n in parts]],
                       [[label, *[_seconds(float(r["breakdown"].get(k, 0.0))) for k, _ in parts]] for label, r in zip(labels, runs)])
    memory = _table(["layout", *[n for _, n in smp.MEMORY_PARTS]],
                    [[label, *[f"{float(r['memory'].get(k, 0.0)) / smp.GIB:.2f} GiB" for k, _ in smp.MEMORY_PARTS]]
                     for label, r in zip(labels, runs)])
    figs = [smp.breakdown(list(runs)), smp.memory(list(runs))]
    charts = "".join(f"<figure>{_svg(f)}</figure>" for f in figs)
    for f in figs:
        plt.close(f)
    searched = ""
    if search is not None:
        searched = (f"<p class=note>{int(search.get('candidates', 0)):,} valid layouts, {int(search.get('evaluated', 0)):,} costed, "
                    f"{int(search.get('feasible', 0)):,} fit in memory; the best {len(runs)} by {html.escape(str(search.get('objective', '')))}.</p>")
    made = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8><meta name=viewport content='width=device-width, initial-scale=1'>"
            f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
            f"<h1>{html.escape(title)}</h1>"
            f"<p class=note>scalemodel report{': <code>' + html.escape(command) + '</code>' if command else ''}; made {made}.</p>"
            f"{searched}<h2>Summary</h2>{summary}<h2>Where the step time goes</h2>{breakdown}"
            f"<h2>Memory per GPU</h2>{memory}<h2>Charts</h2>{charts}</body></html>\n")
