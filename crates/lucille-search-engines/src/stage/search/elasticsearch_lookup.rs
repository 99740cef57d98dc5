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

use serde_json::{Map, Value};

use super::{engine, json_answer, Engine};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec, Strings};
use crate::document::{Document, UpdateMode};
use crate::http::{encode, snippet};
use crate::stage::field_util::check_writable;
use crate::stage::{Stage, StageDescriptor, StageFailure, StageResult};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "ElasticsearchLookup",
    spec: ElasticsearchLookupOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Fetches the document with the same id from an Elasticsearch index and copies fields of its
/// source onto the document.
#[derive(Options)]
#[options(base = Spec::stage())]
struct ElasticsearchLookupOptions {
    /// The Elasticsearch connection: url, index (both required), acceptInvalidCert, username,
    /// password.
    elasticsearch: Map<String, Value>,
    /// Fields of the indexed document's source that are copied (as text).
    source: Strings,
    /// The fields they are written to, one per source field, in the same order.
    dest: Strings,
    /// How a destination that already has values is written.
    #[option(default = "overwrite", one_of = ["overwrite", "append", "skip"], alias = "update_mode")]
    update_mode: String,
}

struct ElasticsearchLookup {
    engine: Engine,
    fields: Vec<(String, String)>,
    mode: UpdateMode,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = ElasticsearchLookupOptions::from_config(config)?;
    let mut errors = Vec::new();
    let engine = engine(config, "elasticsearch", o.elasticsearch, "Elasticsearch")
        .map_err(|e| errors.extend(e))
        .ok();
    let (source, dest) = (o.source.0, o.dest.0);
    if source.len() != dest.len() {
        errors.push(config.error(
            "dest",
            format!(
                "must name as many fields as source ({} and {})",
                dest.len(),
                source.len()
            ),
        ));
    }
    if let Some(e) = dest
        .iter()
        .find_map(|d| check_writable(config, "dest", d).err())
    {
        errors.push(e);
    }
    match engine {
        Some(engine) if errors.is_empty() => Ok(Box::new(ElasticsearchLookup {
            engine,
            fields: source.into_iter().zip(dest).collect(),
            mode: UpdateMode::parse(&o.update_mode).unwrap_or_default(),
        })),
        _ => Err(ConfigErrors(errors)),
    }
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
