"""The `lucille` command line."""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

import lucille


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lucille", description="Lucille-rs search ETL")
    parser.add_argument("--version", action="version", version=f"lucille-rs {lucille.__version__}")
    sub = parser.add_subparsers(dest="command")
    show = sub.add_parser("doc", help="parse a document's JSON and print it back (validation aid)")
    show.add_argument("json", help="document JSON text, or - to read it from stdin")
    args = parser.parse_args(argv)
    if args.command == "doc":
        text = sys.stdin.read() if args.json == "-" else args.json
        try:
            doc = lucille.Document.from_json(text)
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        print(doc.to_json())
        return 0
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
