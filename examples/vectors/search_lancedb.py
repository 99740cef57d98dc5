"""Index the articles into LanceDB through lucille, then query the vectors back.

    python examples/vectors/search_lancedb.py [DB_FOLDER] [QUERY]
"""

from __future__ import annotations

import os
import sys

import lancedb

import lucille

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from embed import embed  # noqa: E402


def main() -> None:
    uri = sys.argv[1] if len(sys.argv) > 1 else "./vectors.lance"
    query = sys.argv[2] if len(sys.argv) > 2 else "brewed tea leaves"
    os.environ["LANCEDB_URI"] = uri
    result = lucille.run(os.path.join(HERE, "lancedb.conf"))
    print(result.summary)
    if result.status != "Success":
        sys.exit(1)
    table = lancedb.connect(uri).open_table("articles")
    for hit in table.search(embed(query).tolist()).limit(3).to_list():
        print(f"{hit['_distance']:.3f}  {hit['id']}: {hit['body']}")


if __name__ == "__main__":
    main()
