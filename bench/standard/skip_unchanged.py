"""skipUnchanged on the standard benchmark's row 1 (six stages -> JSONL, 2 workers): what a run
costs when nothing, or 1% of the records, changed since the last one.

Cases, each the whole `lucille run` process, median of --runs, side by side in one run:
  row 1                  the plain run (no skipUnchanged), the reference
  first run              skipUnchanged on, empty store: the cost of recording every document
  nothing changed        the corpus file as it was: its size and mtime match, it is not read
  touched, same content  the file's mtime changed: every record is read and checked, none
                         processed (what a source without change tokens costs)
  1% changed             1% of the records changed (and the file's mtime with them): exactly
                         those reach the stages and the output (checked)

    python bench/standard/skip_unchanged.py --docs 200000 --runs 3
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from run import lucille_cmd, sh  # noqa: E402  (the standard benchmark's helpers)


def counts(text):
    m = re.search(r"(\d+) docs succeeded\. (\d+) docs failed\. (\d+) docs dropped\.(?: (\d+) docs unchanged\.)?", text)
    if not m or "RUN SUMMARY: Success" not in text:
        raise SystemExit(f"the run did not succeed:\n{text[-3000:]}")
    return tuple(int(g or 0) for g in m.groups())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=200_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--work", default=os.environ.get("LUCILLE_BENCH_DIR", "/tmp/lucille-bench"))
    a = ap.parse_args()
    source = os.path.join(a.work, f"corpus-{a.docs}.jsonl")
    if not os.path.exists(source):
        subprocess.run([sys.executable, os.path.join(HERE, "generate.py"), "--docs", str(a.docs),
                        "--out", source], check=True)
    work = os.path.join(a.work, "skip-unchanged")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    corpus = os.path.join(work, "corpus.jsonl")
    out = os.path.join(work, "out.jsonl")
    store = out + ".unchanged.sqlite"
    plain = open(os.path.join(HERE, "six_stages.conf")).read()
    skipping = plain.replace('fileHandlers { jsonl { idField: "id" } } }',
                             'fileHandlers { jsonl { idField: "id" } }, skipUnchanged: true }')
    assert skipping != plain
    confs = {}
    for name, text in (("plain", plain), ("skip", skipping)):
        confs[name] = os.path.join(work, f"{name}.conf")
        with open(confs[name], "w") as f:
            f.write(text + f'\njsonl {{ path: "{out}", append: true }}\n')
    lucille = lucille_cmd()
    env = dict(os.environ, LUCILLE_BENCH_CORPUS=corpus)

    def run(conf):
        wall, cpu, rss, text = sh(lucille + ["run", confs[conf]], cwd=work, env=env)
        return wall, cpu, rss, counts(text)

    def fresh():
        shutil.copyfile(source, corpus)
        for p in (out, store, store + "-wal", store + "-shm"):
            if os.path.exists(p):
                os.remove(p)

    # The corpus is streamed, never held: a child's peak RSS (ru_maxrss) starts from this
    # process's at the fork.
    changed_every = 100
    rows = {k: [] for k in ("row 1", "first run", "nothing changed", "touched, same content", "1% changed")}
    checks = []
    for r in range(a.runs):
        fresh()
        rows["row 1"].append(run("plain"))
        fresh()
        rows["first run"].append(run("skip"))
        rows["nothing changed"].append(run("skip"))
        now = time.time() + 10 + r
        os.utime(corpus, (now, now))
        rows["touched, same content"].append(run("skip"))
        # 1% of the records changed: each changed record's body gets a new sentence.
        with open(source) as src, open(corpus, "w") as f:
            for i, line in enumerate(src):
                if i % changed_every == r % changed_every:
                    rec = json.loads(line)
                    rec["body"] = f"Revised in run {r}. " + rec["body"]
                    line = json.dumps(rec) + "\n"
                f.write(line)
        before = sum(1 for _ in open(out))
        result = run("skip")
        rows["1% changed"].append(result)
        appended = sum(1 for _ in open(out)) - before
        expected = len(range(r % changed_every, a.docs, changed_every))
        checks.append((result[3], appended, expected))
        if result[3][0] != expected or result[3][3] != a.docs - expected or appended != expected:
            raise SystemExit(f"1% changed: expected {expected} processed and appended, "
                             f"{a.docs - expected} unchanged; got counts {result[3]}, {appended} appended")
    # Every record processed where nothing was skipped; none where nothing changed.
    assert all(x[3][0] == a.docs for x in rows["row 1"] + rows["first run"])
    assert all(x[3][:3] == (0, 0, 0) and x[3][3] == a.docs
               for x in rows["nothing changed"] + rows["touched, same content"])

    base = statistics.median(x[0] for x in rows["row 1"])
    first = statistics.median(x[0] for x in rows["first run"])
    print(f"skipUnchanged on row 1's corpus: {a.docs} records, median of {a.runs}, whole process")
    print()
    print("| case | wall s | CPU s | peak RSS MB | succeeded / unchanged | vs first run | vs row 1 |")
    print("| --- | ---: | ---: | ---: | --- | ---: | ---: |")
    for name, rs in rows.items():
        wall = statistics.median(x[0] for x in rs)
        cpu = statistics.median(x[1] for x in rs)
        rss = max(x[2] for x in rs) / 1e6
        c = rs[-1][3]
        print(f"| {name} | {wall:.2f} | {cpu:.2f} | {rss:.0f} | {c[0]} / {c[3]} | "
              f"{wall / first:.2f} | {wall / base:.2f} |")
    print()
    print("1% changed, each run: (succeeded, failed, dropped, unchanged), lines appended, expected:",
          checks)


if __name__ == "__main__":
    main()
