#!/usr/bin/env python3
"""Text-extraction throughput: Lucille-rs's extractors (the release `extract_folder` example, the
engine of TextExtractor and the `documents` handler) on a folder of mixed documents, against
poppler's `pdftotext` on the PDFs of the same folder. Prints a table (documents/s, MB/s).

The corpus is generated with LibreOffice from tests/data/documents (as the tests do) and copied
N times: `python3 bench/extract/run.py [--copies 40] [--threads 1]`. Needs
`source scripts/services/libreoffice.sh` (LibreOffice, poppler-utils)."""

import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "python"))
from test_text_extraction import long_fodt  # noqa: E402

TARGET = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))


def generate(work):
    src, out = work / "src", work / "out"
    src.mkdir()
    out.mkdir()
    for f in (ROOT / "tests" / "data" / "documents").glob("*.fod?"):
        shutil.copy(f, src / f.name)
    (src / "long.fodt").write_text(long_fodt(200))
    profile = (work / "profile").as_uri()

    def convert(fmt, *names):
        subprocess.run(["soffice", f"-env:UserInstallation={profile}", "--headless", "--convert-to", fmt,
                        "--outdir", str(out), *[str(src / n) for n in names]], check=True, capture_output=True)

    convert("pdf", "report.fodt", "slides.fodp", "long.fodt")
    for fmt in ("docx", "odt", "rtf", "epub", "html"):
        convert(fmt, "report.fodt")
    for fmt in ("xlsx", "ods"):
        convert(fmt, "inventory.fods")
    for fmt in ("pptx", "odp"):
        convert(fmt, "slides.fodp")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=40)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--profile", choices=["release", "debug"], default="release",
                    help="which build of the example to run (debug: an unoptimised lower bound)")
    ap.add_argument("--no-build", action="store_true", help="use the example as already built")
    args = ap.parse_args()
    if not args.no_build:
        build = ["cargo", "build", "--quiet", "--example", "extract_folder"]
        if args.profile == "release":
            build.insert(2, "--release")
        subprocess.run(build, cwd=ROOT, check=True)
    work = pathlib.Path(tempfile.mkdtemp(prefix="lucille-extract-bench-"))
    out = generate(work)
    mixed, pdfs = work / "mixed", work / "pdfs"
    mixed.mkdir()
    pdfs.mkdir()
    for i in range(args.copies):
        for f in out.iterdir():
            shutil.copy(f, mixed / f"{i:03d}-{f.name}")
            if f.suffix == ".pdf":
                shutil.copy(f, pdfs / f"{i:03d}-{f.name}")

    def ours(folder):
        r = subprocess.run([str(TARGET / args.profile / "examples" / "extract_folder"), str(folder),
                            "--threads", str(args.threads)], check=True, capture_output=True, text=True)
        fields = dict(kv.split("=") for kv in r.stdout.strip().splitlines()[-1].split())
        return int(fields["files"]), int(fields["bytes"]), float(fields["seconds"]), int(fields["failed"])

    def pdftotext(folder):
        files = sorted(folder.iterdir())
        size = sum(f.stat().st_size for f in files)
        start = time.perf_counter()
        for f in files:  # one process per file, as a pipeline calling it would
            subprocess.run(["pdftotext", "-q", str(f), "-"], check=True, stdout=subprocess.DEVNULL)
        return len(files), size, time.perf_counter() - start, 0

    rows = [
        ("lucille-rs, mixed folder (12 formats)", ours(mixed)),
        ("lucille-rs, PDFs only", ours(pdfs)),
        ("pdftotext (poppler), PDFs only, one process per file", pdftotext(pdfs)),
    ]
    print(f"build: {args.profile}; threads: {args.threads}; copies: {args.copies}")
    print("| extractor | files | MB | failed | seconds | documents/s | MB/s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, (files, size, secs, failed) in rows:
        print(f"| {name} | {files} | {size / 1e6:.1f} | {failed} | {secs:.2f} | {files / secs:.0f} | {size / 1e6 / secs:.1f} |")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
