"""A Python indexer that writes document vectors into LanceDB (an embedded vector database).

Config (beside Lucille's indexer keys):

    indexer {
      class: "lancedb_indexer.py:LanceDBIndexer"
      batchSize: 100
      uri: "./vectors.lance"      # LanceDB database folder
      table: "docs"
      vectorField: "embedding"    # set by a stage with doc.set_vector(...)
      fields: ["title"]           # scalar fields stored beside the vector
    }
"""

from __future__ import annotations

from typing import Any, Optional

import lancedb
import pyarrow as pa
from lancedb.table import Table

import lucille


class LanceDBIndexer(lucille.Indexer):
    def __init__(self, config: Optional[dict[str, Any]] = None) -> None:
        super().__init__(config)
        self.uri = self.config.get("uri", "./vectors.lance")
        self.table_name = self.config.get("table", "docs")
        self.vector_field = self.config.get("vectorField", "embedding")
        self.fields = list(self.config.get("fields", []))
        self.db: Optional[lancedb.DBConnection] = None
        self.table: Optional[Table] = None

    def validate_connection(self) -> None:
        self.db = lancedb.connect(self.uri)

    def _table(self, dim: int) -> Table:
        if self.table is None:
            assert self.db is not None
            if self.table_name in self.db.table_names():
                self.table = self.db.open_table(self.table_name)
            else:
                schema = pa.schema(
                    [pa.field("id", pa.string()), pa.field("vector", pa.list_(pa.float32(), dim))]
                    + [pa.field(f, pa.string()) for f in self.fields]
                )
                self.table = self.db.create_table(self.table_name, schema=schema)
        return self.table

    def send_batch(self, docs: list[lucille.Document]) -> dict[str, str]:
        rows: list[dict[str, Any]] = []
        errors: dict[str, str] = {}
        for doc in docs:
            vector = doc.get_vector(self.vector_field)
            if vector is None:
                errors[doc.id] = f"no vector in field {self.vector_field!r}"
                continue
            row = {"id": doc.id, "vector": vector.tolist()}

            for f in self.fields:
                row[f] = doc.get_string(f)
            rows.append(row)
        if rows:
            dims = {len(r["vector"]) for r in rows}
            if len(dims) != 1:
                return {r["id"]: f"vectors of mixed sizes {sorted(dims)}" for r in rows} | errors
            table = self._table(dims.pop())
            (
                table.merge_insert("id")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute(rows)
            )
        return errors

    def delete_batch(self, ids: list[str]) -> None:
        if self.table is None and self.db is not None and self.table_name in self.db.table_names():
            self.table = self.db.open_table(self.table_name)
        if self.table is not None:
            quoted = ", ".join("'" + i.replace("'", "''") + "'" for i in ids)
            self.table.delete(f"id IN ({quoted})")
