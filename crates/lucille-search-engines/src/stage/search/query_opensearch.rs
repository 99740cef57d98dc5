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
use crate::config::{ComponentConfig, ConfigError, ConfigErrors, Options, Spec};
use crate::document::Document;
use crate::http::snippet;
use crate::stage::field_util::check_writable;
use crate::stage::{Stage, StageDescriptor, StageFailure, StageResult};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "QueryOpensearch",
    spec: QueryOpensearchOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Where a document that lacks a required parameter gets its message (Lucille's name).
pub const ERROR_FIELD: &str = "queryOpensearchError";

/// Runs a search template on an OpenSearch index for each document and stores a part of the
/// answer on it.
#[derive(Options)]
#[options(base = Spec::stage())]
struct QueryOpensearchOptions {
    /// The OpenSearch connection: url, index (both required), acceptInvalidCert, username,
    /// password.
    opensearch: Map<String, Value>,
    /// The id of a search template stored in the cluster (give it or searchTemplate).
    template_name: Option<String>,
    /// The search template's JSON, e.g. {"source": {"query": ...}} (give it or templateName).
    search_template: Option<String>,
    /// Document fields passed as the template's params under their own names; a document
    /// without one of them is not queried and gets queryOpensearchError.
    required_param_names: Option<Vec<String>>,
    /// Document fields passed as params when the document has them.
    optional_param_names: Option<Vec<String>>,
    /// A JSON pointer into the answer, e.g. /hits/max_score (default: the whole answer).
    opensearch_response_path: Option<String>,
    /// The field the answer (or its part) is written to.
    #[option(default = "response")]
    destination_field: String,
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

/// The request body without `params`: the template's JSON, or `{"id": name}`.
fn request(
    config: &ComponentConfig,
    search_template: Option<String>,
    template_name: Option<String>,
) -> Result<Map<String, Value>, ConfigError> {
    match (search_template, template_name) {
        (Some(template), None) => match serde_json::from_str::<Value>(&template) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(_) => Err(config.error("searchTemplate", "must be a JSON object")),
            Err(e) => Err(config.error("searchTemplate", format!("is not valid JSON: {e}"))),
        },
        (None, Some(name)) => Ok(Map::from_iter([("id".to_string(), Value::String(name))])),
        (Some(_), Some(_)) => Err(config.error(
            "templateName",
            "give either templateName or searchTemplate, not both",
        )),
        (None, None) => Err(config.error(
            "searchTemplate",
            "give searchTemplate (the template's JSON) or templateName (a stored template)",
        )),
    }
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = QueryOpensearchOptions::from_config(config)?;
    let mut errors = Vec::new();
    let engine = engine(config, "opensearch", o.opensearch, "OpenSearch")
        .map_err(|e| errors.extend(e))
        .ok();
    let request = request(config, o.search_template, o.template_name)
        .map_err(|e| errors.push(e))
        .ok();
    let pointer = o.opensearch_response_path.unwrap_or_default();
    if !pointer.is_empty() && !pointer.starts_with('/') {
        errors.push(config.error(
            "opensearchResponsePath",
            format!("{pointer:?} is not a JSON pointer: it must be empty or start with '/'"),
        ));
    }
    if let Err(e) = check_writable(config, "destinationField", &o.destination_field) {
        errors.push(e);
    }
    match (engine, request) {
        (Some(engine), Some(request)) if errors.is_empty() => Ok(Box::new(QueryOpensearch {
            engine,
            request,
            required: o.required_param_names.unwrap_or_default(),
            optional: o.optional_param_names.unwrap_or_default(),
            pointer,
            dest: o.destination_field,
        })),
        _ => Err(ConfigErrors(errors)),
    }
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
