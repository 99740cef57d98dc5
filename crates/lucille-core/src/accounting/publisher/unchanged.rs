//! The Publisher's side of `skipUnchanged` for connectors that know more than a record's text:
//! a content hash read from the source before a document is built (a change-token column), and
//! the delete markers of documents that vanished from the source.

use std::sync::atomic::Ordering;

use super::{PublishError, Publisher, UNCHANGED_MSG};
use crate::document::Document;
use crate::event::EventType;
use crate::unchanged::{Hash, UnitRef};

impl Publisher {
    /// Ends `id` as unchanged when the change store holds `hash` for it (computed by the
    /// connector from the source, such as a change-token column, before building the
    /// document): true, and the document need not be built. False when it must be: build it
    /// and publish it with [`Publisher::publish_hashed_in`] and the same hash. Always false
    /// without `skipUnchanged: true`, or when the connector collapses documents (a collapsed
    /// document is hashed whole).
    pub fn publish_if_unchanged(
        &self,
        id: &str,
        hash: Hash,
        unit: Option<UnitRef>,
    ) -> Result<bool, PublishError> {
        let Some(tracker) = self.record_mode().filter(|_| self.collapsing.is_none()) else {
            return Ok(false);
        };
        if !tracker.is_unchanged(id, hash, unit) {
            return Ok(false);
        }
        if self.stopping.load(Ordering::Relaxed) {
            return Err(PublishError::Stopped(id.to_string()));
        }
        self.wait_while_paused(id)?;
        // Counts it, and marks it seen (not vanished); true as `is_unchanged` said: this
        // connector's thread is the only one that checks its ids.
        if !tracker.check(id, hash, unit) {
            tracing::error!(
                id,
                "skipUnchanged: the change store's answer changed between two lookups"
            );
        }
        self.num_received.fetch_add(1, Ordering::Relaxed);
        self.account_unprocessed(id, EventType::Drop, UNCHANGED_MSG)?;
        Ok(true)
    }

    /// Publishes a document whose content hash the connector computed from the source (see
    /// [`Publisher::publish_if_unchanged`]): it is stored under that hash once its tree ends
    /// well. A collapsing connector's documents are hashed whole instead.
    pub fn publish_hashed_in(
        &self,
        doc: Document,
        hash: Hash,
        unit: Option<UnitRef>,
    ) -> Result<(), PublishError> {
        if self.collapsing.is_some() {
            return self.publish_in(doc, unit);
        }
        self.publish_checked(doc, unit, Some(hash))
    }

    /// Publishes the delete markers of documents that vanished from the source (`ids`, read
    /// from `unit` if any, whose token then waits for them), through the indexer's deletion
    /// marker; without one they are only forgotten by the change store (said once per call).
    pub fn delete_vanished(
        &self,
        ids: &[String],
        unit: Option<UnitRef>,
    ) -> Result<(), PublishError> {
        let Some(changes) = self.changes() else {
            return Ok(());
        };
        if ids.is_empty() {
            return Ok(());
        }
        let Some((field, value)) = changes.deletion_marker() else {
            tracing::warn!(
                "{} document(s) vanished from the source but stay in the index: set \
                 indexer.deletionMarkerField and indexer.deletionMarkerFieldValue for \
                 skipUnchanged to delete them (first: {:?})",
                ids.len(),
                ids[0]
            );
            changes.forget(ids);
            return Ok(());
        };
        for id in ids {
            // Stored ids were documents' ids, so this cannot fail; if it did, the entry would
            // stay until the id is seen again.
            let mut doc = match Document::new(id.as_str()) {
                Ok(doc) => doc,
                Err(e) => {
                    tracing::error!(
                        id,
                        "skipUnchanged: cannot delete the vanished document: {e}"
                    );
                    continue;
                }
            };
            if let Err(e) = doc.set_field(field, serde_json::Value::from(value.as_str())) {
                tracing::error!(id, "skipUnchanged: cannot mark the vanished document: {e}");
                continue;
            }
            self.publish_deletion(doc, unit)?;
        }
        Ok(())
    }
}
