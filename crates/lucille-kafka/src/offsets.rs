//! At-least-once offsets: a consumer's messages finish out of order (several worker threads,
//! async deliveries), but a partition's committed offset may only move past a message once it
//! and every earlier one are done. Per partition, the offsets in flight; the offset to store is
//! the lowest still in flight, or one past the highest done.

use std::collections::{BTreeSet, HashMap};

use parking_lot::Mutex;

#[derive(Debug)]
struct Partition {
    in_flight: BTreeSet<i64>,
    /// One past the highest offset done.
    next: i64,
    /// The last offset reported as storable, so a completion that does not move it is quiet.
    stored: i64,
}

#[derive(Debug, Default)]
pub struct OffsetTracker {
    partitions: Mutex<HashMap<i32, Partition>>,
}

impl OffsetTracker {
    pub fn begin(&self, partition: i32, offset: i64) {
        let mut ps = self.partitions.lock();
        // The first offset seen on a partition is where this consumer started it.
        let p = ps.entry(partition).or_insert_with(|| Partition {
            in_flight: BTreeSet::new(),
            next: offset,
            stored: offset,
        });
        p.in_flight.insert(offset);
    }

    /// Marks `offset` done; returns the offset of the last message that may now be stored
    /// (librdkafka's offset store commits one past it), when it moved.
    pub fn complete(&self, partition: i32, offset: i64) -> Option<i64> {
        let mut ps = self.partitions.lock();
        Self::complete_in(&mut ps, partition, offset)
    }

    /// [`OffsetTracker::complete`] for several messages at once (a block, a batch): per
    /// partition whose storable offset moved, the last one, in no particular order.
    pub fn complete_all(&self, offsets: impl IntoIterator<Item = (i32, i64)>) -> Vec<(i32, i64)> {
        let mut ps = self.partitions.lock();
        let mut moved: Vec<(i32, i64)> = Vec::new();
        for (partition, offset) in offsets {
            if let Some(o) = Self::complete_in(&mut ps, partition, offset) {
                match moved.iter_mut().find(|(p, _)| *p == partition) {
                    Some(m) => m.1 = m.1.max(o),
                    None => moved.push((partition, o)),
                }
            }
        }
        moved
    }

    fn complete_in(ps: &mut HashMap<i32, Partition>, partition: i32, offset: i64) -> Option<i64> {
        let p = ps.get_mut(&partition)?;
        if !p.in_flight.remove(&offset) {
            // A partition revoked (and forgotten) while the message was processed.
            return None;
        }
        p.next = p.next.max(offset + 1);
        let safe = p.in_flight.first().copied().unwrap_or(p.next);
        if safe > p.stored {
            p.stored = safe;
            Some(safe - 1)
        } else {
            None
        }
    }

    /// Forgets revoked partitions: what is still in flight there is no longer ours to commit
    /// (the new owner replays it).
    pub fn forget(&self, partitions: &[i32]) {
        let mut ps = self.partitions.lock();
        for p in partitions {
            ps.remove(p);
        }
    }

    pub fn in_flight(&self) -> usize {
        self.partitions
            .lock()
            .values()
            .map(|p| p.in_flight.len())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_only_the_contiguous_prefix() {
        let t = OffsetTracker::default();
        for o in 10..14 {
            t.begin(0, o);
        }
        assert_eq!(t.complete(0, 12), None, "10 and 11 are still in flight");
        assert_eq!(t.complete(0, 10), Some(10));
        assert_eq!(t.complete(0, 11), Some(12), "12 was done already");
        assert_eq!(t.complete(0, 13), Some(13));
        assert_eq!(t.in_flight(), 0);
    }

    #[test]
    fn a_block_stores_once_per_partition_and_only_its_contiguous_prefix() {
        let t = OffsetTracker::default();
        for o in 0..6 {
            t.begin(0, o);
            t.begin(1, 100 + o);
        }
        let mut moved = t.complete_all([(0, 0), (0, 1), (0, 3), (1, 101), (1, 100)]);
        moved.sort_unstable();
        assert_eq!(
            moved,
            vec![(0, 1), (1, 101)],
            "0:2 and 1:102 are still in flight"
        );
        let moved = t.complete_all([(0, 2), (5, 1)]);
        assert_eq!(
            moved,
            vec![(0, 3)],
            "3 was done already; partition 5 is not ours"
        );
        assert_eq!(t.complete_all([]), vec![]);
    }

    #[test]
    fn a_forgotten_partition_stores_nothing() {
        let t = OffsetTracker::default();
        t.begin(1, 5);
        t.begin(2, 7);
        t.forget(&[1]);
        assert_eq!(t.complete(1, 5), None);
        assert_eq!(t.complete(2, 7), Some(7));
    }
}
