//! The FileConnector's resumable traversal and change detection, on the connector checkpoint
//! (`super::super::checkpoint`): units are files, records are numbered in file order through
//! one sink, so an interrupted run skips exactly the records an earlier run had acknowledged.
//!
//! Keys: `checkpoint { path }` (the SQLite state file), `incremental` (skip files whose size,
//! modification time and content hash are unchanged since the last finished traversal),
//! `emitDeletes` with `deletionMarkerField` / `deletionMarkerFieldValue` (publish a delete
//! marker for each file that vanished since it was last read; default `is_deleted` = `"true"`).

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use super::{RecordSink, FILE_PATH};
use crate::accounting::{PublishError, Publisher};
use crate::connector::checkpoint::{Checkpoint, Plan, Stamp, Tracker, UnitCounter};
pub use crate::connector::checkpoint::{TrackerHandle, UnitId};
use crate::connector::{Common, ConnectorError};
use crate::document::ids::md5_hex;
use crate::document::Document;
use crate::record::Record;
use crate::storage::Entry;

#[derive(Debug, Clone)]
pub struct ResumeSettings {
    pub path: PathBuf,
    pub incremental: bool,
    pub emit_deletes: bool,
    pub marker_field: String,
    pub marker_value: String,
    /// Files read less than this long ago are skipped (Lucille's `lastPublishedCutoff`).
    pub published_cutoff: Option<std::time::Duration>,
    /// Vanished files stay in the store (Lucille's `state.performDeletions: false`).
    pub keep_vanished: bool,
    /// The name the units are kept under: the connector's, or Lucille's `state.tableName`.
    pub namespace: Option<String>,
}

impl ResumeSettings {
    /// A checkpoint at `path`, every option at its default (the deletion marker
    /// `is_deleted: "true"`).
    pub fn at(path: PathBuf) -> Self {
        ResumeSettings {
            path,
            incremental: false,
            emit_deletes: false,
            marker_field: "is_deleted".into(),
            marker_value: "true".into(),
            published_cutoff: None,
            keep_vanished: false,
            namespace: None,
        }
    }
}

/// A file this run reads, with where to start.
pub struct PlannedFile {
    pub entry: Entry,
    pub unit: UnitId,
    pub skip: u64,
}

/// The checkpoint state of one `execute`.
pub struct ResumeRun {
    tracker: Tracker,
    vanished: Vec<String>,
}

/// A file's size and modification time (ms since the epoch) for the checkpoint's stamp.
fn stamp_of(entry: &Entry) -> std::io::Result<(u64, i64)> {
    let m = entry.metadata()?;
    let modified_ms = m
        .modified
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as i64);
    Ok((m.size, modified_ms))
}

impl ResumeRun {
    /// Opens the checkpoint, plans every listed file, publishes delete markers for vanished
    /// ones (with `emitDeletes`; `gone` says whether a no longer listed `file_path` is gone
    /// from its storage) and starts the writer. Returns the files to read. A unit's key is
    /// its `file_path`; its content hash the object's ETag or the MD5 of a local file.
    pub fn start(
        settings: &ResumeSettings,
        common: &Common,
        files: &[Entry],
        gone: &dyn Fn(&str) -> bool,
        publisher: &Arc<Publisher>,
    ) -> Result<(ResumeRun, Vec<PlannedFile>), ConnectorError> {
        let namespace = settings.namespace.as_deref().unwrap_or(&common.name);
        let cp = Checkpoint::open(&settings.path, namespace, settings.incremental)
            .map_err(|e| ConnectorError::new(e.to_string()))?
            .with_published_cutoff(settings.published_cutoff)
            .keeping_vanished(settings.keep_vanished);
        let units = UnitCounter::default();
        let mut planned = Vec::new();
        let mut begins = Vec::new();
        let (mut done, mut unchanged, mut settled, mut recent) = (0u64, 0u64, 0u64, 0u64);
        let mut seen = HashSet::with_capacity(files.len());
        for entry in files {
            let key = entry.path().to_string();
            let hash = || entry.storage.content_hash(&entry.file);
            seen.insert(key.clone());
            // Unreadable metadata: read it anyway; the reader reports the failure.
            let (size, modified_ms) = stamp_of(entry).unwrap_or_default();
            let (plan, mut stamp) = cp.plan(&key, size, modified_ms, hash).unwrap_or((
                Plan::Read { skip: 0 },
                Stamp {
                    size,
                    modified_ms,
                    hash: None,
                },
            ));
            match plan {
                Plan::Read { skip } => {
                    if settings.incremental && stamp.hash.is_none() {
                        // Stored for the next run's comparison.
                        stamp.hash = hash().ok();
                    }
                    let unit = units.next();
                    begins.push((unit, key, stamp, skip));
                    planned.push(PlannedFile {
                        entry: entry.clone(),
                        unit,
                        skip,
                    });
                }
                Plan::SkipDone => done += 1,
                Plan::SkipUnchanged => unchanged += 1,
                Plan::SkipRecentlyPublished => recent += 1,
                Plan::SkipSettledFailed { error } => {
                    settled += 1;
                    tracing::error!(
                        connector = common.name.as_str(),
                        "{key}: not read again after failing {} times (last: {error}); the traversal stays incomplete until it changes",
                        crate::connector::checkpoint::MAX_UNIT_ATTEMPTS
                    );
                }
            }
        }
        // Gone from disk, not merely out of this run's scope: a narrower `paths`, an exclude or
        // `modifiedCutoff` must never turn into deletes.
        let vanished: Vec<String> = cp.vanished(&seen).into_iter().filter(|p| gone(p)).collect();
        tracing::info!(
            connector = common.name.as_str(),
            "checkpoint {}: {} traversal; {} file(s) to read ({} resumed mid-file), {} already done, {} unchanged, {} read within lastPublishedCutoff, {} settled-failed, {} vanished",
            settings.path.display(),
            if cp.is_resuming() { "resuming the" } else { "a new" },
            planned.len(),
            planned.iter().filter(|p| p.skip > 0).count(),
            done,
            unchanged,
            recent,
            settled,
            vanished.len()
        );
        let tracker = cp.start_tracker(publisher);
        let handle = tracker.handle();
        for (unit, key, stamp, skip) in begins {
            handle.begin(unit, &key, stamp, skip);
        }
        for _ in 0..settled {
            handle.settled();
        }
        if settings.emit_deletes {
            for path in &vanished {
                let mut doc = Document::new(common.doc_id(&md5_hex(path)))
                    .map_err(|e| ConnectorError::new(e.to_string()))?;
                let set = |doc: &mut Document, k: &str, v: &str| {
                    doc.set_field(k, serde_json::Value::from(v))
                        .map_err(|e| ConnectorError::new(e.to_string()))
                };
                set(&mut doc, FILE_PATH, path)?;
                set(&mut doc, &settings.marker_field, &settings.marker_value)?;
                publisher.publish(doc)?;
            }
        }
        Ok((ResumeRun { tracker, vanished }, planned))
    }

    pub fn handle(&self) -> TrackerHandle {
        self.tracker.handle()
    }

    /// After the run completed: final watermarks, vanished files forgotten, and the traversal
    /// marked finished when every file completed.
    pub fn finish(self, connector: &str) -> Result<(), ConnectorError> {
        let summary = self
            .tracker
            .finish(true, self.vanished)
            .map_err(|e| ConnectorError::new(e.to_string()))?;
        if summary.finished {
            tracing::info!(
                connector,
                "checkpoint: traversal finished ({} file(s) complete)",
                summary.complete
            );
        } else {
            tracing::warn!(
                connector,
                "checkpoint: traversal left open: {} file(s) incomplete; the next run resumes them",
                summary.incomplete
            );
        }
        Ok(())
    }
}

/// Numbers a file's records in order, skips those an earlier run had acknowledged, and tells
/// the tracker about the rest before they are published.
pub struct CheckpointSink<'a> {
    pub inner: &'a mut dyn RecordSink,
    pub tracker: &'a TrackerHandle,
    pub unit: UnitId,
    pub skip: u64,
    pub next: u64,
}

impl CheckpointSink<'_> {
    /// The number of the next record, or `None` when it is to be skipped.
    fn number(&mut self) -> Option<u64> {
        let n = self.next;
        self.next += 1;
        (n >= self.skip).then_some(n)
    }
}

impl RecordSink for CheckpointSink<'_> {
    fn publish(&mut self, doc: Document) -> Result<(), PublishError> {
        match self.number() {
            Some(n) => {
                self.tracker.published(self.unit, n, doc.id());
                self.inner.publish(doc)
            }
            None => Ok(()),
        }
    }

    fn publish_record(&mut self, record: Record) -> Result<(), PublishError> {
        match self.number() {
            Some(n) => {
                self.tracker.published(self.unit, n, &record.id);
                self.inner.publish_record(record)
            }
            None => Ok(()),
        }
    }

    fn fail(&mut self, id: String, reason: String) -> Result<(), PublishError> {
        match self.number() {
            Some(n) => {
                self.tracker.published(self.unit, n, &id);
                self.inner.fail(id, reason)
            }
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use super::*;
    use crate::accounting::PublisherSettings;
    use crate::messaging::LocalMessenger;

    #[derive(Default)]
    struct Collect(Vec<String>);

    impl RecordSink for Collect {
        fn publish(&mut self, doc: Document) -> Result<(), PublishError> {
            self.0.push(doc.id().to_string());
            Ok(())
        }
        fn fail(&mut self, id: String, _reason: String) -> Result<(), PublishError> {
            self.0.push(format!("FAIL {id}"));
            Ok(())
        }
    }

    #[test]
    fn the_sink_numbers_good_and_failed_records_alike_and_skips_the_acknowledged_prefix() {
        let dir = std::env::temp_dir().join(format!("lucille-resume-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let publisher = Arc::new(Publisher::new(
            Arc::from("run"),
            Arc::new(LocalMessenger::new(4)),
            PublisherSettings::default(),
            Arc::new(AtomicBool::new(false)),
        ));
        let cp = Checkpoint::open(&dir.join("s.sqlite"), "files", false).unwrap();
        let tracker = cp.start_tracker(&publisher);
        let handle = tracker.handle();
        let unit = UnitCounter::default().next();
        let mut out = Collect::default();
        let mut sink = CheckpointSink {
            inner: &mut out,
            tracker: &handle,
            unit,
            skip: 2,
            next: 0,
        };
        for id in ["r0", "r1", "r2"] {
            sink.publish(Document::new(id).unwrap()).unwrap();
        }
        sink.fail("r3".into(), "bad line".into()).unwrap();
        sink.publish(Document::new("r4").unwrap()).unwrap();
        assert_eq!(sink.next, 5);
        assert_eq!(out.0, ["r2", "FAIL r3", "r4"]);
        drop(tracker);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
