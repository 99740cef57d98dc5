//! EmitDocsToDeleteByPrefix (Lucille's lucille-pinecone plugin, its keys): for a document marked
//! for deletion (`deletionMarkerField` = `deletionMarkerFieldValue`), lists the ids of a
//! Pinecone index that start with the document's id (plus `addPrefix`) in each of `namespaces`
//! (its keys; the values are not used, so the indexer's block can be reused), or in the
//! namespace `default`, and emits one child per id, marked for deletion the same way, so the
//! Pinecone indexer deletes them: the chunks of a deleted document, indexed as `doc1-0`,
//! `doc1-1`, ... With `dropOriginal` the marked document itself is dropped.
//!
//! Keys (Lucille's): `index`, `apiKey`, `deletionMarkerField`, `deletionMarkerFieldValue`
//! (required), `dropOriginal` (default false), `addPrefix`, `namespaces`. New here, as on the
//! Pinecone indexer: `host` (the index's data-plane URL; without it the control plane is asked
//! when the stage starts, and an index that is not ready stops the run before it starts, as
//! Lucille's stage does), `controlPlaneUrl`, `requestTimeout` (ms, default 30000). Listing
//! follows Pinecone's pages (`GET {host}/vectors/list?namespace=&prefix=&paginationToken=`);
//! 429, 5xx and no answer are retried 3 times with backoff; a listing that fails for good
//! FAILs the document with Pinecone's message.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::config::{ComponentConfig, ConfigErrors, Options, Spec};
use crate::document::Document;
use crate::http::{self, Auth, HttpClient, RetryPolicy};
use crate::indexer::PositiveMillis;
use crate::pinecone::{describe_index, list_ids, HostUrl, CONTROL_PLANE, DEFAULT_NAMESPACE};
use crate::stage::{Stage, StageDescriptor, StageFailure, StageResult};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "EmitDocsToDeleteByPrefix",
    spec: EmitDocsToDeleteByPrefixOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

const DEFAULT_TIMEOUT: Duration = Duration::from_millis(30_000);

/// For a document marked for deletion, emits a child marked for deletion for each id of a
/// Pinecone index that starts with the document's id (the vectors of its chunks).
#[derive(Options)]
#[options(base = Spec::stage())]
struct EmitDocsToDeleteByPrefixOptions {
    /// The Pinecone index.
    index: String,
    /// The API key, sent as Api-Key.
    api_key: String,
    /// The field that marks a document for deletion (as the indexer's deletionMarkerField).
    deletion_marker_field: String,
    /// The value that marks it (as the indexer's deletionMarkerFieldValue).
    deletion_marker_field_value: String,
    /// true: the marked document itself is dropped (its children are still emitted).
    #[option(default = false)]
    drop_original: bool,
    /// Added to the document's id to make the prefix listed (doc1 + "-v1" lists "doc1-v1...").
    #[option(default = "")]
    add_prefix: String,
    /// The namespaces to list, as the keys of an object (the values are not used: the
    /// indexer's namespaces block can be reused); default: the namespace "default".
    namespaces: Option<Map<String, Value>>,
    /// The index's data-plane URL (https://my-index-abc.svc.pinecone.io, or any http://
    /// address); without it, the control plane is asked for it.
    host: Option<HostUrl>,
    /// The control plane's URL (default https://api.pinecone.io).
    control_plane_url: Option<HostUrl>,
    /// Milliseconds one request may take (default 30000).
    request_timeout: Option<PositiveMillis>,
}

struct EmitDocsToDeleteByPrefix {
    o: EmitDocsToDeleteByPrefixOptions,
    namespaces: Vec<String>,
    client: HttpClient,
    /// The data-plane URL, once known (at start).
    host: Option<String>,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = EmitDocsToDeleteByPrefixOptions::from_config(config)?;
    let mut errors = Vec::new();
    for (key, value) in [
        ("index", &o.index),
        ("apiKey", &o.api_key),
        ("deletionMarkerField", &o.deletion_marker_field),
        ("deletionMarkerFieldValue", &o.deletion_marker_field_value),
    ] {
        if value.is_empty() {
            errors.push(config.error(key, "must not be empty"));
        }
    }
    let namespaces = match &o.namespaces {
        None => vec![DEFAULT_NAMESPACE.to_string()],
        Some(map) if map.is_empty() => {
            errors.push(config.error(
                "namespaces",
                "names no namespace, so nothing would be listed: name at least one, or remove \
                 it to list the namespace \"default\"",
            ));
            Vec::new()
        }
        Some(map) => map.keys().cloned().collect(),
    };
    if !errors.is_empty() {
        return Err(errors.into());
    }
    let client = HttpClient::new(
        "Pinecone",
        RetryPolicy {
            max_retries: 3,
            retryable: vec![429, 500, 502, 503, 504, http::NO_STATUS],
            ..RetryPolicy::default()
        },
        None,
        false,
        Auth::Header("Api-Key", o.api_key.clone()),
    )
    .with_timeout(o.request_timeout.map_or(DEFAULT_TIMEOUT, |t| t.0));
    Ok(Box::new(EmitDocsToDeleteByPrefix {
        host: o.host.as_ref().map(|h| h.0.clone()),
        o,
        namespaces,
        client,
    }))
}

impl Stage for EmitDocsToDeleteByPrefix {
    fn start(&mut self) -> Result<(), StageFailure> {
        if self.host.is_none() {
            let control_plane = self
                .o
                .control_plane_url
                .as_ref()
                .map_or(CONTROL_PLANE, |c| c.0.as_str());
            let found = describe_index(&self.client, control_plane, &self.o.index)
                .map_err(|e| StageFailure::msg(e.to_string()))?;
            self.host = Some(found.host);
        }
        Ok(())
    }

    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        if !doc.is_marked(
            &self.o.deletion_marker_field,
            &self.o.deletion_marker_field_value,
        ) {
            return Ok(None);
        }
        let host = self.host.as_deref().ok_or_else(|| {
            StageFailure::msg("EmitDocsToDeleteByPrefix was not started (no Pinecone host)")
        })?;
        let prefix = format!("{}{}", doc.id(), self.o.add_prefix);
        let mut ids = Vec::new();
        for namespace in &self.namespaces {
            let found = list_ids(&self.client, host, namespace, &prefix)
                .map_err(|e| StageFailure::msg(format!("error listing vectors to delete: {e}")))?;
            ids.extend(found);
        }
        if self.o.drop_original {
            doc.set_dropped(true);
        }
        if ids.is_empty() {
            return Ok(None);
        }
        let (field, value) = (
            self.o.deletion_marker_field.clone(),
            self.o.deletion_marker_field_value.clone(),
        );
        Ok(Some(Box::new(ids.into_iter().map(move |id| {
            let mut child = Document::new(id.as_str()).map_err(|e| {
                StageFailure::msg(format!(
                    "Pinecone listed an id that is not a document id: {e}"
                ))
            })?;
            child
                .set_field(&field, Value::from(value.as_str()))
                .map_err(|e| StageFailure::msg(e.to_string()))?;
            Ok(child)
        }))))
    }
}
