#!/usr/bin/env python3
"""The conformance table: the counts the conformance tests measured in this run, in one table.

Each conformance test writes its counts to `<target>/tmp/conformance/*.json` (the HOCON and
JSONata suites from `cargo test`, Lucille's own configs from pytest) when its corpus under
`../shared/conformance` is there (`scripts/test.sh` clears the folder first). Only measured
counts are printed; the suites that were not measured get one line saying why.
"""

import json
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED = (ROOT / ".." / "shared" / "conformance").resolve()
# Each suite's counts file (`<name>.json`) and the corpus its test reads.
SUITES = {
    "hocon": ("HOCON", SHARED),
    "jsonata": ("JSONata", SHARED / "jsonata-suite"),
    "lucille-run": ("Lucille's run configs", SHARED / "lucille"),
    "lucille-stages": ("Lucille's stage confs", SHARED / "lucille"),
}


def main() -> int:
    folder = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "tmp" / "conformance"
    rows: list[tuple[str, str]] = []
    why_not: dict[str, list[str]] = {}
    for name, (label, corpus) in SUITES.items():
        path = folder / f"{name}.json"
        if not path.exists():
            absent = SHARED if not SHARED.is_dir() else corpus
            reason = f"no corpus at {absent}" if not absent.is_dir() else "tests not run"
            why_not.setdefault(reason, []).append(label)
            continue
        for r in json.loads(path.read_text()):
            share = 100.0 * r["passed"] / r["total"] if r["total"] else 100.0
            rows.append((r["name"], f"{r['passed']} of {r['total']} ({share:.1f}%)"))
    if rows:
        width = max(len(n) for n, _ in rows)
        print(f"| {'conformance measure'.ljust(width)} | count |")
        print(f"|{'-' * (width + 2)}|-------|")
        for n, c in rows:
            print(f"| {n.ljust(width)} | {c} |")
    if why_not:
        reasons = "; ".join(f"{', '.join(labels)}: {reason}" for reason, labels in why_not.items())
        print(f"conformance {'also ' if rows else ''}not measured in this run ({reasons})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
