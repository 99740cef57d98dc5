"""The machine's own ceiling for the CPU-heavy row: the same per-document Python work as
`cpu_heavy.py`, run by plain Python processes with no Lucille, no broker and no messaging.

One process does N documents' work; then two processes each do N of it at the same time.
Throughput of two over one is what two cores of this machine give pure-Python CPU work: no
framework can scale the CPU-heavy row past it. Rounds alternate; medians are reported.

    python3 bench/distributed/ceiling.py --docs 2000 --rounds 5
"""

import argparse
import statistics
import subprocess
import sys
import time

WORK = """
import sys
for _ in range(int(sys.argv[1])):
    acc = 0
    for i in range(60000):
        acc = (acc * 31 + i) % 1000003
"""


def run(processes: int, docs: int) -> float:
    """Wall seconds for `processes` plain Python processes doing `docs` documents' work each."""
    start = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-c", WORK, str(docs)]) for _ in range(processes)]
    for p in procs:
        if p.wait() != 0:
            raise SystemExit(f"worker process failed with {p.returncode}")
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=2000, help="documents' work per process")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    one, two = [], []
    for _ in range(args.rounds):
        one.append(args.docs / run(1, args.docs))
        two.append(2 * args.docs / run(2, args.docs))
    m1, m2 = statistics.median(one), statistics.median(two)
    print("| processes | docs each | docs/s (median) | range |")
    print("| ---: | ---: | ---: | ---: |")
    print(f"| 1 | {args.docs} | {m1:.0f} | {min(one):.0f}-{max(one):.0f} |")
    print(f"| 2 | {args.docs} | {m2:.0f} | {min(two):.0f}-{max(two):.0f} |")
    ratios = sorted(b / a for a, b in zip(one, two))
    print(f"\n2 over 1: {m2 / m1:.2f}x (medians); per round {', '.join(f'{r:.2f}x' for r in ratios)}")


if __name__ == "__main__":
    main()
