"""The `lucille` command line: run, validate and render configs; search the embedded index."""

from __future__ import annotations

import argparse
import html as htmllib
import json
import logging
import os
import signal
import sys
from typing import Sequence

import lucille


def _interrupt(signum, frame):  # SIGTERM behaves like Ctrl-C: a graceful stop; again: stop now.
    raise KeyboardInterrupt


def _overrides(items: Sequence[str]) -> list[str]:
    for item in items:
        if "=" not in item:
            raise SystemExit(f"error: --set expects path=value, got {item!r}")
    return list(items)


def _non_negative(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"{n} is negative: give 0 for no limit")
    return n


def _log_format_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--log-format", choices=["text", "json"], default=None,
                   help="how log lines are written: text, or json (one object per line); "
                        "overrides the config's log.format")


def _metrics_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--metrics-port", type=int, default=None, metavar="PORT",
                   help="serve /metrics (Prometheus), /healthz and /ready on this port "
                        "(0: a free one, logged); overrides the config's metrics.port")
    p.add_argument("--metrics-host", default=None, metavar="HOST",
                   help="the address of that endpoint (default 127.0.0.1); overrides metrics.host")


def _run_overrides(args: argparse.Namespace) -> list[str]:
    """--set overrides, then --log-format and --metrics-port / --metrics-host as overrides of
    log.format and metrics.port / metrics.host (the command line wins over the config)."""
    overrides = _overrides(args.overrides)
    if args.log_format:
        overrides.append(f"log.format={args.log_format}")
    if args.metrics_port is not None:
        overrides.append(f"metrics.port={args.metrics_port}")
    if args.metrics_host is not None:
        overrides.append(f"metrics.host={json.dumps(args.metrics_host)}")
    return overrides


def _tantivy_path(config: str, overrides: list[str]) -> str | None:
    """The index a config writes with the tantivy indexer (relative paths resolve against the
    working directory, as every output path of a config does)."""
    try:
        resolved = json.loads(lucille.render(config, overrides=overrides, json=True))
    except (lucille.ConfigError, ValueError, OSError):
        return None
    indexer = resolved.get("indexer") or {}
    if str(indexer.get("type", "")).lower() != "tantivy":
        return None
    path = (resolved.get("tantivy") or {}).get("path")
    if not isinstance(path, str):
        return None
    return os.path.abspath(path)


_SUMMARY_FIELDS = ("title", "name", "summary", "teaser", "description", "body", "text")


def _summary(doc: dict) -> str:
    """A one-line description of a hit: its title-like field, else its first string."""
    candidates = [doc.get(f) for f in _SUMMARY_FIELDS]
    candidates += [v for k, v in doc.items() if k not in ("id", "score")]
    for v in candidates:
        if isinstance(v, list) and v:
            v = v[0]
        if isinstance(v, str) and v.strip():
            line = " ".join(v.split())
            return line if len(line) <= 100 else line[:99] + "…"
    return ""


def _terminal_snippet(html: str) -> str:
    """A snippet's HTML for a terminal: the matched terms between ** (bold where the terminal
    shows it), entities decoded."""
    bold = ("\033[1m", "\033[0m") if sys.stdout.isatty() else ("**", "**")
    text = html.replace("<b>", bold[0]).replace("</b>", bold[1])
    return " ".join(htmllib.unescape(text).split())


def _search(args: argparse.Namespace) -> int:
    if not os.path.isdir(args.index):
        print(f"error: no index folder at {args.index}", file=sys.stderr)
        return 1
    if args.vector and args.near:
        print("error: give --vector or --near, not both", file=sys.stderr)
        return 1
    if args.near and not args.model:
        print("error: --near needs --model (the Embed stage's model folder)", file=sys.stderr)
        return 1
    if not (args.vector or args.near) and not args.query:
        print("error: give a query, --vector or --near", file=sys.stderr)
        return 1
    if args.hybrid and not (args.vector or args.near):
        print("error: --hybrid fuses the query's ranking with --vector's or --near's: give one",
              file=sys.stderr)
        return 1
    try:
        if args.vector or args.near:
            field, sep, value = (args.vector or args.near).partition("=")
            if not sep or not field:
                raise ValueError("--vector / --near take FIELD=VALUE")
            if args.vector:
                try:
                    vector = [float(x) for x in value.replace("[", "").replace("]", "").split(",")]
                except ValueError:
                    raise ValueError(f"--vector: {value!r} is not a comma-separated list of numbers") from None
            else:
                vector = lucille.embed(args.model, [value])[0]
            hits = lucille.search(args.index, args.query, limit=args.limit, vector=vector, field=field,
                                  hybrid=args.hybrid, snippets=args.snippets)
        else:
            hits = lucille.search(args.index, args.query, limit=args.limit, snippets=args.snippets)
    except (FileNotFoundError, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for rank, hit in enumerate(hits, 1):
        if args.json:
            print(json.dumps(hit, ensure_ascii=False))
        else:
            ranks = ""
            if args.hybrid:
                text_rank, vector_rank = hit.get("text_rank"), hit.get("vector_rank")
                ranks = f"  (text #{text_rank or '-'}, vector #{vector_rank or '-'})"
            print(f"{rank:>3}. {hit['score']:7.3f}  {hit.get('id', '')}{ranks}")
            summary = _summary(hit)
            if summary:
                print(f"             {summary}")
            for name, html in (hit.get("snippets") or {}).items():
                print(f"             {name}: {_terminal_snippet(html)}")
    if not args.json and not hits:
        print("no hits")
    return 0


def _run(config: str, mode: str, overrides: list[str],
         replay: str | None = None) -> lucille.RunResult | None:
    """`lucille run` / `lucille replay`: runs with logging and signals set up, prints the summary;
    None (the error printed) when the config is refused."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # SIGINT explicitly too: a process started in the background by a shell inherits
    # SIGINT ignored, and `kill -INT` must still stop it (a second one stops it now).
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    try:
        result = lucille.run(config, mode=mode, overrides=overrides, replay=replay)
    except (lucille.ConfigError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return None
    print(result.summary)
    return result


def _serve(args: argparse.Namespace) -> int:
    if args.log_format == "json":
        from lucille import _logging
        _logging.attach_json()  # for the life of the process
    else:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)

    def ready(url: str) -> None:
        print(f"lucille serve: listening on {url} (console: {url}/)", flush=True)

    try:
        lucille._lucille.run_service(
            host=args.host, port=args.port, data_dir=args.data_dir, token_file=args.token_file,
            max_concurrent_runs=args.max_concurrent_runs, max_body_bytes=args.max_body_bytes,
            keep_runs=args.keep_runs, keep_days=args.keep_days, on_ready=ready)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lucille", description="Lucille-rs search ETL")
    parser.add_argument("--version", action="version", version=f"lucille-rs {lucille.__version__}")
    sub = parser.add_subparsers(dest="command")

    run_p = sub.add_parser("run", help="run a config; exit 0 only on Success")
    run_p.add_argument("config")
    run_p.add_argument("--mode", choices=["local", "test", "external", "distributed"], default="local",
                       help="distributed: connector and publisher only (workers and indexers run as "
                            "`lucille worker` / `lucille indexer`); external: workers and indexer as "
                            "threads, messaging over Kafka")
    run_p.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                       help="override a config value (repeatable)")
    _log_format_flag(run_p)
    _metrics_flags(run_p)

    val_p = sub.add_parser("validate", help="list every config error; exit 1 if any")
    val_p.add_argument("config")
    val_p.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE")

    ren_p = sub.add_parser("render", help="print the resolved config with secrets redacted")
    ren_p.add_argument("config")
    ren_p.add_argument("--json", action="store_true", help="JSON instead of HOCON")
    ren_p.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE")

    doc_p = sub.add_parser(
        "doc",
        help="describe a stage, connector or indexer's options (CLASS), or parse a document's JSON and print it back",
    )
    doc_p.add_argument(
        "json",
        metavar="CLASS|JSON",
        help="a stage, connector or indexer (CopyFields, FileConnector, typesense, indexer), document JSON text, or - for JSON on stdin",
    )

    search_p = sub.add_parser("search", help="search the embedded Tantivy index")
    search_p.add_argument("index", help="the index folder (tantivy.path)")
    search_p.add_argument(
        "query",
        nargs="?",
        default="",
        help='Tantivy query syntax: words, field:value, "a phrase", AND/OR '
        "(with --vector / --near: only these documents are ranked)",
    )
    search_p.add_argument(
        "--vector",
        metavar="FIELD=X,Y,...",
        help="rank by cosine similarity between this vector and the vector field FIELD",
    )
    search_p.add_argument(
        "--near",
        metavar="FIELD=TEXT",
        help="rank by cosine similarity to TEXT embedded with --model (as the Embed stage does)",
    )
    search_p.add_argument("--model", help="the Embed model folder for --near")
    search_p.add_argument(
        "--hybrid",
        action="store_true",
        help="fuse the query's text ranking with --vector's / --near's ranking of every document "
        "(reciprocal rank fusion, k=60)",
    )
    search_p.add_argument(
        "--snippets",
        action="store_true",
        help="show each hit's fragments that hold the query's terms (in --json: \"snippets\", HTML)",
    )
    search_p.add_argument("--limit", type=int, default=10, help="hits to show (default 10)")
    search_p.add_argument("--json", action="store_true", help="one JSON object per hit")

    for role, text in (("worker", "a long-running worker process (distributed mode, Kafka)"),
                       ("indexer", "a long-running indexer process (distributed mode, Kafka)"),
                       ("worker-indexer", "a worker with its own indexer (distributed mode, Kafka)")):
        role_p = sub.add_parser(role, help=text + "; SIGTERM stops it cleanly")
        role_p.add_argument("config")
        role_p.add_argument("--pipeline", default=None, help="the pipeline to serve (default: "
                            "worker.pipeline, or the config's only pipeline)")
        role_p.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE")
        _log_format_flag(role_p)
        _metrics_flags(role_p)

    serve_p = sub.add_parser(
        "serve",
        help="run as a service: a REST API to submit and watch runs, their history, schedules, "
             "dead-letter replay and a web console (SIGTERM stops it cleanly)")
    serve_p.add_argument("--host", default="127.0.0.1",
                         help="the address to listen on (default 127.0.0.1; any other needs a token)")
    serve_p.add_argument("--port", type=int, default=8765, help="the port (default 8765; 0: a free one)")
    serve_p.add_argument("--data-dir", default="./lucille-data",
                         help="where the run history (SQLite) and each run's failures are kept")
    serve_p.add_argument("--token-file", default=None, metavar="FILE",
                         help="a file whose first line is the API token (else LUCILLE_TOKEN); "
                              "every API call then needs Authorization: Bearer <token>")
    serve_p.add_argument("--max-concurrent-runs", type=int, default=1, metavar="N",
                         help="runs going at once; the rest wait in the queue (default 1)")
    serve_p.add_argument("--max-body-bytes", type=int, default=1048576, metavar="N",
                         help="the largest request body accepted (default 1 MiB; larger: 413)")
    serve_p.add_argument("--keep-runs", type=_non_negative, default=1000, metavar="N",
                         help="keep the newest N ended runs in the history, with their failures "
                              "and dead-letter files; older ones are removed (default 1000; "
                              "0: no count limit). Queued and running runs are always kept")
    serve_p.add_argument("--keep-days", type=_non_negative, default=30, metavar="D",
                         help="remove ended runs older than D days, with their failures and "
                              "dead-letter files (default 30; 0: no age limit)")
    _log_format_flag(serve_p)

    replay_p = sub.add_parser(
        "replay",
        help="run the documents of a dead-letter file again through a config's pipelines and "
             "indexer (in place of its connectors); exit 0 only on Success")
    replay_p.add_argument("dead_letter", metavar="DEAD_LETTER_FILE",
                          help="a dead-letter file, as worker.deadLetterPath writes it")
    replay_p.add_argument("config")
    replay_p.add_argument("--mode", choices=["local", "test"], default="local")
    replay_p.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE")
    _log_format_flag(replay_p)

    args = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    if args.command == "replay":
        overrides = _overrides(args.overrides)
        if args.log_format:
            overrides.append(f"log.format={args.log_format}")
        result = _run(args.config, args.mode, overrides, replay=args.dead_letter)
        if result is None:
            return 1
        return 0 if result.status == "Success" else 1
    if args.command in ("worker", "indexer", "worker-indexer"):
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        signal.signal(signal.SIGTERM, _interrupt)
        signal.signal(signal.SIGINT, _interrupt)
        try:
            lucille.serve(args.command, args.config, pipeline=args.pipeline,
                          overrides=_run_overrides(args))
        except lucille.ConfigError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        except (RuntimeError, OSError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        return 0
    if args.command == "search":
        return _search(args)
    if args.command == "run":
        result = _run(args.config, args.mode, _run_overrides(args))
        if result is None:
            return 1
        index = _tantivy_path(args.config, _overrides(args.overrides))
        if index and args.mode != "test" and os.path.isdir(index):
            print(f'Search it: lucille search {index} "<query>"')
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
        if args.json != "-" and not args.json.lstrip().startswith("{"):
            try:
                print(lucille._lucille.describe(args.json), end="")
            except ValueError as e:
                print(f"error: {e}", file=sys.stderr)
                return 1
            return 0
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
