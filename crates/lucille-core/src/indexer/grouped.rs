//! A backend built from a sink that takes runs of one kind of operation at a time (upserts,
//! deletes by id, a delete by field), as user-written indexers do (`lucille.Indexer`). The
//! adapter keeps the batch's order: consecutive ops of one kind go in one call, so an upsert
//! followed by a delete of the same id reaches the sink in that order.

use std::collections::HashMap;

use super::{Backend, BackendError, ChildDocuments, IndexOp};

/// What a sink says about one call.
#[derive(Debug, Clone, PartialEq)]
pub enum SinkReply {
    /// Every item succeeded.
    AllOk,
    /// One entry per item, in order: `None` for success, `Some(reason)` for a rejection.
    PerItem(Vec<Option<String>>),
    /// Rejections by id; ids not named succeeded.
    ById(HashMap<String, String>),
    /// The call failed (an exception): every item of the call fails with this reason.
    Failed(String),
}

/// One upsert handed to a sink.
pub struct SinkDoc<'a> {
    pub id: &'a str,
    pub index: Option<&'a str>,
    pub fields: &'a crate::document::Fields,
    /// Its attached children, as [`IndexOp::Upsert`] holds them.
    pub children: &'a [crate::document::Fields],
}

pub trait BatchSink: Send {
    fn validate_connection(&mut self) -> Result<(), BackendError> {
        Ok(())
    }
    fn upsert(&mut self, docs: &[SinkDoc<'_>]) -> SinkReply;
    fn delete_ids(&mut self, ids: &[&str]) -> SinkReply;
    fn delete_by_field(&mut self, field: &str, value: &str) -> SinkReply;
    fn close(&mut self) -> Result<(), BackendError> {
        Ok(())
    }
}

pub struct Grouped<S>(pub S);

#[derive(PartialEq, Clone, Copy)]
enum Kind {
    Upsert,
    DeleteById,
    DeleteByField,
}

fn kind(op: &IndexOp) -> Kind {
    match op {
        IndexOp::Upsert { .. } => Kind::Upsert,
        IndexOp::DeleteById { .. } => Kind::DeleteById,
        IndexOp::DeleteByField { .. } => Kind::DeleteByField,
    }
}

/// Turns a reply for `ids` into one result per id.
fn per_item(reply: SinkReply, ids: &[&str]) -> Result<Vec<Option<String>>, BackendError> {
    match reply {
        SinkReply::AllOk => Ok(vec![None; ids.len()]),
        SinkReply::Failed(reason) => Ok(vec![Some(reason); ids.len()]),
        SinkReply::PerItem(items) if items.len() == ids.len() => Ok(items),
        SinkReply::PerItem(items) => Err(BackendError::new(format!(
            "the indexer returned {} results for {} documents",
            items.len(),
            ids.len()
        ))),
        SinkReply::ById(mut rejected) => {
            let results: Vec<Option<String>> = ids.iter().map(|id| rejected.remove(*id)).collect();
            match rejected.keys().next() {
                Some(unknown) => Err(BackendError::new(format!(
                    "the indexer rejected id {unknown:?}, which is not in the batch"
                ))),
                None => Ok(results),
            }
        }
    }
}

impl<S: BatchSink> Backend for Grouped<S> {
    /// The sink receives each document's children with it.
    fn child_documents(&self) -> ChildDocuments {
        ChildDocuments::All
    }

    fn validate_connection(&mut self) -> Result<(), BackendError> {
        self.0.validate_connection()
    }

    fn send(&mut self, ops: &[IndexOp]) -> Result<Vec<Option<String>>, BackendError> {
        let mut results = Vec::with_capacity(ops.len());
        for run in ops.chunk_by(|a, b| kind(a) == kind(b)) {
            match kind(&run[0]) {
                Kind::Upsert => {
                    let docs: Vec<SinkDoc<'_>> = run
                        .iter()
                        .filter_map(|op| match op {
                            IndexOp::Upsert {
                                id,
                                index,
                                fields,
                                children,
                                ..
                            } => Some(SinkDoc {
                                id,
                                index: index.as_deref(),
                                fields,
                                children,
                            }),
                            _ => None,
                        })
                        .collect();
                    let ids: Vec<&str> = docs.iter().map(|d| d.id).collect();
                    results.extend(per_item(self.0.upsert(&docs), &ids)?);
                }
                Kind::DeleteById => {
                    let ids: Vec<&str> = run
                        .iter()
                        .filter_map(|op| match op {
                            IndexOp::DeleteById { id, .. } => Some(id.as_str()),
                            _ => None,
                        })
                        .collect();
                    results.extend(per_item(self.0.delete_ids(&ids), &ids)?);
                }
                Kind::DeleteByField => {
                    for op in run {
                        if let IndexOp::DeleteByField { field, value, .. } = op {
                            let reply = self.0.delete_by_field(field, value);
                            results.extend(per_item(reply, &[""])?);
                        }
                    }
                }
            }
        }
        Ok(results)
    }

    fn close(&mut self) -> Result<(), BackendError> {
        self.0.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Default)]
    struct Recorder {
        calls: Vec<String>,
    }

    impl BatchSink for Recorder {
        fn upsert(&mut self, docs: &[SinkDoc<'_>]) -> SinkReply {
            let ids: Vec<&str> = docs.iter().map(|d| d.id).collect();
            self.calls.push(format!("upsert {}", ids.join(",")));
            SinkReply::ById(
                ids.iter()
                    .filter(|id| id.starts_with("bad"))
                    .map(|id| (id.to_string(), "bad id".to_string()))
                    .collect(),
            )
        }
        fn delete_ids(&mut self, ids: &[&str]) -> SinkReply {
            self.calls.push(format!("delete {}", ids.join(",")));
            SinkReply::PerItem(ids.iter().map(|_| None).collect())
        }
        fn delete_by_field(&mut self, field: &str, value: &str) -> SinkReply {
            self.calls.push(format!("delete_by {field}={value}"));
            SinkReply::Failed("not supported".into())
        }
    }

    fn upsert(id: &str) -> IndexOp {
        IndexOp::Upsert {
            id: id.into(),
            index: None,
            fields: match json!({"t": id}) {
                serde_json::Value::Object(m) => m.into_iter().collect(),
                _ => unreachable!(),
            },
            children: Default::default(),
            routing: None,
            version: None,
        }
    }

    #[test]
    fn runs_keep_order_and_map_replies_to_items() {
        let mut b = Grouped(Recorder::default());
        let ops = vec![
            upsert("a"),
            upsert("bad1"),
            IndexOp::DeleteById {
                id: "a".into(),
                index: None,
                routing: None,
                version: None,
            },
            IndexOp::DeleteByField {
                field: "f".into(),
                value: "v".into(),
                index: None,
            },
            upsert("c"),
        ];
        let r = b.send(&ops).unwrap();
        assert_eq!(
            r,
            vec![
                None,
                Some("bad id".into()),
                None,
                Some("not supported".into()),
                None
            ]
        );
        assert_eq!(
            b.0.calls,
            vec!["upsert a,bad1", "delete a", "delete_by f=v", "upsert c"]
        );
    }

    #[test]
    fn wrong_reply_shapes_fail_the_batch() {
        assert!(per_item(SinkReply::PerItem(vec![None]), &["a", "b"]).is_err());
        let mut unknown = HashMap::new();
        unknown.insert("zzz".to_string(), "no".to_string());
        let e = per_item(SinkReply::ById(unknown), &["a"]).unwrap_err();
        assert!(e.message.contains("zzz"), "{e}");
    }
}
