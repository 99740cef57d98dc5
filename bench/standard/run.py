#!/usr/bin/env python3
"""The standard benchmark: whole `lucille run`s of Lucille's six-stage config over a realistic
JSON-lines corpus, next to references doing the same job on the same corpus in the same run.

    python3 bench/standard/run.py [--docs 1000000] [--runs 3] [--rss-docs 10000000] [--no-peers]

Needs the `lucille` package installed from a release build (`pip install .`; `maturin develop`
builds a debug one unless given `--release`) and cargo for the Rust references (built only when
one of their rows is selected). Prints one table: wall time (median of the runs), docs/s, the
ratio to the raw 2-thread serde_json loop, CPU seconds per document (user + sys, the whole
process tree, median), and peak RSS (max over runs). Every Lucille row also checks the
accounting: the summary's succeeded count equals the corpus.

The peer rows (`pathway`, `bytewax`, `tantivy_py`: the same job in Pathway, Bytewax and
tantivy-py, `peers/`) run with the interpreter of a virtual environment of their own, made on
first use under --work (`peers-venv`, `pip install -r peers/requirements.txt`); `--no-peers`
skips them. Each one's output is checked once per invocation against `pure_python.py`'s output
on the same corpus (`peers/check.py`), and a mismatch stops the bench.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PEERS = os.path.join(HERE, "peers")
PEER_KEYS = ("pathway", "bytewax", "tantivy_py")
# The Rust references' binaries, by the rows that run them.
EXAMPLES = {"raw1": "raw_loop", "raw2": "raw_loop", "raw2s": "raw_loop",
            "tantivy": "tantivy_direct", "tantivy_hand": "tantivy_direct"}


def sh(cmd, **kw):
    """Runs cmd, returns (wall seconds, user+sys seconds, peak RSS bytes, stdout text)."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kw)
    out = proc.stdout.read()
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    text = out.decode("utf-8", "replace")
    if code != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))} exited {code}:\n{text[-4000:]}")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss * 1024, text


def lucille_cmd():
    exe = shutil.which("lucille", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    if exe:
        return [exe]
    return [sys.executable, "-m", "lucille.cli"]


class Row:
    def __init__(self, name, note=""):
        self.name, self.note = name, note
        self.walls, self.cpus, self.rss = [], [], 0

    def add(self, wall, cpu, rss):
        self.walls.append(wall)
        self.cpus.append(cpu)
        self.rss = max(self.rss, rss)

    @property
    def wall(self):
        return statistics.median(self.walls)

    @property
    def cpu(self):
        return statistics.median(self.cpus)


def check_summary(text, docs, row):
    m = re.search(r"(\d+) docs succeeded\. (\d+) docs failed\. (\d+) docs dropped", text)
    if not m or int(m.group(1)) != docs or int(m.group(2)) or int(m.group(3)):
        raise SystemExit(f"{row}: accounting does not match the corpus of {docs}:\n{text[-3000:]}")
    if "RUN SUMMARY: Success" not in text:
        raise SystemExit(f"{row}: the run did not succeed:\n{text[-3000:]}")


def peers_python(work):
    """The peers' interpreter: a virtual environment under `work` with peers/requirements.txt
    installed, made (or brought up to date) when the requirements differ from its last install."""
    venv = os.path.join(work, "peers-venv")
    py = os.path.join(venv, "bin", "python")
    with open(os.path.join(PEERS, "requirements.txt"), encoding="utf-8") as f:
        wanted = f.read()
    marker = os.path.join(venv, "lucille-bench-requirements.txt")
    try:
        with open(marker, encoding="utf-8") as f:
            if f.read() == wanted and os.path.exists(py):
                return py
    except OSError:
        pass
    print(f"installing the peers' packages into {venv}", file=sys.stderr)
    if not os.path.exists(py):
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    subprocess.run([py, "-m", "pip", "install", "--quiet", "-r",
                    os.path.join(PEERS, "requirements.txt")], check=True)
    with open(marker, "w", encoding="utf-8") as f:
        f.write(wanted)
    return py


def count_lines(path):
    n = 0
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            n += block.count(b"\n")
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--work", default=os.environ.get("LUCILLE_BENCH_DIR", "/tmp/lucille-bench"))
    ap.add_argument("--rss-docs", type=int, default=0,
                    help="also run row 1 once on a corpus of this size and compare peak RSS")
    ap.add_argument("--only", default="", help="comma-separated row numbers / reference names to run")
    ap.add_argument("--no-peers", action="store_true",
                    help="skip the peer rows (Pathway, Bytewax, tantivy-py)")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    only = set(filter(None, a.only.split(",")))

    def want(key):
        if a.no_peers and key in PEER_KEYS:
            return False
        return not only or key in only

    def corpus(n):
        path = os.path.join(a.work, f"corpus-{n}.jsonl")
        if not os.path.exists(path):
            print(f"generating {n} records -> {path}", file=sys.stderr)
            subprocess.run([sys.executable, os.path.join(HERE, "generate.py"), "--docs", str(n),
                            "--out", path + ".tmp"], check=True)
            os.replace(path + ".tmp", path)
        return path

    src = corpus(a.docs)
    mb = os.path.getsize(src) / 1e6
    examples = sorted({ex for key, ex in EXAMPLES.items() if want(key)})
    if examples:
        print(f"building the Rust references (cargo build --release {' '.join(examples)})",
              file=sys.stderr)
        cmd = ["cargo", "build", "--release", "--quiet"]
        for ex in examples:
            cmd += ["--example", ex]
        subprocess.run(cmd, cwd=ROOT, check=True)
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    raw_loop = os.path.join(target, "release", "examples", "raw_loop")
    tantivy_direct = os.path.join(target, "release", "examples", "tantivy_direct")
    out = os.path.join(a.work, "out.jsonl")
    index = os.path.join(a.work, "index")
    lucille = lucille_cmd()
    peer_py = peers_python(a.work) if any(want(k) for k in PEER_KEYS) else None
    # The peers' outputs are checked against pure_python.py's output on the same corpus
    # (written once per corpus, again when the corpus or pure_python.py is newer).
    reference = os.path.join(a.work, f"reference-{a.docs}.jsonl")
    if peer_py and not (os.path.exists(reference) and os.path.getmtime(reference) >= max(
            os.path.getmtime(src), os.path.getmtime(os.path.join(HERE, "pure_python.py")))):
        print(f"writing the reference output (pure_python.py) -> {reference}", file=sys.stderr)
        subprocess.run([sys.executable, os.path.join(HERE, "pure_python.py"), src,
                        reference + ".tmp"], check=True)
        os.replace(reference + ".tmp", reference)

    def peer(script, *args, env=None):
        return lambda: sh([peer_py, os.path.join(PEERS, script), *args], cwd=a.work,
                          env=dict(os.environ, **(env or {})))

    def bytewax_row():
        # Bytewax runs as processes: wait4's peak RSS is the largest one's, so take the sum of
        # the processes' peaks that the launcher prints (what the job holds at most at once).
        wall, cpu, rss, text = peer("bytewax_job.py", src, out)()
        m = re.search(r"peak RSS of the processes, summed: (\d+) bytes", text)
        return wall, cpu, max(rss, int(m.group(1))) if m else rss, text

    def run_lucille(conf, *sets, docs=a.docs, corpus_path=src):
        cmd = lucille + ["run", os.path.join(HERE, conf),
                         "--set", f"jsonl.path={out}", "--set", f"tantivy.path={index}"]
        for s in sets:
            cmd += ["--set", s]
        shutil.rmtree(index, ignore_errors=True)
        r = sh(cmd, cwd=HERE, env=dict(os.environ, LUCILLE_BENCH_CORPUS=corpus_path))
        check_summary(r[3], docs, conf)
        return r

    rows = []
    specs = [
        ("cat", Row("cat corpus > /dev/null"), lambda: sh(["sh", "-c", f"cat '{src}' > /dev/null"])),
        ("raw1", Row("raw serde_json loop, 1 thread"), lambda: sh([raw_loop, src, out, "1"])),
        ("raw2", Row("raw serde_json loop, 2 threads"), lambda: sh([raw_loop, src, out, "2"])),
        ("raw2s", Row("raw loop + the six edits by hand, 2 threads"),
         lambda: sh([raw_loop, src, out, "2", "stages"])),
        ("python", Row("pure-Python script (json, re, dicts)"),
         lambda: sh([sys.executable, os.path.join(HERE, "pure_python.py"), src, out])),
        ("1", Row("(1) lucille: 6 stages -> jsonl, 2 workers"),
         lambda: run_lucille("six_stages.conf", "worker.threads=2")),
        ("2", Row("(2) lucille: 6 stages -> jsonl, 1 worker"),
         lambda: run_lucille("six_stages.conf", "worker.threads=1")),
        ("3", Row("(3) lucille: 6 stages + Python stage -> jsonl"),
         lambda: run_lucille("six_stages_python.conf", "worker.threads=2")),
        ("4", Row("(4) lucille: 6 stages -> tantivy"),
         lambda: run_lucille("six_stages.conf", "indexer.type=tantivy")),
        ("tantivy", Row("Tantivy IndexWriter alone, row 1's output, the indexer's schema"), None),
        ("tantivy_hand", Row("Tantivy IndexWriter alone, row 1's output, a hand-written schema"), None),
        ("5", Row("(5) lucille: 6 stages -> nop"), lambda: run_lucille("six_stages.conf", "indexer.type=nop")),
        ("8", Row("(8) lucille: no stages -> jsonl, 2 workers"),
         lambda: run_lucille("no_stages.conf", "worker.threads=2")),
        ("6", Row("(6) lucille: stage-heavy -> nop, 2 workers"),
         lambda: run_lucille("stage_heavy.conf", "worker.threads=2")),
        ("7", Row("(7) lucille: stage-heavy -> nop, 1 worker"),
         lambda: run_lucille("stage_heavy.conf", "worker.threads=1")),
        # The peers (peers/*.py): the same job written for other tools. Pathway on 2 worker
        # threads (PATHWAY_THREADS, what `pathway spawn --threads 2` sets for the program,
        # without the launcher's own second of start-up); Bytewax as 2 processes of 1 worker
        # (its performance guide: processes, not -w threads, which share the GIL); tantivy-py
        # with the writer row 4 uses (128 MB, one indexing thread per core).
        ("pathway", Row("Pathway: 6 edits -> jsonl, 2 threads"),
         peer("pathway_job.py", src, out, env={"PATHWAY_THREADS": "2"})),
        ("bytewax", Row("Bytewax: 6 edits -> jsonl, 2 processes"), bytewax_row),
        ("tantivy_py", Row("tantivy-py: 6 edits -> tantivy"),
         peer("tantivy_py_job.py", src, index)),
    ]
    by_key = {k: r for k, r, _ in specs}
    tantivy_input = os.path.join(a.work, "pipeline-output.jsonl")
    checked = set()

    def check_peer(key):
        """The peer's output against the reference, once per invocation; stops on a mismatch."""
        if key in checked:
            return
        if key == "tantivy_py":
            args = ["tantivy", reference, index]
        else:
            args = ["jsonl", reference, out] + (["--pathway"] if key == "pathway" else [])
        r = subprocess.run([peer_py, os.path.join(PEERS, "check.py"), *args],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"row {key}: its output is not the reference's (pure_python.py on "
                             f"the same corpus); stopping.\n{r.stdout}{r.stderr}")
        print(f"  {key}: output checked: {r.stdout.strip()}", file=sys.stderr)
        checked.add(key)
    for run in range(a.runs):
        # Alternate the rows within each round so machine noise spreads over all of them.
        for key, row, fn in specs:
            if not want(key):
                continue
            if key in ("tantivy", "tantivy_hand"):
                if not os.path.exists(tantivy_input):
                    run_lucille("six_stages.conf", "worker.threads=2")
                    os.replace(out, tantivy_input)
                schema = "hand" if key == "tantivy_hand" else "dynamic"
                fn = lambda: sh([tantivy_direct, tantivy_input, index, schema])  # noqa: E731
            # Every row writes the same output path: delete the last row's output first, or
            # truncating hundreds of MB of page cache is charged to the next row's time.
            if os.path.exists(out):
                os.remove(out)
            if key == "tantivy_py":
                shutil.rmtree(index, ignore_errors=True)
            wall, cpu, rss, text = fn()
            if key in ("1", "2", "3", "8", "raw2s") and count_lines(out) != a.docs:
                raise SystemExit(f"row {key}: {out} does not hold {a.docs} lines")
            if key in PEER_KEYS:
                check_peer(key)
            row.add(wall, cpu, rss)
            print(f"  round {run + 1}: {row.name}: {wall:.2f} s", file=sys.stderr)
    rows = [r for k, r, _ in specs if r.walls]

    raw2 = by_key["raw2"]
    print(f"\nStandard benchmark: {a.docs:,} records, {mb:.0f} MB, {os.cpu_count()} cores, "
          f"median of {a.runs} runs\n")
    head = f"| {'row':<46} | {'wall s':>7} | {'docs/s':>9} | {'x raw 2t':>8} | {'CPU µs/doc':>10} | {'peak RSS MB':>11} |"
    print(head)
    print("|" + "|".join("-" * (len(c)) for c in head.split("|")[1:-1]) + "|")
    for r in rows:
        ratio = f"{raw2.wall / r.wall:.2f}" if raw2.walls else "-"
        print(f"| {r.name:<46} | {r.wall:>7.2f} | {a.docs / r.wall:>9,.0f} | {ratio:>8} | "
              f"{r.cpu / a.docs * 1e6:>10.2f} | {r.rss / 1e6:>11.0f} |")

    def ratio(x, y, inverse=False):
        rx, ry = by_key.get(x), by_key.get(y)
        if not (rx and ry and rx.walls and ry.walls):
            return None
        return ry.wall / rx.wall

    print("\nGoals:")
    goals = [
        ("row 1 vs raw 2-thread loop (>= 0.6)", ratio("1", "raw2"), 0.6),
        ("row 1 vs pure Python (>= 10)", ratio("1", "python"), 10),
        ("row 3 vs pure Python (>= 5)", ratio("3", "python"), 5),
        ("row 4 vs row 1 (>= 0.4)", ratio("4", "1"), 0.4),
        ("row 4 vs Tantivy alone (>= 0.9)", ratio("4", "tantivy"), 0.9),
        ("row 3 vs row 1 (>= 0.85)", ratio("3", "1"), 0.85),
        ("row 1 vs the edits by hand, raw2s (>= 0.8)", ratio("1", "raw2s"), 0.8),
        ("Tantivy alone: indexer's schema vs by hand", ratio("tantivy", "tantivy_hand"), None),
        ("stage-heavy: 2 workers vs 1 (>= 1.8)", ratio("6", "7"), 1.8),
        # The peers: how many times faster (wall) the Lucille row is; no goal.
        ("row 1 vs Pathway", ratio("1", "pathway"), None),
        ("row 1 vs Bytewax", ratio("1", "bytewax"), None),
        ("row 4 vs tantivy-py", ratio("4", "tantivy_py"), None),
    ]
    for label, value, goal in goals:
        if value is None:
            continue
        verdict = "" if goal is None else ("met" if value >= goal else "NOT met")
        print(f"  {label:<42} {value:6.2f}  {verdict}")
    if by_key["1"].walls and raw2.walls:
        cpu_ratio = by_key["1"].cpu / raw2.cpu
        print(f"  {'row 1 CPU/doc vs raw loop (<= 2)':<42} {cpu_ratio:6.2f}  {'met' if cpu_ratio <= 2 else 'NOT met'}")
    # Where row 1's CPU goes: the framework alone (row 8: the same run with no stages) against
    # the raw loop doing the same job (parse and write), and the whole job against the same
    # six edits written by hand in Rust (raw2s).
    for label, x, y, most in (("row 8 CPU/doc vs raw loop (<= 1.15)", "8", "raw2", 1.15),
                              ("row 1 CPU/doc vs raw2s (<= 1.25)", "1", "raw2s", 1.25)):
        if by_key[x].walls and by_key[y].walls:
            value = by_key[x].cpu / by_key[y].cpu
            print(f"  {label:<42} {value:6.2f}  {'met' if value <= most else 'NOT met'}")

    if a.rss_docs:
        big = corpus(a.rss_docs)
        _, _, rss_big, _ = run_lucille("six_stages.conf", "worker.threads=2", docs=a.rss_docs, corpus_path=big)
        base = by_key["1"].rss or run_lucille("six_stages.conf", "worker.threads=2")[2]
        print(f"\nPeak RSS, row 1: {a.docs:,} docs {base / 1e6:.0f} MB; {a.rss_docs:,} docs "
              f"{rss_big / 1e6:.0f} MB ({(rss_big / base - 1) * 100:+.1f}%)")
    for p in (out, tantivy_input):
        if os.path.exists(p):
            os.remove(p)
    shutil.rmtree(index, ignore_errors=True)


if __name__ == "__main__":
    main()
