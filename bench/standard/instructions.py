#!/usr/bin/env python3
"""Instructions per record (callgrind) of the standard benchmark's job done four ways, to show
where row 1's cost sits: the raw loop (parse and write), the raw loop with the six edits written
by hand (the job's floor in Rust), row 8 (Lucille-rs with an empty pipeline: the framework
alone) and row 1 (the six stages). Each is counted on two corpus sizes and the instructions per
record are the difference over the difference in records, so start-up (Python, the module,
threads) cancels out. Instruction counts do not move with a noisy machine; what they do not
show (cache misses, the kernel's scheduling, page faults) is the CPU time's part of the story.

    python3 bench/standard/instructions.py [--small 4000] [--large 12000]

Needs valgrind, cargo (the raw loop is built as in run.py) and the `lucille` package from a
release build.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def callgrind(cmd, corpus, work, lucille_run=False):
    """Instructions callgrind counts for one command (a `lucille run` must report Success)."""
    out = os.path.join(work, "cg.out")
    r = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *cmd],
                       cwd=HERE, capture_output=True, text=True,
                       env=dict(os.environ, LUCILLE_BENCH_CORPUS=corpus))
    text = r.stdout + r.stderr
    if r.returncode != 0 or (lucille_run and "RUN SUMMARY: Success" not in text):
        raise SystemExit(f"{' '.join(cmd)} failed:\n{text[-3000:]}")
    return int(re.search(r"Collected : (\d+)", text).group(1))


def lucille_run(conf, work, *sets):
    cmd = [sys.executable, "-m", "lucille.cli", "run", os.path.join(HERE, conf),
           "--set", f"jsonl.path={os.path.join(work, 'out.jsonl')}", "--set", "worker.threads=2"]
    for s in sets:
        cmd += ["--set", s]
    return cmd


def corpora(work, sizes):
    paths = {}
    for n in sizes:
        paths[n] = os.path.join(work, f"corpus-{n}.jsonl")
        subprocess.run([sys.executable, os.path.join(HERE, "generate.py"), "--docs", str(n),
                        "--out", paths[n]], check=True)
    return paths


def per_record(cmd, paths, work, is_lucille):
    (small, a), (large, b) = sorted(paths.items())
    counts = [callgrind(cmd(p), p, work, is_lucille) for p in (a, b)]
    return (counts[1] - counts[0]) / (large - small)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", type=int, default=4000)
    ap.add_argument("--large", type=int, default=12000)
    a = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "--quiet", "--example", "raw_loop"],
                   cwd=ROOT, check=True)
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    raw_loop = os.path.join(target, "release", "examples", "raw_loop")
    with tempfile.TemporaryDirectory() as work:
        paths = corpora(work, (a.small, a.large))
        out = os.path.join(work, "out.jsonl")
        ways = [
            ("raw loop (parse, write), 2 threads", lambda p: [raw_loop, p, out, "2"], False),
            ("raw loop + the six edits by hand", lambda p: [raw_loop, p, out, "2", "stages"], False),
            ("(8) lucille: no stages -> jsonl", lambda p: lucille_run("no_stages.conf", work), True),
            ("(1) lucille: 6 stages -> jsonl", lambda p: lucille_run("six_stages.conf", work), True),
        ]
        got = {}
        for name, cmd, is_lucille in ways:
            got[name] = per_record(cmd, paths, work, is_lucille)
            print(f"  {name}: {got[name]:,.0f}", file=sys.stderr)
    raw, hand = got[ways[0][0]], got[ways[1][0]]
    print(f"| {'way':<36} | {'instructions / record':>21} | {'x raw loop':>10} | {'x by hand':>9} |")
    print(f"|{'-' * 38}|{'-' * 23}|{'-' * 12}|{'-' * 11}|")
    for name, v in got.items():
        print(f"| {name:<36} | {v:>21,.0f} | {v / raw:>10.2f} | {v / hand:>9.2f} |")
    stages = got[ways[3][0]] - got[ways[2][0]]
    print(f"\nThe six edits: {stages:,.0f} instructions per record as Lucille-rs stages, "
          f"{hand - raw:,.0f} written by hand.")


if __name__ == "__main__":
    main()
