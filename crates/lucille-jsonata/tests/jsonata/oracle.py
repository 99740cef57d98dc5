#!/usr/bin/env python3
"""Evaluates tests/oracle_corpus.json with jsonata-python (the reference implementation used by
tests/oracle.rs) and writes the expected outcomes as JSON.

usage: python3 tests/oracle.py CORPUS OUT      (exit 3 if jsonata-python is not installed)
"""
import json
import sys

try:
    import jsonata
    from jsonata import utils
except ImportError:
    print("jsonata-python is not installed (pip install jsonata-python)", file=sys.stderr)
    sys.exit(3)


def outcome(expr, data):
    try:
        e = jsonata.Jsonata(expr)
        e.set_output_convert_nulls(False)
        result = e.evaluate(data)
    except Exception as ex:  # JException and friends
        return {"outcome": "error", "error": str(ex)}
    if result is None:
        return {"outcome": "undefined"}
    if callable(result):
        return {"outcome": "error", "error": "function result"}
    return {"outcome": "value", "value": utils.Utils.convert_nulls(result)}


def main():
    corpus_path, out_path = sys.argv[1], sys.argv[2]
    with open(corpus_path, encoding="utf-8") as f:
        corpus = json.load(f)
    results = []
    for case in corpus["cases"]:
        res = {"expr": case["expr"], "input": case["input"]}
        res.update(outcome(case["expr"], corpus["inputs"][case["input"]]))
        results.append(res)
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump({"generator": "jsonata-python", "cases": results}, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
