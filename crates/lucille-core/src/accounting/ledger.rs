//! The Publisher's ledger (publisher-accounting.txt): which document ids are in flight and what
//! became of every document. Pure data, so every rule is unit-tested without threads.
//!
//! - `pending` is a multiset: the same id may be in flight more than once (duplicates, CDC),
//!   and each copy needs its own terminal event.
//! - A terminal event for an id that is not pending (a child whose FINISH beat its CREATE) is
//!   remembered in `early`; the late CREATE then cancels it instead of tracking the child.
//! - `track` happens before a document is sent; `rollback` undoes it if the send fails.
//! - An event with an [`Origin`] (Kafka modes, where a crashed worker's or indexer's messages
//!   are replayed) is counted once per document id and origin, CREATE and terminal events
//!   apart: a replay sends the same events again with the same origins. Both kinds being
//!   deduplicated alike keeps every counted CREATE matched by one counted terminal event.

use std::hash::BuildHasher;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::event::{Event, EventType, Origin};

/// Counts kept for the run summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Documents the connector's documents were sent for processing (after collapsing).
    pub published: u64,
    /// Children registered by CREATE events.
    pub created: u64,
    pub succeeded: u64,
    pub failed: u64,
    pub dropped: u64,
    /// Documents `skipUnchanged` found unchanged: a DROP with the message
    /// [`crate::unchanged::UNCHANGED`], or a unit not read at all (counted as published too).
    pub unchanged: u64,
}

#[derive(Debug, Default)]
struct Multiset {
    counts: FxHashMap<String, u32>,
    total: usize,
}

impl Multiset {
    /// Adds one occurrence; returns how many there were before.
    fn add(&mut self, id: &str) -> u32 {
        let before = if let Some(n) = self.counts.get_mut(id) {
            *n += 1;
            *n - 1
        } else {
            self.counts.insert(id.to_string(), 1);
            0
        };
        self.total += 1;
        before
    }

    /// Removes one occurrence; false if the id was not there.
    fn remove_one(&mut self, id: &str) -> bool {
        match self.counts.get_mut(id) {
            Some(n) if *n > 1 => *n -= 1,
            Some(_) => {
                self.counts.remove(id);
            }
            None => return false,
        }
        self.total -= 1;
        true
    }

    fn count(&self, id: &str) -> u32 {
        self.counts.get(id).copied().unwrap_or(0)
    }
}

/// A document id (hashed: 8 bytes, a collision needs the same origin too) and an origin.
type Seen = (u64, Origin);

#[derive(Debug, Default)]
pub struct Ledger {
    pending: Multiset,
    early: Multiset,
    counts: Counts,
    /// Origins of the CREATE and of the terminal events counted (events with an origin only).
    created_seen: FxHashSet<Seen>,
    terminal_seen: FxHashSet<Seen>,
    duplicates: u64,
    /// Children created while a document with the same id was in flight (their parent or a
    /// sibling), and the first such id: counted right, but one replaces the other in an index.
    shared_ids: u64,
    first_shared_id: Option<String>,
}

impl Ledger {
    pub fn new() -> Self {
        Ledger::default()
    }

    /// Registers a document about to be sent for processing.
    pub fn track(&mut self, id: &str) {
        self.pending.add(id);
        self.counts.published += 1;
    }

    /// Counts `n` documents of a unit `skipUnchanged` did not read (unchanged since the last
    /// run): published and unchanged at once, with no events.
    pub fn count_unread_unchanged(&mut self, n: u64) {
        self.counts.published += n;
        self.counts.unchanged += n;
    }

    /// Undoes `track` after a failed send.
    pub fn rollback(&mut self, id: &str) {
        if self.pending.remove_one(id) {
            self.counts.published = self.counts.published.saturating_sub(1);
        }
    }

    /// Applies an event; false when it was a replayed duplicate, ignored.
    pub fn handle(&mut self, event: &Event) -> bool {
        if let Some(origin) = event.origin {
            let key = (
                foldhash::fast::FixedState::with_seed(0x6c75_6369_6c6c_6500)
                    .hash_one(event.doc_id.as_str()),
                origin,
            );
            let seen = match event.kind {
                EventType::Create => &mut self.created_seen,
                _ => &mut self.terminal_seen,
            };
            if !seen.insert(key) {
                self.duplicates += 1;
                return false;
            }
        }
        match event.kind {
            EventType::Create => {
                self.counts.created += 1;
                let in_flight = if self.early.remove_one(&event.doc_id) {
                    self.pending.count(&event.doc_id)
                } else {
                    self.pending.add(&event.doc_id)
                };
                if in_flight > 0 {
                    self.shared_ids += 1;
                    if self.first_shared_id.is_none() {
                        self.first_shared_id = Some(event.doc_id.clone());
                    }
                }
            }
            kind => {
                match kind {
                    EventType::Finish => self.counts.succeeded += 1,
                    EventType::Fail => self.counts.failed += 1,
                    EventType::Drop
                        if event.message.as_deref() == Some(crate::unchanged::UNCHANGED) =>
                    {
                        self.counts.unchanged += 1
                    }
                    EventType::Drop => self.counts.dropped += 1,
                    EventType::Create => {}
                }
                if !self.pending.remove_one(&event.doc_id) {
                    self.early.add(&event.doc_id);
                }
            }
        }
        true
    }

    /// Replayed events ignored.
    pub fn duplicates(&self) -> u64 {
        self.duplicates
    }

    /// How many children were created while a document with the same id was still in flight
    /// (their parent, or a sibling not yet indexed), and the first such id. Best effort: a
    /// sibling already indexed when its twin appears is not seen.
    pub fn shared_ids(&self) -> (u64, Option<&str>) {
        (self.shared_ids, self.first_shared_id.as_deref())
    }

    /// Documents (and children) still in flight.
    pub fn pending(&self) -> usize {
        self.pending.total
    }

    pub fn has_pending(&self) -> bool {
        self.pending.total > 0
    }

    pub fn pending_count(&self, id: &str) -> u32 {
        self.pending.count(id)
    }

    /// Up to `n` of the ids in flight, smallest first (a stable sample for a log line).
    pub fn pending_sample(&self, n: usize) -> Vec<String> {
        let mut ids: Vec<&String> = self.pending.counts.keys().collect();
        ids.sort_unstable();
        ids.into_iter().take(n).cloned().collect()
    }

    /// Terminal events still waiting for their CREATE.
    pub fn early(&self) -> usize {
        self.early.total
    }

    pub fn counts(&self) -> Counts {
        self.counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn ev(id: &str, kind: EventType) -> Event {
        Event::new(id, Arc::from("run"), kind)
    }

    #[test]
    fn unchanged_drops_and_unread_documents_are_counted_apart_from_drops() {
        let mut l = Ledger::new();
        l.track("a");
        l.track("b");
        l.handle(&ev("a", EventType::Drop).with_message(crate::unchanged::UNCHANGED));
        l.handle(&ev("b", EventType::Drop).with_message("dropped by a stage"));
        l.count_unread_unchanged(5);
        let c = l.counts();
        assert_eq!((c.published, c.unchanged, c.dropped), (7, 6, 1));
        assert!(!l.has_pending());
    }

    #[test]
    fn duplicates_need_one_terminal_event_each() {
        let mut l = Ledger::new();
        l.track("doc-1");
        l.track("doc-1");
        assert_eq!(l.pending_count("doc-1"), 2);
        l.handle(&ev("doc-1", EventType::Finish));
        assert_eq!(l.pending(), 1);
        assert!(l.has_pending());
        l.handle(&ev("doc-1", EventType::Fail));
        assert!(!l.has_pending());
        assert_eq!(
            l.counts(),
            Counts {
                published: 2,
                succeeded: 1,
                failed: 1,
                ..Default::default()
            }
        );
    }

    #[test]
    fn the_pending_sample_is_the_smallest_ids_in_flight() {
        let mut l = Ledger::new();
        for id in ["d-9", "d-10", "d-2", "d-3"] {
            l.track(id);
        }
        l.track("d-2");
        l.handle(&ev("d-3", EventType::Finish));
        assert_eq!(l.pending_sample(2), vec!["d-10", "d-2"]);
        assert_eq!(l.pending_sample(10), vec!["d-10", "d-2", "d-9"]);
    }

    #[test]
    fn a_child_with_the_id_of_a_document_in_flight_is_noticed() {
        let mut l = Ledger::new();
        l.track("p");
        l.handle(&ev("c", EventType::Create));
        l.handle(&ev("c", EventType::Finish));
        assert_eq!(
            l.shared_ids(),
            (0, None),
            "distinct ids, one after the other"
        );
        l.handle(&ev("p", EventType::Create)); // the parent's own id
        l.handle(&ev("x", EventType::Create));
        l.handle(&ev("x", EventType::Create)); // a sibling's id, the first still in flight
        assert_eq!(l.shared_ids(), (2, Some("p")));
        for id in ["p", "p", "x", "x"] {
            l.handle(&ev(id, EventType::Finish));
        }
        assert!(!l.has_pending());
        assert_eq!((l.counts().created, l.counts().succeeded), (4, 5));
        // A connector publishing one id twice (CDC) is not a child sharing an id.
        l.track("d");
        l.track("d");
        assert_eq!(l.shared_ids().0, 2);
    }

    #[test]
    fn terminal_before_create_is_reconciled() {
        let mut l = Ledger::new();
        l.track("parent");
        l.handle(&ev("child", EventType::Finish)); // beats its CREATE
        assert_eq!(l.early(), 1);
        assert_eq!(l.pending(), 1);
        l.handle(&ev("child", EventType::Create));
        assert_eq!(l.early(), 0);
        assert_eq!(
            l.pending(),
            1,
            "the late CREATE does not start tracking a finished child"
        );
        l.handle(&ev("parent", EventType::Finish));
        assert!(!l.has_pending());
        assert_eq!(l.counts().succeeded, 2);
        assert_eq!(l.counts().created, 1);
    }

    #[test]
    fn create_then_terminal_in_order() {
        let mut l = Ledger::new();
        l.track("p");
        l.handle(&ev("c", EventType::Create));
        assert_eq!(l.pending(), 2);
        l.handle(&ev("c", EventType::Drop));
        l.handle(&ev("p", EventType::Finish));
        assert!(!l.has_pending());
        assert_eq!((l.counts().dropped, l.counts().succeeded), (1, 1));
    }

    fn replayed(id: &str, kind: EventType, partition: i32, offset: i64, ordinal: u32) -> Event {
        let mut e = ev(id, kind);
        e.origin = Some(Origin {
            partition,
            offset,
            ordinal,
        });
        e
    }

    #[test]
    fn a_replayed_terminal_event_is_counted_once() {
        let mut l = Ledger::new();
        l.track("a");
        assert!(l.handle(&replayed("a", EventType::Finish, 0, 7, 0)));
        // The worker crashed before committing offset 7: the replay FINISHes it again.
        assert!(!l.handle(&replayed("a", EventType::Finish, 0, 7, 0)));
        assert_eq!((l.counts().succeeded, l.early(), l.duplicates()), (1, 0, 1));
        assert!(!l.has_pending());
    }

    #[test]
    fn duplicates_from_two_source_messages_are_both_counted() {
        // The connector published "a" twice: two source offsets, two terminal events due.
        let mut l = Ledger::new();
        l.track("a");
        l.track("a");
        assert!(l.handle(&replayed("a", EventType::Finish, 0, 1, 0)));
        assert!(l.has_pending());
        assert!(l.handle(&replayed("a", EventType::Fail, 0, 2, 0)));
        assert!(!l.has_pending());
        assert_eq!((l.counts().succeeded, l.counts().failed), (1, 1));
    }

    #[test]
    fn a_replayed_child_is_counted_once_whatever_the_order() {
        let mut l = Ledger::new();
        l.track("p");
        // First delivery: the child's FINISH beats its CREATE; the parent is indexed.
        l.handle(&replayed("c", EventType::Finish, 0, 3, 1));
        l.handle(&replayed("c", EventType::Create, 0, 3, 1));
        l.handle(&replayed("p", EventType::Finish, 0, 3, 0));
        // The replay repeats all three, in another order: nothing changes.
        assert!(!l.handle(&replayed("c", EventType::Create, 0, 3, 1)));
        assert!(!l.handle(&replayed("p", EventType::Finish, 0, 3, 0)));
        assert!(!l.handle(&replayed("c", EventType::Finish, 0, 3, 1)));
        assert!(!l.has_pending());
        assert_eq!(l.early(), 0);
        assert_eq!((l.counts().created, l.counts().succeeded), (1, 2));
        // A second emission of the same child id (a retry): a new ordinal, counted.
        l.track("q");
        l.handle(&replayed("c", EventType::Create, 0, 3, 2));
        l.handle(&replayed("c", EventType::Finish, 0, 3, 2));
        l.handle(&ev("q", EventType::Drop));
        assert!(!l.has_pending());
        assert_eq!((l.counts().created, l.counts().succeeded), (2, 3));
    }

    #[test]
    fn rollback_undoes_track() {
        let mut l = Ledger::new();
        l.track("a");
        l.rollback("a");
        assert!(!l.has_pending());
        assert_eq!(l.counts().published, 0);
        l.rollback("never-tracked");
        assert_eq!(l.counts().published, 0);
    }
}
