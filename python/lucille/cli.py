"""The `lucille` command line: run, validate and render configs."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from typing import Sequence

import lucille


def _interrupt(signum, frame):  # SIGTERM behaves like Ctrl-C: a graceful stop.
    raise KeyboardInterrupt


def _overrides(items: Sequence[str]) -> list[str]:
    for item in items:
        if "=" not in item:
            raise SystemExit(f"error: --set expects path=value, got {item!r}")
    return list(items)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lucille", description="Lucille-rs search ETL")
    parser.add_argument("--version", action="version", version=f"lucille-rs {lucille.__version__}")
    sub = parser.add_subparsers(dest="command")

    run_p = sub.add_parser("run", help="run a config; exit 0 only on Success")
    run_p.add_argument("config")
    run_p.add_argument("--mode", choices=["local", "test"], default="local")
    run_p.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                       help="override a config value (repeatable)")

    val_p = sub.add_parser("validate", help="list every config error; exit 1 if any")
    val_p.add_argument("config")
    val_p.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE")

    ren_p = sub.add_parser("render", help="print the resolved config with secrets redacted")
    ren_p.add_argument("config")
    ren_p.add_argument("--json", action="store_true", help="JSON instead of HOCON")
    ren_p.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE")

    doc_p = sub.add_parser("doc", help="parse a document's JSON and print it back (validation aid)")
    doc_p.add_argument("json", help="document JSON text, or - to read it from stdin")

    args = parser.parse_args(argv)
    if args.command == "run":
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        signal.signal(signal.SIGTERM, _interrupt)
        try:
            result = lucille.run(args.config, mode=args.mode, overrides=_overrides(args.overrides))
        except lucille.ConfigError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        print(result.summary)
        return 0 if result.status == "Success" else 1
    if args.command == "validate":
        errors = lucille.validate(args.config, overrides=_overrides(args.overrides))
        if errors:
            print(f"{len(errors)} config error{'s' if len(errors) != 1 else ''}:", file=sys.stderr)
            for e in errors:
                print(f"  - {e}", file=sys.stderr)
            return 1
        print(f"{args.config}: valid")
        return 0
    if args.command == "render":
        try:
            print(lucille.render(args.config, overrides=_overrides(args.overrides), json=args.json))
        except lucille.ConfigError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        return 0
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
