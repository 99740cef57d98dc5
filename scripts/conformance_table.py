#!/usr/bin/env python3
"""The conformance table: every count the conformance tests measured in this run, in one table.

Each conformance test writes its counts to `<target>/tmp/conformance/*.json` (the HOCON and
JSONata suites from `cargo test`, Lucille's own configs from pytest); this prints them. A count
that was not measured (`../shared/conformance` absent, or the test not run) is said so.
"""

import json
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXPECTED = ["lucille-run", "lucille-stages", "hocon", "jsonata"]


def main() -> int:
    folder = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "tmp" / "conformance"
    rows: list[tuple[str, str]] = []
    for name in EXPECTED:
        path = folder / f"{name}.json"
        if not path.exists():
            rows.append((name, "not measured in this run"))
            continue
        for r in json.loads(path.read_text()):
            share = 100.0 * r["passed"] / r["total"] if r["total"] else 100.0
            rows.append((r["name"], f"{r['passed']} of {r['total']} ({share:.1f}%)"))
    width = max(len(n) for n, _ in rows)
    print(f"| {'conformance measure'.ljust(width)} | count |")
    print(f"|{'-' * (width + 2)}|-------|")
    for n, c in rows:
        print(f"| {n.ljust(width)} | {c} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
