//! QueryOpensearch (Lucille's stage and keys): runs a search template on an OpenSearch index
//! for each document and stores a part of the answer on it.
//!
//! Keys: `opensearch { url, index, acceptInvalidCert, username, password }` (required),
//! `searchTemplate` (the template's JSON, e.g. `{"source": {"query": ...}}`) or `templateName`
//! (the id of a template stored in the cluster): exactly one; `requiredParamNames` and
//! `optionalParamNames` (document fields passed as the template's `params`, under their own
//! names); `opensearchResponsePath` (a JSON pointer into the answer, e.g. `/hits/max_score`;
//! default: the whole answer); `destinationField` (default `response`).
//!
//! The request is `POST {url}/{index}/_search/template` with the template (or `{"id": name}`)
//! and `params`. A document without one of the required fields is not queried: it gets
//! `queryOpensearchError` saying which field is missing, as in Lucille. An answer other than
//! 2xx (after retries of 429 / 5xx and of no answer) FAILs the document with the status and
//! the start of the body. Where the pointer finds nothing, the destination is left unset
//! (Lucille stores Jackson's "missing" node there).

use serde_json::{Map, Value};

use super::{engine, json_answer, Engine};
use crate::config::{ComponentConfig, ConfigErrors, Kind, Spec};
use crate::document::Document;
use crate::http::snippet;
use crate::stage::{Stage, StageDescriptor, StageFailure, StageResult};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "QueryOpensearch",
    spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Where a document that lacks a required parameter gets its message (Lucille's name).
pub const ERROR_FIELD: &str = "queryOpensearchError";

fn spec() -> Spec {
    Spec::stage()
        .required("opensearch", Kind::Object)
        .optional("templateName", Kind::String)
        .optional("searchTemplate", Kind::String)
        .optional("requiredParamNames", Kind::StringList)
        .optional("optionalParamNames", Kind::StringList)
        .optional("opensearchResponsePath", Kind::String)
        .optional("destinationField", Kind::String)
}

struct QueryOpensearch {
    engine: Engine,
    /// The request body without `params`.
    request: Map<String, Value>,
    required: Vec<String>,
    optional: Vec<String>,
    pointer: String,
    dest: String,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let engine = engine(config, "opensearch", "OpenSearch")?;
    let request =
        match (
            config.string("searchTemplate")?,
            config.string("templateName")?,
        ) {
            (Some(template), None) => match serde_json::from_str::<Value>(&template) {
                Ok(Value::Object(map)) => map,
                Ok(_) => {
                    return Err(config
                        .error("searchTemplate", "must be a JSON object")
                        .into())
                }
                Err(e) => {
                    return Err(config
                        .error("searchTemplate", format!("is not valid JSON: {e}"))
                        .into())
                }
            },
            (None, Some(name)) => Map::from_iter([("id".to_string(), Value::String(name))]),
            (Some(_), Some(_)) => {
                return Err(config
                    .error(
                        "templateName",
                        "give either templateName or searchTemplate, not both",
                    )
                    .into())
            }
            (None, None) => return Err(config
                .error(
                    "searchTemplate",
                    "give searchTemplate (the template's JSON) or templateName (a stored template)",
                )
                .into()),
        };
    let pointer = config.string("opensearchResponsePath")?.unwrap_or_default();
    if !pointer.is_empty() && !pointer.starts_with('/') {
        return Err(config
            .error(
                "opensearchResponsePath",
                format!("{pointer:?} is not a JSON pointer: it must be empty or start with '/'"),
            )
            .into());
    }
    let dest = config
        .string("destinationField")?
        .unwrap_or_else(|| "response".to_string());
    if dest.is_empty() || crate::document::is_reserved(&dest) {
        return Err(config
            .error(
                "destinationField",
                format!("{dest:?} cannot be written: it is reserved or empty"),
            )
            .into());
    }
    Ok(Box::new(QueryOpensearch {
        engine,
        request,
        required: config
            .string_list("requiredParamNames")?
            .unwrap_or_default(),
        optional: config
            .string_list("optionalParamNames")?
            .unwrap_or_default(),
        pointer,
        dest,
    }))
}

impl Stage for QueryOpensearch {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        let mut params = Map::new();
        for name in &self.required {
            match doc.get(name) {
                Some(v) => {
                    params.insert(name.clone(), v.clone());
                }
                None => {
                    doc.set_field(
                        ERROR_FIELD,
                        format!("required field {name:?} is missing: no query was run"),
                    )?;
                    return Ok(None);
                }
            }
        }
        for name in &self.optional {
            if let Some(v) = doc.get(name) {
                params.insert(name.clone(), v.clone());
            }
        }
        let mut body = self.request.clone();
        body.insert("params".into(), Value::Object(params));
        let url = format!(
            "{}/{}/_search/template",
            self.engine.url,
            crate::http::encode(&self.engine.index)
        );
        let reply = self
            .engine
            .client
            .send(
                "POST",
                &url,
                "application/json",
                Some(&Value::Object(body).to_string()),
            )
            .map_err(|e| StageFailure::msg(e.to_string()))?;
        if !reply.ok() {
            return Err(StageFailure::msg(format!(
                "OpenSearch answered the search template query with HTTP {}: {}",
                reply.status,
                snippet(&reply.body)
            )));
        }
        let answer = json_answer("OpenSearch", &reply.body)?;
        if let Some(found) = answer.pointer(&self.pointer) {
            doc.set_field(&self.dest, found.clone())?;
        }
        Ok(None)
    }
}
