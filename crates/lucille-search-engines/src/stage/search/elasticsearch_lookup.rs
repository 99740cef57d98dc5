//! ElasticsearchLookup (Lucille's stage and keys): fetches the document with the same id from
//! an Elasticsearch index and copies fields of its source onto the document.
//!
//! Keys: `elasticsearch { url, index, acceptInvalidCert, username, password }` (required),
//! `source` and `dest` (lists of the same length: `source[i]` of the indexed document is
//! written to `dest[i]`), `updateMode` (overwrite, append, skip; default overwrite;
//! `update_mode`, older Lucille's name, too).
//!
//! `start` checks the cluster answers (`GET {url}/`), as Lucille pings it. Per document:
//! `GET {url}/{index}/_doc/{id}`; not found (404) changes nothing; a field the indexed source
//! lacks is skipped (Lucille fails on it); values are copied as text, as Lucille does (a
//! string as is, other values as their JSON). Another status FAILs the document.

use serde_json::Value;

use super::{engine, json_answer, Engine};
use crate::config::{ComponentConfig, ConfigErrors, Kind, Spec};
use crate::document::{Document, UpdateMode};
use crate::http::{encode, snippet};
use crate::stage::{Stage, StageDescriptor, StageFailure, StageResult};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "ElasticsearchLookup",
    spec,
    build,
};
inventory::submit!(DESCRIPTOR);

fn spec() -> Spec {
    Spec::stage()
        .required("elasticsearch", Kind::Object)
        .required("source", Kind::StringOrList)
        .required("dest", Kind::StringOrList)
        .optional("updateMode", Kind::OneOf(&["overwrite", "append", "skip"]))
        .alias("update_mode", "updateMode")
}

struct ElasticsearchLookup {
    engine: Engine,
    fields: Vec<(String, String)>,
    mode: UpdateMode,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let engine = engine(config, "elasticsearch", "Elasticsearch")?;
    let source = config.strings("source")?.unwrap_or_default();
    let dest = config.strings("dest")?.unwrap_or_default();
    if source.len() != dest.len() {
        return Err(config
            .error(
                "dest",
                format!(
                    "must name as many fields as source ({} and {})",
                    dest.len(),
                    source.len()
                ),
            )
            .into());
    }
    if let Some(bad) = dest
        .iter()
        .find(|d| d.is_empty() || crate::document::is_reserved(d))
    {
        return Err(config
            .error(
                "dest",
                format!("{bad:?} cannot be written: it is reserved or empty"),
            )
            .into());
    }
    Ok(Box::new(ElasticsearchLookup {
        engine,
        fields: source.into_iter().zip(dest).collect(),
        mode: config.update_mode("updateMode")?,
    }))
}

impl Stage for ElasticsearchLookup {
    fn start(&mut self) -> Result<(), StageFailure> {
        let reply = self
            .engine
            .client
            .send(
                "GET",
                &format!("{}/", self.engine.url),
                "application/json",
                None,
            )
            .map_err(|e| StageFailure::msg(format!("Elasticsearch is not reachable: {e}")))?;
        if !reply.ok() {
            return Err(StageFailure::msg(format!(
                "Elasticsearch at {} answered HTTP {}: {}",
                self.engine.url,
                reply.status,
                snippet(&reply.body)
            )));
        }
        Ok(())
    }

    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        let url = format!(
            "{}/{}/_doc/{}",
            self.engine.url,
            encode(&self.engine.index),
            encode(doc.id())
        );
        let reply = self
            .engine
            .client
            .send("GET", &url, "application/json", None)
            .map_err(|e| StageFailure::msg(e.to_string()))?;
        if reply.status == 404 {
            return Ok(None);
        }
        if !reply.ok() {
            return Err(StageFailure::msg(format!(
                "Elasticsearch answered the lookup of {:?} with HTTP {}: {}",
                doc.id(),
                reply.status,
                snippet(&reply.body)
            )));
        }
        let answer = json_answer("Elasticsearch", &reply.body)?;
        if answer["found"] != Value::Bool(true) {
            return Ok(None);
        }
        for (source, dest) in &self.fields {
            let text = match answer["_source"].get(source) {
                None | Some(Value::Null) => continue,
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
            };
            doc.update(dest, self.mode, [Value::String(text)])?;
        }
        Ok(None)
    }
}
