#!/usr/bin/env python3
"""Mutation testing for scalemodel: does the test suite tell a wrong model from a right one?

Generates single-token operator and constant mutants of the model's source, builds each in a
private copy of the tree (never the user's working tree), runs the suite without snapshot tests
and reports which mutants survive. docs/TESTING.md explains the operators and the report.

Usage (from the repository root; `make mutation` passes MUTANTS, SEED and JOBS):
  scripts/mutation.py [--mutants N|all] [--seed S] [--changed-since REV [--changed-max N]] [--jobs J]
                      [--file src/x.cpp ...] [--id ID ...]
                      [--all-dirs] [--headers] [--list] [--floor PCT]
Standard library only.
"""
from __future__ import annotations

import argparse
import dataclasses
import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

# The model layers whose source is mutated by default; add new src/ layers here.
MODEL_DIRS = ["core", "layout", "model", "hardware", "comm", "parallel", "training", "inference", "search",
              "study", "serving"]
# Parsing, writing and the command line: mutated only with --all-dirs.
EDGE_DIRS = ["io", "cli"]
# CTest tests that diff generated output against a checked-in file: they catch any change, not a
# wrong one, so they do not count as killing a mutant; and the packaging test (pip install), which
# a mutant of the model does not reach but would wait for.
SNAPSHOT_TESTS = ["validation_doc_current", "readme_examples_current", "python_pip_install"]
EQUIVALENT_FILE = "tests/mutation/equivalent.txt"
GTEST_BINARY = "scalemodel_tests"  # also its CMake target
# The brute-force and property searches: about 35 of the unit tests' 45 CPU seconds. They run
# after the other unit tests and the scripts, so that a mutant those kill is told in seconds.
SLOW_TESTS = "SmallSpaces/*:Search.*:SearchFloor.*:Placement.AgreesWithBruteForceOnRandomLayouts"
# Everything the non-gtest CTest tests run (the CLI, the fuzz corpus replay, ...): the default
# target, so that a new test executable is built (and relinked against the mutant) too.
ALL_TARGETS = "all"

# --------------------------------------------------------------------------------------------
# Tokenizer: enough C++ to know what is code. Comments, string and character literals and
# preprocessor lines are kept as opaque tokens so that nothing inside them is ever mutated.


@dataclasses.dataclass
class Tok:
    kind: str  # ident, number, op, string, char, comment, pp, ws
    text: str
    start: int  # offset in the file
    line: int  # 1-based

    @property
    def end(self) -> int:
        return self.start + len(self.text)


PUNCTUATORS = sorted("""<<= >>= <=> ->* ... :: -> ++ -- && || <= >= == != += -= *= /= %= &= |= ^= << >>
    { } [ ] ( ) ; : ? , . + - * / % ^ & | ~ ! = < > #""".split(), key=len, reverse=True)
NUMBER_RE = re.compile(r"(?:\d[\d']*\.?[\d']*|\.\d[\d']*)(?:[eE][+-]?\d+)?[A-Za-z_]*|0[xX][0-9a-fA-F']+[uUlL]*")
IDENT_RE = re.compile(r"[A-Za-z_]\w*")
RAW_STRING_RE = re.compile(r'(?:u8|[uUL])?R"([^()\\\s]{0,16})\(')


def tokenize(src: str) -> list[Tok]:
    toks: list[Tok] = []
    i, line, n = 0, 1, len(src)
    at_line_start = True
    while i < n:
        c = src[i]
        start, start_line = i, line
        if c in " \t\r\n\f\v":
            while i < n and src[i] in " \t\r\n\f\v":
                i += 1
            kind = "ws"
        elif c == "#" and at_line_start:  # preprocessor directive, with continuation lines
            while i < n and src[i] != "\n":
                if src[i] == "\\" and i + 1 < n and src[i + 1] == "\n":
                    i += 1
                i += 1
            kind = "pp"
        elif src.startswith("//", i):
            while i < n and src[i] != "\n":
                i += 1
            kind = "comment"
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            i = n if j < 0 else j + 2
            kind = "comment"
        elif (m := RAW_STRING_RE.match(src, i)) and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            close = ")" + m.group(1) + '"'
            j = src.find(close, m.end())
            i = n if j < 0 else j + len(close)
            kind = "string"
        elif c in "\"'" or (c in "uUL" and src[i + 1:i + 2] in ("\"", "'")) or src.startswith(("u8\"", "u8'"), i):
            q_at = i
            while src[q_at] not in "\"'":
                q_at += 1
            q = src[q_at]
            i = q_at + 1
            while i < n and src[i] != q and src[i] != "\n":
                i += 2 if src[i] == "\\" else 1
            i += 1
            kind = "string" if q == '"' else "char"
        elif c.isdigit() or (c == "." and src[i + 1:i + 2].isdigit()):
            m = NUMBER_RE.match(src, i)
            i = m.end()
            kind = "number"
        elif c.isalpha() or c == "_":
            i = IDENT_RE.match(src, i).end()
            kind = "ident"
        else:
            p = next((p for p in PUNCTUATORS if src.startswith(p, i)), c)
            i += len(p)
            kind = "op"
        text = src[start:i]
        line += text.count("\n")
        if kind == "ws":
            at_line_start = at_line_start or "\n" in text
        elif kind != "comment":
            at_line_start = False
        toks.append(Tok(kind, text, start, start_line))
    return toks


# --------------------------------------------------------------------------------------------
# Mutation operators.


@dataclasses.dataclass
class Mutant:
    id: str
    file: str  # relative to the repository root
    line: int
    start: int
    end: int
    replacement: str
    operator: str  # arithmetic, relational, logical, minmax, constant, assignment, delete, bool, ternary
    original_line: str = ""
    mutated_line: str = ""
    status: str = "pending"  # killed, survived, timeout, stillborn, equivalent
    killed_by: str = ""
    seconds: float = 0.0

    def apply(self, src: str) -> str:
        return src[:self.start] + self.replacement + src[self.end:]


ARITH = {"+": ["-"], "-": ["+"], "*": ["/"], "/": ["*"]}
RELATIONAL = {"<": ["<=", ">="], "<=": ["<", ">"], ">": [">=", "<="], ">=": [">", "<"],
              "==": ["!="], "!=": ["=="]}
LOGICAL = {"&&": ["||"], "||": ["&&"]}
COMPOUND = {"+=": ["-="], "-=": ["+="], "*=": ["/="], "/=": ["*="]}
BOOL = {"true": "false", "false": "true"}
MINMAX = {"max": "min", "min": "max"}


def spaced(src: str, t: Tok) -> bool:
    """A binary operator as this code writes it: whitespace on both sides (which excludes
    template angle brackets, pointer and reference declarators, and unary minus)."""
    return t.start > 0 and src[t.start - 1] in " \t\n" and t.end < len(src) and src[t.end] in " \t\n"


def mutate_number(text: str) -> list[str]:
    m = re.fullmatch(r"([\d'.]+(?:[eE][+-]?\d+)?)([A-Za-z_]*)", text)
    if not m or text.startswith(("0x", "0X")):
        return []
    body, suffix = m.group(1).replace("'", ""), m.group(2)
    if suffix and suffix.lower() not in ("u", "l", "ul", "lu", "ll", "ull", "llu", "f"):
        return []  # user-defined literal
    is_float = any(ch in body for ch in ".eE") or suffix.lower() == "f"
    try:
        v = float(body) if is_float else int(body)
    except ValueError:
        return []
    if v == 0:
        out = ["1.0" if is_float else "1"]
    elif v == 1:
        out = ["0.0" if is_float else "0", "2.0" if is_float else "2"]
    elif is_float:
        out = [repr(v * 2)]
    else:
        out = [str(v + 1)]
    if is_float and suffix.lower() == "f":
        suffix = "f"
    return [o + suffix for o in out]


def significant(toks: list[Tok]) -> list[Tok]:
    return [t for t in toks if t.kind not in ("ws", "comment")]


def matching_forward(sig: list[Tok], k: int, stops: set[str]) -> int:
    """Index of the first token at bracket depth 0 from k whose text is in stops, or that closes
    an enclosing bracket; -1 at end of file."""
    depth = 0
    for j in range(k, len(sig)):
        s = sig[j].text
        if sig[j].kind != "op":
            continue
        if depth == 0 and (s in stops or s in ")]}"):
            return j
        if s in "([{":
            depth += 1
        elif s in ")]}":
            depth -= 1
    return -1


def statement_deletion(sig: list[Tok], k: int) -> tuple[int, int] | None:
    """For `lvalue op= expr;` at sig[k] (the operator), the token range of the whole statement,
    if it stands in statement position."""
    j = k - 1
    while j >= 0:
        s = sig[j]
        if s.kind == "ident" or s.text in (".", "->", "::"):
            j -= 1
        elif s.text == "]":  # skip an index expression
            depth = 0
            while j >= 0:
                depth += sig[j].text == "]"
                depth -= sig[j].text == "["
                j -= 1
                if depth == 0:
                    break
        else:
            break
    first = j + 1
    if first == k or (j >= 0 and sig[j].text not in (";", "{", "}", ")", "else")):
        return None
    end = matching_forward(sig, k + 1, {";"})
    if end < 0 or sig[end].text != ";":
        return None
    return first, end


def ternary_swap(src: str, sig: list[Tok], k: int) -> tuple[int, int, str] | None:
    """`c ? a : b` -> `c ? b : a`: the condition picks the other branch."""
    colon = matching_forward(sig, k + 1, {":"})
    # A nested `?` inside the true branch would make the first `:` its own; skip such cases.
    if colon < 0 or sig[colon].text != ":" or any(t.text == "?" for t in sig[k + 1:colon]):
        return None
    end = matching_forward(sig, colon + 1, {";", ","})
    if end < 0 or colon + 1 >= end:
        return None
    a = src[sig[k + 1].start:sig[colon - 1].end]
    b = src[sig[colon + 1].start:sig[end - 1].end]
    if "?" in b or a == b:
        return None
    return sig[k + 1].start, sig[end - 1].end, f"{b} : {a}"


def line_text(src: str, start: int, end: int) -> str:
    ls = src.rfind("\n", 0, start) + 1
    le = src.find("\n", end)
    return src[ls:len(src) if le < 0 else le]


def generate(root: Path, rel: str) -> list[Mutant]:
    src = (root / rel).read_text()
    sig = significant(tokenize(src))
    raw: list[tuple[int, int, str, str, int]] = []  # start, end, replacement, operator, line
    for k, t in enumerate(sig):
        prev = sig[k - 1].text if k else ""
        if t.kind == "op":
            if t.text in ARITH and spaced(src, t):
                raw += [(t.start, t.end, r, "arithmetic", t.line) for r in ARITH[t.text]]
            elif t.text in RELATIONAL and spaced(src, t):
                raw += [(t.start, t.end, r, "relational", t.line) for r in RELATIONAL[t.text]]
            elif t.text in LOGICAL and spaced(src, t):
                raw += [(t.start, t.end, r, "logical", t.line) for r in LOGICAL[t.text]]
            elif t.text == "!" and k + 1 < len(sig) and sig[k + 1].start == t.end:
                raw.append((t.start, t.end, "", "logical", t.line))
            elif t.text in COMPOUND and spaced(src, t):
                raw += [(t.start, t.end, r, "assignment", t.line) for r in COMPOUND[t.text]]
                if (rng := statement_deletion(sig, k)) is not None:
                    a, b = sig[rng[0]], sig[rng[1]]
                    raw.append((a.start, b.end, ";", "delete", a.line))
            elif t.text == "?" and spaced(src, t) and (sw := ternary_swap(src, sig, k)) is not None:
                raw.append((sw[0], sw[1], sw[2], "ternary", t.line))
        elif t.kind == "ident":
            if t.text in BOOL:
                raw.append((t.start, t.end, BOOL[t.text], "bool", t.line))
            elif t.text in MINMAX and prev == "::" and k >= 2 and sig[k - 2].text == "std":
                raw.append((t.start, t.end, MINMAX[t.text], "minmax", t.line))
        elif t.kind == "number":
            raw += [(t.start, t.end, r, "constant", t.line) for r in mutate_number(t.text)]
    mutants: list[Mutant] = []
    seen: dict[tuple[str, str, str], int] = {}
    for start, end, repl, op, line in sorted(raw):
        orig = line_text(src, start, end)
        mutated_src = src[:start] + repl + src[end:]
        mut = line_text(mutated_src, start, start + len(repl))
        # Stable id: the file, the original line's text, the edit, and which occurrence of that
        # same edit on an identical line it is. Moving code up or down keeps the id.
        key = (" ".join(orig.split()), src[start:end], repl)
        occ = seen.get(key, 0)
        seen[key] = occ + 1
        h = hashlib.sha1("\0".join([rel, *key, str(occ)]).encode()).hexdigest()[:10]
        mutants.append(Mutant(h, rel, line, start, end, repl, op, orig.strip(), mut.strip()))
    return mutants


# --------------------------------------------------------------------------------------------
# Selection. A mutant is in the sample when its own draw, a hash of the seed and its id (its
# file, its line's text and its edit), falls below the rate: an edit redraws only the mutants on
# the lines it touches, whatever it does to the rest of the pool. `--mutants N` is a rate of N
# per SAMPLE_SCALE mutants, so it picks about N while the pool is near that size (the count is
# printed), and a smaller N with the same seed is a subset of a larger one.
SAMPLE_SCALE = 5000


def draw(m: Mutant, seed: int) -> float:
    """The mutant's uniform draw in [0, 1), fixed by the seed and its id alone."""
    return int(hashlib.sha1(f"{seed}\0{m.id}".encode()).hexdigest()[:15], 16) / 16 ** 15


def sampled(everything: list[Mutant], n: int, seed: int) -> list[Mutant]:
    return [m for m in everything if draw(m, seed) < n / SAMPLE_SCALE]


def changed_lines(root: Path, base: str, files: list[str]) -> dict[str, set[int]]:
    """Per file, the lines of the working tree added or changed since the commit `base`
    (`git diff -U0`'s new-side hunks); files new since base count whole."""
    out = subprocess.run(["git", "diff", "-U0", "--no-color", "--no-ext-diff", base, "--", *files], cwd=root,
                         stdout=subprocess.PIPE, check=True, text=True).stdout
    lines: dict[str, set[int]] = {}
    current = None
    for raw in out.splitlines():
        if raw.startswith("+++ "):
            current = raw[6:] if raw.startswith("+++ b/") else None
        elif raw.startswith("@@") and current is not None:
            m = re.match(r"@@ -\S+ \+(\d+)(?:,(\d+))? @@", raw)
            start, count = int(m.group(1)), int(m.group(2) or 1)
            lines.setdefault(current, set()).update(range(start, start + count))
    return lines


def source_files(root: Path, dirs: list[str], headers: bool) -> list[str]:
    exts = (".cpp", ".hpp", ".h") if headers else (".cpp",)
    out = []
    for d in dirs:
        base = root / "src" / d
        if base.is_dir():
            out += sorted(str(p.relative_to(root)) for p in base.rglob("*") if p.suffix in exts)
    return out


# --------------------------------------------------------------------------------------------
# Workers: a private copy of the tree each, configured and built once, then one mutant at a time.


def run(cmd: list[str], cwd: Path, timeout: float | None = None):
    """(returncode, combined output); returncode None on timeout, after killing the command's
    whole process group (a hung CLI run under ctest under bash included)."""
    with subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          errors="replace", start_new_session=True) as p:
        try:
            out, _ = p.communicate(timeout=timeout)
            return p.returncode, out
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
            return None, out


def run_sharded(cmd: list[str], cwd: Path, timeout: float, shards: int):
    """A gtest binary split into `shards` processes run at once (GTEST_TOTAL_SHARDS deals the
    tests round-robin, so the slow brute-force cases spread out): the cores a mutant's compile
    leaves idle run its tests. The first shard to fail stops the others. (returncode, output) as
    run(); returncode None on timeout."""
    if shards <= 1:
        return run(cmd, cwd, timeout)
    t_end = time.monotonic() + timeout
    procs = []
    for i in range(shards):
        env = dict(os.environ, GTEST_TOTAL_SHARDS=str(shards), GTEST_SHARD_INDEX=str(i))
        log = tempfile.TemporaryFile("w+", errors="replace")  # noqa: SIM115: closed below
        procs.append((subprocess.Popen(cmd, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, env=env,
                                       start_new_session=True), log))
    rc = 0
    while rc == 0 and any(p.poll() is None for p, _ in procs):
        if time.monotonic() > t_end:
            rc = None
            break
        time.sleep(0.05)
        rc = next((p.returncode for p, _ in procs if p.returncode not in (None, 0)), 0)
    if rc == 0:
        rc = next((p.returncode for p, _ in procs if p.returncode != 0), 0)
    out = []
    for p, log in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        log.seek(0)
        out.append(log.read())
        log.close()
    return rc, "".join(out)


def tracked_files(root: Path) -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         cwd=root, stdout=subprocess.PIPE, check=True).stdout.decode()
    return [f for f in out.split("\0") if f and (root / f).is_file()]


def sync_tree(root: Path, dest: Path) -> None:
    """Copy the working tree (tracked and unignored files) into dest, touching only files whose
    content changed so that the worker's build stays incremental."""
    files = tracked_files(root)
    for f in files:
        s, d = root / f, dest / f
        data = s.read_bytes()
        if d.is_file() and d.read_bytes() == data:
            continue
        d.parent.mkdir(parents=True, exist_ok=True)
        d.write_bytes(data)
        shutil.copymode(s, d)
    keep = set(files)
    for p in dest.rglob("*"):  # files deleted from the tree
        rel = str(p.relative_to(dest))
        if p.is_file() and not rel.startswith("build/") and rel not in keep:
            p.unlink()


@dataclasses.dataclass
class Suite:
    gtest: Path
    scripts: list[str]  # ctest names of the non-gtest, non-snapshot tests


class Worker:
    def __init__(self, root: Path, work: Path, build_type: str, build_jobs: int, build: Path | None = None):
        self.root, self.work, self.build = root, work, build or work / "build"
        self.build_type, self.build_jobs = build_type, build_jobs
        self.suite: Suite | None = None

    def prepare(self) -> str | None:
        if self.work == self.root:  # --in-place: the checkout's own configured build tree
            if not (self.build / "CMakeCache.txt").exists():
                return f"--in-place: {self.build} is not a configured build tree (run `make build` first)"
        else:
            self.work.mkdir(parents=True, exist_ok=True)
            sync_tree(self.root, self.work)
        if not (self.build / "CMakeCache.txt").exists():
            rc, out = run(["cmake", "-S", ".", "-B", str(self.build), f"-DCMAKE_BUILD_TYPE={self.build_type}",
                           "-DSCALEMODEL_BENCH=OFF"], self.work)
            if rc != 0:
                return "configure failed:\n" + out[-3000:]
        rc, out = self.compile([ALL_TARGETS])
        if rc != 0:
            return "build of the unmutated tree failed:\n" + out[-3000:]
        self.suite = discover_suite(self.build)
        return None

    def compile(self, targets: list[str], timeout: float | None = 600):
        return run(["cmake", "--build", str(self.build), "-j", str(self.build_jobs), "--target", *targets], self.work, timeout)

    def test(self, timeout: float, build_cli: bool = False) -> tuple[str, str]:
        """('pass'|'fail'|'timeout'|'stillborn', which test). The CLI and the other test
        executables are relinked (build_cli) only once the unit tests pass: most mutants are
        killed before it is needed."""
        assert self.suite is not None
        t0 = time.monotonic()

        def gtest(only: str):
            left = timeout - (time.monotonic() - t0)
            rc, out = run_sharded([str(self.suite.gtest), "--gtest_fail_fast", "--gtest_brief=1", f"--gtest_filter={only}"],
                                  self.build, max(left, 1.0), self.build_jobs)
            if rc is None:
                return "timeout", "gtest"
            if rc != 0:
                failed = re.findall(r"\[  FAILED  \] (\S+)", out)
                return "fail", failed[0] if failed else f"gtest (exit {rc})"
            return None
        if (verdict := gtest("-" + SLOW_TESTS)) is not None:
            return verdict
        if build_cli:
            t_build = time.monotonic()
            if self.compile([ALL_TARGETS])[0] != 0:
                return "stillborn", ""
            t0 += time.monotonic() - t_build
        for name in self.suite.scripts:
            left = timeout - (time.monotonic() - t0)
            if left <= 0:
                return "timeout", name
            rc, out = run(["ctest", "-R", f"^{re.escape(name)}$", "--output-on-failure",
                           "--timeout", str(int(left) + 1)], self.build, left + 5)
            if rc is None or "***Timeout" in out:
                return "timeout", name
            if rc != 0:
                return "fail", name
        if (verdict := gtest(SLOW_TESTS)) is not None:
            return verdict
        return "pass", ""

    def evaluate(self, m: Mutant, original: str, timeout: float) -> None:
        path = self.work / m.file
        t0 = time.monotonic()
        path.write_text(m.apply(original))
        try:
            if self.compile([GTEST_BINARY])[0] != 0:
                m.status = "stillborn"
                return
            verdict, by = self.test(timeout, build_cli=True)
            m.status = {"pass": "survived", "fail": "killed", "timeout": "timeout", "stillborn": "stillborn"}[verdict]
            m.killed_by = by
        finally:
            path.write_text(original)
            m.seconds = time.monotonic() - t0


def discover_suite(build: Path) -> Suite:
    """The gtest binary and every other registered CTest test (the CLI scripts), read from
    `ctest -N -V` so that new scripts are picked up; snapshot tests are left out."""
    _, out = run(["ctest", "-N", "-V"], build)
    commands = dict(re.findall(r"^(\d+): Test command: (.*)$", out, re.M))
    scripts, gtest = [], None
    for num, name in re.findall(r"^\s*Test\s*#(\d+): (.*)$", out, re.M):
        argv = shlex.split(commands.get(num, ""))
        if argv and Path(argv[0]).name == GTEST_BINARY:
            gtest = Path(argv[0])
        elif argv and name.strip() not in SNAPSHOT_TESTS:
            scripts.append(name.strip())
    if gtest is None:
        gtest = next(build.rglob(GTEST_BINARY))
    return Suite(gtest, scripts)


# --------------------------------------------------------------------------------------------
# Driver.


def read_equivalents(root: Path) -> dict[str, str]:
    eq = {}
    path = root / EQUIVALENT_FILE
    if path.exists():
        for raw in path.read_text().splitlines():
            s = raw.strip()
            if s and not s.startswith("#"):
                parts = s.split(None, 1)
                eq[parts[0]] = parts[1] if len(parts) > 1 else "(no reason given)"
    return eq


def rate(killed: int, survived: int) -> float:
    return 100.0 * killed / (killed + survived) if killed + survived else 100.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mutants", default=None,
                    help=f"sample about N: each mutant whose own draw is below N/{SAMPLE_SCALE}; or 'all' (default 250; all with --file)")
    ap.add_argument("--seed", type=int, default=1, help="sampling seed (default 1)")
    ap.add_argument("--changed-since", metavar="REV", default=None,
                    help="also every mutant on a line changed since commit REV (git diff REV, working tree)")
    ap.add_argument("--changed-max", type=int, default=None,
                    help="with --changed-since: at most this many of those, the lowest draws (with seed + 1) first")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel workers (default nproc)")
    ap.add_argument("--file", action="append", default=[], help="only mutants of this file (repeatable; all of them unless --mutants is given)")
    ap.add_argument("--id", action="append", default=[], help="only this mutant id (repeatable)")
    ap.add_argument("--all-dirs", action="store_true", help="also mutate src/io and src/cli")
    ap.add_argument("--headers", action="store_true", help="also mutate headers (each costs the rebuild of its includers)")
    ap.add_argument("--list", action="store_true", help="list the selected mutants and exit")
    ap.add_argument("--floor", type=float, default=None, help="exit 1 if the kill rate is below this percentage")
    ap.add_argument("--out", default="build-mutation", help="work and report directory (default build-mutation)")
    ap.add_argument("--build-type", default="Release")
    ap.add_argument("--timeout-factor", type=float, default=3.0, help="per-mutant test timeout: factor x baseline + 10 s")
    ap.add_argument("--timeout", type=float, default=None,
                    help="per-mutant test timeout in seconds, without the baseline run (for a tree whose suite just passed)")
    ap.add_argument("--quiet", action="store_true", help="no line per mutant")
    ap.add_argument("--in-place", metavar="BUILD_DIR", default=None,
                    help="mutate the checkout itself and rebuild BUILD_DIR (an already built tree) instead of a copy: "
                         "no build of its own, one worker; each file is restored after its mutant (CI uses it)")
    args = ap.parse_args()

    root = Path(subprocess.run(["git", "rev-parse", "--show-toplevel"], stdout=subprocess.PIPE,
                               check=True, text=True).stdout.strip())
    out_dir = (root / args.out).resolve()
    dirs = MODEL_DIRS + (EDGE_DIRS if args.all_dirs else [])
    files = args.file or source_files(root, dirs, args.headers)
    files = [str((root / f).resolve().relative_to(root)) for f in files]
    everything: list[Mutant] = []
    for f in files:
        everything += generate(root, f)
    all_ids = {m.id for m in everything}
    equivalents = read_equivalents(root)

    if args.id:
        chosen = [m for m in everything if m.id in set(args.id)]
        missing = set(args.id) - all_ids
        if missing:
            print(f"mutation: unknown id(s): {', '.join(sorted(missing))}", file=sys.stderr)
            return 2
    elif args.mutants == "all" or (args.file and args.mutants is None and not args.changed_since):
        chosen = list(everything)
    else:
        chosen = sampled(everything, int(args.mutants or 250), args.seed)
        if args.changed_since:
            changed = changed_lines(root, args.changed_since, files)
            on_changed = [m for m in everything if m.line in changed.get(m.file, ())]
            if args.changed_max is not None and len(on_changed) > args.changed_max:
                print(f"mutation: {len(on_changed)} mutants on the lines changed since {args.changed_since}; "
                      f"running the {args.changed_max} with the lowest draw (--changed-max)", flush=True)
                # Drawn with the next seed: the sample's own draws would pick the mutants it holds.
                on_changed = sorted(on_changed, key=lambda m: draw(m, args.seed + 1))[:args.changed_max]
            in_sample = {m.id for m in chosen}
            chosen += [m for m in on_changed if m.id not in in_sample]
            print(f"mutation: {len(on_changed)} mutants on the lines changed since {args.changed_since} "
                  f"({sum(m.id in in_sample for m in on_changed)} of them also in the sample)", flush=True)
    chosen.sort(key=lambda m: (m.file, m.start, m.id))

    if args.list:
        for m in chosen:
            print(f"{m.id}  {m.file}:{m.line}  {m.operator:10}  {m.original_line}  ->  {m.mutated_line}")
        print(f"{len(chosen)} of {len(everything)} mutants")
        return 0

    for m in chosen:
        if m.id in equivalents:
            m.status = "equivalent"
    todo = [m for m in chosen if m.status == "pending"]

    out_dir.mkdir(parents=True, exist_ok=True)
    run_lock = open(out_dir / "lock", "w")  # noqa: SIM115
    try:
        fcntl.flock(run_lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held until exit
    except OSError:
        print(f"mutation: another run is using {out_dir}; wait for it or pass --out", file=sys.stderr)
        return 2
    jobs = 1 if args.in_place else max(1, min(args.jobs, len({m.file for m in todo}) or 1))
    build_jobs = max(1, (os.cpu_count() or 1) // jobs)  # one worker alone may use every core
    if args.in_place:
        workers = [Worker(root, root, args.build_type, build_jobs, (root / args.in_place).resolve())]
    else:
        workers = [Worker(root, out_dir / f"work-{i}", args.build_type, build_jobs) for i in range(jobs)]
    t_start = time.monotonic()
    print(f"mutation: {len(everything)} mutants generated in {len(files)} files; {len(chosen)} selected "
          f"({len(chosen) - len(todo)} known equivalent); {jobs} worker(s) in {out_dir}", flush=True)
    errors: list[str] = []

    def prep(w: Worker):
        if (e := w.prepare()) is not None:
            errors.append(e)
    threads = [threading.Thread(target=prep, args=(w,)) for w in workers]
    [t.start() for t in threads]
    [t.join() for t in threads]
    if errors:
        print("mutation: " + errors[0], file=sys.stderr)
        return 2
    # The unmutated suite on every worker at once, as the mutants will run: it must pass, and
    # its slowest time (under the same contention) sets the per-mutant timeout.
    # (--timeout: the caller has just run the suite on this tree, as CI's `make test` does.)
    results: list[tuple[str, str, float]] = []

    def base(w: Worker):
        t0 = time.monotonic()
        verdict, by = w.test(3600)
        results.append((verdict, by, time.monotonic() - t0))
    if args.timeout is None:
        threads = [threading.Thread(target=base, args=(w,)) for w in workers]
        [t.start() for t in threads]
        [t.join() for t in threads]
        baseline = max(r[2] for r in results)
        if failed := [r[1] for r in results if r[0] != "pass"]:
            print(f"mutation: the unmutated suite does not pass ({failed[0]}); fix it before mutation testing", file=sys.stderr)
            return 2
        timeout = args.timeout_factor * baseline + 10
        print(f"mutation: baseline suite passes in {baseline:.1f} s (gtest + {', '.join(workers[0].suite.scripts) or 'no scripts'}); "
              f"timeout per mutant {timeout:.0f} s; setup took {time.monotonic() - t_start:.0f} s", flush=True)
    else:
        timeout = args.timeout
        print(f"mutation: no baseline run (--timeout); timeout per mutant {timeout:.0f} s; setup took "
              f"{time.monotonic() - t_start:.0f} s", flush=True)

    # Mutants of one file go to one worker, so each costs a single translation-unit compile.
    by_file: dict[str, list[Mutant]] = {}
    for m in todo:
        by_file.setdefault(m.file, []).append(m)
    queue = sorted(by_file.values(), key=len, reverse=True)
    lock = threading.Lock()
    done = [0]
    t_mut = time.monotonic()

    def work(w: Worker):
        while True:
            with lock:
                if not queue:
                    return
                group = queue.pop(0)
            original = (w.work / group[0].file).read_text()
            for m in group:
                w.evaluate(m, original, timeout)
                with lock:
                    done[0] += 1
                    if not args.quiet:
                        extra = f" by {m.killed_by}" if m.killed_by else ""
                        print(f"[{done[0]:>4}/{len(todo)}] {m.status:9} {m.id} {m.file}:{m.line} "
                              f"{m.operator}: {m.mutated_line}{extra} ({m.seconds:.0f} s)", flush=True)
    threads = [threading.Thread(target=work, args=(w,)) for w in workers]
    [t.start() for t in threads]
    [t.join() for t in threads]
    elapsed = time.monotonic() - t_mut
    if args.in_place:  # leave the build tree as the restored sources describe it
        workers[0].compile([ALL_TARGETS])
    return report(root, out_dir, everything, chosen, equivalents, all_ids, elapsed, jobs, args)


def report(root, out_dir, everything, chosen, equivalents, all_ids, elapsed, jobs, args) -> int:
    count = lambda ms, s: sum(m.status == s for m in ms)  # noqa: E731
    killed, survived = count(chosen, "killed") + count(chosen, "timeout"), count(chosen, "survived")
    kr = rate(killed, survived)
    run_count = len([m for m in chosen if m.status != "equivalent"])
    print()
    print(f"mutants generated {len(everything)}, selected {len(chosen)}, stillborn {count(chosen, 'stillborn')}, "
          f"killed {count(chosen, 'killed')}, timeouts {count(chosen, 'timeout')} (counted killed), "
          f"survived {survived}, equivalent {count(chosen, 'equivalent')}")
    print(f"kill rate {kr:.1f}% = killed / (killed + survived); "
          f"{run_count} mutants in {elapsed / 60:.1f} min on {jobs} worker(s), "
          f"{run_count / max(elapsed / 60, 1e-9):.1f} mutants/min")
    print("per directory:")
    dirs = sorted({m.file.split("/")[1] for m in chosen})
    per_dir = {}
    for d in dirs:
        ms = [m for m in chosen if m.file.split("/")[1] == d]
        k, s = count(ms, "killed") + count(ms, "timeout"), count(ms, "survived")
        per_dir[d] = {"killed": k, "survived": s, "kill_rate": rate(k, s)}
        print(f"  src/{d:10} {rate(k, s):5.1f}%  ({k} killed, {s} survived)")
    survivors = [m for m in chosen if m.status == "survived"]
    if survivors:
        print(f"survivors ({len(survivors)}):")
        for m in survivors:
            print(f"  {m.id}  {m.file}:{m.line}  [{m.operator}]\n      - {m.original_line}\n      + {m.mutated_line}")
    eq = [m for m in chosen if m.status == "equivalent"]
    if eq:
        print(f"equivalent, excluded from the rate ({len(eq)}; {EQUIVALENT_FILE}):")
        for m in eq:
            print(f"  {m.id}  {m.file}:{m.line}  {m.mutated_line}  -- {equivalents[m.id]}")
    stale = sorted(set(equivalents) - all_ids)
    if stale and not args.file:
        print(f"stale ids in {EQUIVALENT_FILE} (no longer generated; remove them): {' '.join(stale)}")
    out_dir.mkdir(parents=True, exist_ok=True)
    fields = ["id", "file", "line", "operator", "status", "killed_by", "seconds", "original_line", "mutated_line"]
    data = {"generated": len(everything), "selected": len(chosen), "seed": args.seed, "jobs": jobs,
            "minutes": elapsed / 60, "kill_rate": kr, "per_directory": per_dir, "stale_equivalents": stale,
            "mutants": [{f: getattr(m, f) for f in fields} for m in chosen]}
    (out_dir / "report.json").write_text(json.dumps(data, indent=1) + "\n")
    with open(out_dir / "report.csv", "w") as fh:
        fh.write(",".join(fields) + "\n")
        for m in chosen:
            fh.write(",".join('"' + str(getattr(m, f)).replace('"', '""') + '"' for f in fields) + "\n")
    print(f"report: {out_dir / 'report.json'} and report.csv")
    if args.floor is not None and kr < args.floor:
        print(f"mutation: kill rate {kr:.1f}% is below the floor {args.floor:.1f}%", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
