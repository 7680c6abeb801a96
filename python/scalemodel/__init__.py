"""scalemodel from Python: the command line's operations on the same scenario format.

Every function takes a scenario as a dict, a JSON string or a file path (str or pathlib.Path),
and `overrides` as a dict of dotted paths, e.g. ``{"parallel.tp": 4, "system.preset": "dgx-h100"}``
(the command line's ``--set PATH=VALUE``). Results are plain dicts with the keys of SPEC.md; the
tables inside them (search results, sweep points, op lists, rooflines, validation rows, ...) are
pandas DataFrames with ``tables=True`` (the default; without pandas that raises ImportError saying
so), lists of dicts with ``tables=False``.

Bad input raises :class:`InputError` with the one-line message the command line prints; notes and
warnings the command line writes to stderr (e.g. "needs 90 GiB per GPU") arrive as
:class:`ScalemodelWarning`. Searches and studies release the GIL and use all cores; Ctrl-C stops
them (KeyboardInterrupt).

Example::

    import scalemodel as sm
    r = sm.train("examples/gpt3-175b-64xa100.json", overrides={"parallel.microbatch": 2})
    print(r["step_time_s"], r["mfu"], r["memory"]["peak_bytes_per_gpu"])
    best = sm.search("examples/search-gpt3-175b.json", gpus=1024, top=5)
    print(best["results"][["parallel.tp", "parallel.pp", "step_time_s"]])
"""
from __future__ import annotations

import json
import os
import tempfile
import warnings
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from . import _core

__all__ = [
    "InputError", "ScalemodelWarning", "train", "infer", "roofline", "search", "validate", "sweep",
    "attribute", "sensitivity", "serve_search", "resolve", "presets", "run",
]

Scenario = Union[Mapping[str, Any], str, "os.PathLike[str]"]
Overrides = Optional[Mapping[str, Any]]

_ERROR = "scalemodel: error: "


class InputError(ValueError):
    """Bad input: the message is the command line's one line (field, what was given, what is allowed)."""


class ScalemodelWarning(UserWarning):
    """A note or warning the command line writes to stderr (an assumption made, a layout that does not fit)."""


def _scenario_arg(scenario: Scenario) -> tuple[str, Optional[str]]:
    """(the SCENARIO argument, the text it reads when it is '-')."""
    if isinstance(scenario, Mapping):
        return "-", json.dumps(scenario)
    if isinstance(scenario, os.PathLike):
        return os.fspath(scenario), None
    if isinstance(scenario, str):
        if scenario.lstrip().startswith("{"):
            return "-", scenario
        return scenario, None
    raise TypeError(f"scenario: a dict, a JSON string or a file path, not {type(scenario).__name__}")


def _value_text(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v)


def _sets(overrides: Overrides) -> list[str]:
    if overrides is None:
        return []
    if not isinstance(overrides, Mapping):
        raise TypeError("overrides: a dict of dotted paths, e.g. {'parallel.tp': 4}")
    return [f"{k}={_value_text(v)}" for k, v in overrides.items()]


def _set_args(overrides: Overrides) -> list[str]:
    out: list[str] = []
    for s in _sets(overrides):
        out += ["--set", s]
    return out


def _report(rc: int, err: str) -> None:
    """Raises for a failed run; forwards the other stderr lines as warnings."""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    if rc == 2:
        msg = next((ln[len(_ERROR):] for ln in lines if ln.startswith(_ERROR)), lines[-1] if lines else "bad input")
        raise InputError(msg)
    for ln in lines:
        if not ln.startswith(_ERROR):
            warnings.warn(ln.removeprefix("scalemodel: "), ScalemodelWarning, stacklevel=3)
    if rc == 130:
        raise KeyboardInterrupt("scalemodel: interrupted")
    if rc != 0:
        raise RuntimeError(lines[-1] if lines else f"scalemodel: exit status {rc}")


def run(args: Sequence[str], stdin_text: Optional[str] = None) -> tuple[int, str, str]:
    """Run the command line in-process: ``run(["train", "scenario.json", "--format", "json"])``.

    Returns (exit status, stdout, stderr) exactly as the ``scalemodel`` binary would; nothing is
    raised. `stdin_text` is what a SCENARIO of ``-`` reads.
    """
    o = _core.run(list(args), stdin_text)
    return o.rc, o.out, o.err


def _call(command: str, scenario: Optional[Scenario], extra: Iterable[str], overrides: Overrides) -> dict:
    args = [command]
    stdin_text = None
    if scenario is not None:
        arg, stdin_text = _scenario_arg(scenario)
        args.append(arg)
    args += [str(a) for a in extra] + _set_args(overrides) + ["--format", "json"]
    o = _core.run(args, stdin_text)
    _report(o.rc, o.err)
    return json.loads(o.out)


def _frame(rows: list) -> Any:
    try:
        import pandas as pd
    except ImportError as e:  # no silent change of type: say what is missing and the way round it
        raise ImportError("scalemodel: tables=True (the default) returns pandas DataFrames and pandas is not installed "
                          "(Debian: apt install python3-pandas); pass tables=False for lists of dicts") from e
    return pd.json_normalize(rows, sep=".")


def _tables(v: Any) -> Any:
    """Every non-empty list of dicts, at any depth, as a DataFrame (nested keys joined by '.')."""
    if isinstance(v, dict):
        return {k: _tables(x) for k, x in v.items()}
    if isinstance(v, list) and v and all(isinstance(r, dict) for r in v):
        return _frame(v)
    return v


def _tabulate(doc: dict, tables: bool) -> dict:
    return _tables(doc) if tables else doc


def train(scenario: Scenario = None, overrides: Overrides = None, *, ops: bool = False, tables: bool = True) -> dict:
    """Predict one training step (``scalemodel train``).

    scenario: dict, JSON string or file path (None: the built-in GPT-3 175B on 64 A100s).
    overrides: {"dotted.path": value}, e.g. {"parallel.tp": 4, "training.global_batch": 1024}.
    ops: also return the per-GPU op list of one micro-batch under "ops": per block (embedding,
    layer, head) its "ops" (name, kind, fwd_flop, fwd_bytes, fwd_s, ...) and "comms" tables.
    Returns the result keys of SPEC.md: step_time_s, tokens_per_s, tokens_per_s_per_gpu, mfu,
    breakdown {compute_s, bubble_s, tp_comm_exposed_s, ...}, memory {weights_bytes, ...,
    peak_bytes_per_gpu}, fits_in_memory, parallel, ..., the energy and cost keys when the system
    has the figures (energy_per_step_j, energy_per_token_j, tokens_per_j, power_per_gpu_w,
    energy {compute_j, ...}, cost_per_step_usd, ...), "stages" (one row per pipeline GPU) and
    "overrides". Raises InputError on bad input.
    """
    if scenario is None:
        arg, text = "", None
    else:
        arg, text = _scenario_arg(scenario)
    is_path = text is None
    rc, doc, err = _core.train(arg if is_path else text, is_path, _sets(overrides), ops)
    _report(rc, err)
    return _tabulate(doc, tables)


def infer(scenario: Scenario, overrides: Overrides = None, *, concurrency: Optional[int] = None,
          max_throughput: bool = False, sweep_batch: Union[str, Sequence[int], None] = None,
          tables: bool = True) -> dict:
    """Predict inference (``scalemodel infer``): ttft_s, tpot_s, e2e_latency_s, throughput, memory.

    concurrency: continuous batching with C requests in flight (steady state).
    max_throughput: continuous batching at the concurrency that fits with the most tokens/s/GPU.
    sweep_batch: a latency-throughput curve over batch sizes, "1:256:x2" or [1, 8, 64] ("points").
    """
    extra: list[str] = []
    if concurrency is not None:
        extra += ["--concurrency", str(concurrency)]
    if max_throughput:
        extra.append("--max-throughput")
    if sweep_batch is not None:
        extra += ["--sweep-batch", sweep_batch if isinstance(sweep_batch, str) else ",".join(map(str, sweep_batch))]
    return _tabulate(_call("infer", scenario, extra, overrides), tables)


def roofline(scenario: Scenario, overrides: Overrides = None, *, systems: Optional[Sequence[str]] = None,
             context: Optional[int] = None, tables: bool = True) -> dict:
    """Per-op roofline of inference, prefill and one decode step (``scalemodel roofline``).

    systems: system presets to compare side by side (default: the scenario's).
    context: the decode step's context length (default input_len + output_len/2).
    Returns "systems": per system its accelerator, balance point and "ops" (phase, op, flop,
    bytes, intensity_flop_per_byte, compute_s, memory_s, time_s, bound).
    """
    extra: list[str] = []
    if systems:
        extra += ["--systems", ",".join(systems)]
    if context is not None:
        extra += ["--context", str(context)]
    doc = _call("roofline", scenario, extra, overrides)
    if tables:
        for s in doc["systems"]:
            s["ops"] = _frame(s["ops"])
    return doc


def search(scenario: Scenario, gpus: Union[int, str, Sequence[int], None] = None, overrides: Overrides = None, *,
           top: int = 10, objective: str = "step_time", threads: Optional[int] = None, tokens: Optional[float] = None,
           cross_domain_tp: bool = False, tables: bool = True) -> dict:
    """The best parallel layouts (``scalemodel search``); fields given in `parallel` are held fixed.

    gpus: a count (1024), a list ([256, 512]) or a range ("256:16384:x2") for a scaling curve.
    objective: "step_time", "tokens_per_s_per_gpu", "mfu", "energy" or "cost". tokens: a token budget
    (also reports training days, and training_energy_j / training_cost_usd with the figures). Returns evaluated, feasible, elapsed_s, evaluations_per_s, ... and "results"
    (one row per layout: parallel.*, step_time_s, mfu, memory.*, ...; best first).
    """
    extra: list[str] = ["--no-progress", "--top", str(top), "--objective", objective]
    if gpus is not None:
        extra += ["--gpus", gpus if isinstance(gpus, str) else
                  ",".join(map(str, gpus)) if isinstance(gpus, Sequence) else str(gpus)]
    if threads is not None:
        extra += ["--threads", str(threads)]
    if tokens is not None:
        extra += ["--tokens", repr(float(tokens))]
    if cross_domain_tp:
        extra.append("--cross-domain-tp")
    return _tabulate(_call("search", scenario, extra, overrides), tables)


def validate(dataset: Union[str, "os.PathLike[str]", None] = None, overrides: Overrides = None, *,
             tables: bool = True) -> dict:
    """Predictions against the published measurements (``scalemodel validate``).

    dataset: a CSV in the layout of data/validation/ (default: the built-in sets).
    Returns the summary (rows, mean and worst errors per data set) and "cases", one row per measurement.
    """
    extra = ["--dataset", os.fspath(dataset)] if dataset is not None else []
    return _tabulate(_call("validate", None, extra, overrides), tables)


def _study_args(mode: str, gpus: Any, objective: Optional[str], threads: Optional[int]) -> list[str]:
    extra = ["--mode", mode, "--no-progress"]
    if gpus is not None:
        extra += ["--gpus", str(gpus)]
    if objective is not None:
        extra += ["--objective", objective]
    if threads is not None:
        extra += ["--threads", str(threads)]
    return extra


def sweep(scenario: Scenario, vary: Union[Mapping[str, Union[str, Sequence[Any]]], Sequence[str]], overrides: Overrides = None, *,
          mode: str = "train", gpus: Optional[int] = None, objective: Optional[str] = None,
          threads: Optional[int] = None, tables: bool = True) -> dict:
    """The cartesian grid of varied fields, each point evaluated (``scalemodel sweep``).

    vary: {"dotted.path": [values] or "START:STOP:xF" / "START:STOP:+S"}, e.g.
    {"system.preset": ["dgx-a100-80gb", "dgx-h100"], "parallel.tp": [4, 8]}, or the command line's
    "PATH=LIST" strings, e.g. ["parallel.tp=4,8"]; path "gpus" varies the GPU count of mode "search".
    mode: "train", "infer" or "search" (the best layout per point).
    Returns "points": one row per point (inputs.*, status, result.*).
    """
    extra = _study_args(mode, gpus, objective, threads)
    if isinstance(vary, Mapping):
        for path, values in vary.items():
            extra += ["--vary", f"{path}={values if isinstance(values, str) else ','.join(map(_value_text, values))}"]
    elif not isinstance(vary, str) and all(isinstance(v, str) and "=" in v for v in vary):
        for v in vary:
            extra += ["--vary", v]
    else:
        raise TypeError(f"sweep: vary is {{path: values}} or a list of 'PATH=LIST' strings, not {vary!r}")
    return _tabulate(_call("sweep", scenario, extra, overrides), tables)


def attribute(scenario: Scenario, to: Scenario, overrides: Overrides = None, *, mode: str = "train",
              gpus: Optional[int] = None, objective: Optional[str] = None, threads: Optional[int] = None,
              tables: bool = True) -> dict:
    """Split the ratio of an objective between two scenarios among its causes (``scalemodel attribute``).

    Shapley values over the factor groups that differ (matrix peak, precision, HBM bandwidth, ...):
    the factors' speed-ups multiply to the total. mode "search" re-searches every subset's layout.
    Returns ratio, from_value, to_value and "factors" (name, speedup, fields).
    """
    to_arg, to_text = _scenario_arg(to)
    with tempfile.TemporaryDirectory() as tmp:
        if to_text is not None:  # --to reads a file: SCENARIO may already hold standard input
            to_arg = os.path.join(tmp, "to.json")
            with open(to_arg, "w") as f:
                f.write(to_text)
        extra = _study_args(mode, gpus, objective, threads) + ["--to", to_arg]
        return _tabulate(_call("attribute", scenario, extra, overrides), tables)


def sensitivity(scenario: Scenario, overrides: Overrides = None, *, mode: str = "train", gpus: Optional[int] = None,
                objective: Optional[str] = None, threads: Optional[int] = None, tables: bool = True) -> dict:
    """Elasticity of the objective to every numeric system field, d ln T / d ln x (``scalemodel sensitivity``).

    Returns value and "fields" ranked by effect (field, elasticity, ...).
    """
    return _tabulate(_call("sensitivity", scenario, _study_args(mode, gpus, objective, threads), overrides), tables)


def serve_search(scenario: Scenario, overrides: Overrides = None, *, ttft_ms: float = 0, tpot_ms: float = 0,
                 gpus: Optional[int] = None, top: int = 10, disaggregated: bool = False,
                 objective: str = "tokens_per_gpu", tables: bool = True) -> dict:
    """The best serving configurations under latency targets (``scalemodel serve-search``).

    ttft_ms / tpot_ms: time-to-first-token and time-per-output-token targets (0: none).
    disaggregated: also separate prefill and decode pools (xPyD). objective: "tokens_per_gpu"
    (output tokens/s per GPU) or "tokens_per_j" (output tokens per joule). Returns "best",
    "pareto" and, with disaggregated, "disaggregated"; each configuration carries
    energy_per_token_j when the system has energy figures.
    """
    extra = ["--no-progress", "--ttft-ms", repr(float(ttft_ms)), "--tpot-ms", repr(float(tpot_ms)), "--top", str(top),
             "--objective", objective]
    if gpus is not None:
        extra += ["--gpus", str(gpus)]
    if disaggregated:
        extra.append("--disaggregated")
    return _tabulate(_call("serve-search", scenario, extra, overrides), tables)


def resolve(scenario: Scenario = None, overrides: Overrides = None) -> dict:
    """The scenario with every preset value and default filled in (``scalemodel resolve``)."""
    arg, text = ("", None) if scenario is None else _scenario_arg(scenario)
    args = ["resolve"] + ([arg] if arg else []) + _set_args(overrides)
    o = _core.run(args, text)
    _report(o.rc, o.err)
    return json.loads(o.out)


def presets(*, tables: bool = True) -> dict:
    """The model and system presets with their figures and sources (``scalemodel presets``):
    "models" and "systems", one row per preset."""
    o = _core.run(["presets", "--format", "json"], None)
    _report(o.rc, o.err)
    return _tabulate(json.loads(o.out), tables)
