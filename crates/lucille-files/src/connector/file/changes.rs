//! The FileConnector under `skipUnchanged` (see `lucille_core::unchanged`): each file is a
//! unit of the change store, its token its size and modification time (nanoseconds), so
//! - a file whose token is what the store holds, and whose every document ended well the last
//!   time it was read, is not read at all: its documents are counted unchanged;
//! - a file that is read has each record checked on its own (a changed record goes through
//!   the pipeline, the others end unchanged);
//! - documents that vanished are deleted (through the indexer's deletion marker) once every
//!   file was read: every document of a file that is gone from its storage, and those a file
//!   read to the end no longer holds (a record is stored with its file, so one that moved to
//!   another file is processed again there and is not vanished). Not with
//!   `moveToAfterProcessing` / `moveToErrorFolder`, where files leave their folder by design.
//!
//! With `skipUnchanged: "output"` every file is read and every record processed (the stages
//! may read outside data); only the indexer skips what the backend already has, so there are
//! no unit tokens and no vanished documents.

use std::collections::HashSet;
use std::time::UNIX_EPOCH;

use parking_lot::Mutex;

use crate::accounting::Publisher;
use crate::connector::ConnectorError;
use crate::storage::Entry;
use crate::unchanged::{ChangeTracker, Hash, UnitRef};

/// A file's token: its size and modification time; `None` when its metadata cannot be read
/// (it is then read, and never skipped).
fn token(entry: &Entry) -> Option<Hash> {
    let m = entry.metadata().ok()?;
    let modified = m
        .modified
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    Some(crate::unchanged::json_hash(&(m.size, modified.to_string())))
}

/// The unit each of `files` is read as; `None`: not read, its documents counted unchanged (or,
/// in output mode, where every file is read, read without one).
pub fn plan(
    changes: &ChangeTracker,
    publisher: &Publisher,
    files: &[Entry],
) -> Vec<Option<UnitRef>> {
    if changes.mode() == crate::unchanged::SkipMode::Output {
        // Every file is read: the stages may read outside data; only the backend is spared.
        return files.iter().map(|_| None).collect();
    }
    let mut units = Vec::with_capacity(files.len());
    let (mut skipped, mut skipped_docs) = (0u64, 0u64);
    for entry in files {
        let key = entry.path();
        let token = token(entry);
        if let Some(docs) = token.and_then(|t| changes.unit_unchanged(key, t)) {
            publisher.count_unread_unchanged(docs);
            skipped += 1;
            skipped_docs += docs;
            units.push(None);
            continue;
        }
        if token.is_none() {
            // Read, under a token no later listing gives it: never skipped.
            tracing::warn!("{key}: cannot read its size and modification time; it is read");
        }
        units.push(Some(changes.begin_unit(key, token.unwrap_or(0))));
    }
    tracing::info!(
        "skipUnchanged ({}): {} file(s) unchanged ({skipped_docs} document(s) not read), {} to read",
        changes.path().display(),
        skipped,
        files.len() as u64 - skipped
    );
    units
}

/// The files read to the end this run whose vanished documents are looked for once every file
/// was read (a document that moved to a file read later is not vanished).
#[derive(Default)]
pub struct ReadToTheEnd(Mutex<Vec<(String, UnitRef)>>);

/// After a file was read: whether to the end. With `looked_for`, its token waits for the
/// look for vanished documents at the end of the traversal (`finish`).
pub fn end(
    changes: &ChangeTracker,
    key: &str,
    unit: UnitRef,
    complete: bool,
    looked_for: Option<&ReadToTheEnd>,
) {
    match looked_for {
        Some(read) if complete => read.0.lock().push((key.to_string(), unit)),
        _ => changes.end_unit(unit, complete),
    }
}

/// Once every file was read: the documents of files gone from their storage since the last
/// run, and those the files read to the end no longer hold, are deleted; then those files'
/// tokens can be stored. `listed` are the files this run listed.
pub fn finish(
    changes: &ChangeTracker,
    publisher: &Publisher,
    read: ReadToTheEnd,
    listed: &[Entry],
    gone: &dyn Fn(&str) -> bool,
) -> Result<(), ConnectorError> {
    for (key, unit) in read.0.into_inner() {
        let ids = changes.unseen_in_unit(&key);
        if !ids.is_empty() {
            tracing::info!(
                "{key} no longer holds {} document(s): they are deleted",
                ids.len()
            );
        }
        publisher.delete_vanished(&ids, Some(unit))?;
        changes.end_unit(unit, true);
    }
    let listed: HashSet<String> = listed.iter().map(|e| e.path().to_string()).collect();
    for unit in changes.known_units() {
        if listed.contains(&unit) || !gone(&unit) {
            continue;
        }
        let ids = changes.unseen_in_unit(&unit);
        if !ids.is_empty() {
            tracing::info!("{unit} is gone: its {} document(s) are deleted", ids.len());
        }
        publisher.delete_vanished(&ids, None)?;
        changes.forget_unit(&unit);
    }
    Ok(())
}
