#!/usr/bin/env python3
"""The pure-Python reference: the standard pipeline's six edits with json, re and dicts."""
import json
import re
import sys
from datetime import datetime, timezone

THE = re.compile(r"\bthe\b")


def edit(d):
    """The six edits, on one record's dict (the peers in peers/ that run Python use it too)."""
    d["title_copy"] = d["title"]
    d["publication_year"] = d.pop("year")
    d["summary"] = f"{d['title']} ({d['publication_year']}), {d['price']}"
    d["body_clean"] = THE.sub("", d["body"])
    d["tag_count"] = len(d["tags"])
    day = datetime.strptime(d["date"], "%Y-%m-%d").replace(tzinfo=timezone.utc)
    d["date_parsed"] = day.strftime("%Y-%m-%dT%H:%M:%SZ")
    return d


def main(src, dst):
    with open(src, encoding="utf-8") as f, open(dst, "w", encoding="utf-8") as out:
        for line in f:
            out.write(json.dumps(edit(json.loads(line)), separators=(",", ":")))
            out.write("\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
