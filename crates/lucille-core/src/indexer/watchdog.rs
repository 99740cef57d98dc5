//! Detects a wedged indexer (reliable-scan-pattern.txt): an indexer thread that is alive but
//! makes no progress while work waits for it, e.g. a backend call that never returns. It is a
//! silence bound, not a duration cap: it fires only when documents are queued for the indexer
//! (or a backend call is in flight) and nothing was taken or finished for `indexer.inactivityTimeout`
//! (ms; default 10 minutes; 0 disables). A slow but moving indexer never trips it.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::IndexerStats;

pub const DEFAULT_INACTIVITY_TIMEOUT: Duration = Duration::from_secs(600);

pub struct Watchdog {
    limit: Option<Duration>,
    last_progress: u64,
    since: Instant,
}

impl Watchdog {
    pub fn new(limit: Option<Duration>, now: Instant) -> Self {
        Watchdog {
            limit,
            last_progress: 0,
            since: now,
        }
    }

    /// Why the indexer is wedged, if it is. `queued` is the number of documents waiting in
    /// the destination queue.
    pub fn check(&mut self, stats: &IndexerStats, queued: usize, now: Instant) -> Option<String> {
        let limit = self.limit?;
        let progress = stats.progress.load(Ordering::Relaxed);
        let sending = stats.sending.load(Ordering::Relaxed);
        if progress != self.last_progress || (queued == 0 && !sending) {
            // Moving, or idle with nothing to do: silence only counts while work waits.
            self.last_progress = progress;
            self.since = now;
            return None;
        }
        let silent = now.saturating_duration_since(self.since);
        if silent < limit {
            return None;
        }
        let waiting = if sending {
            format!("a backend call has not returned and {queued} documents are queued")
        } else {
            format!("{queued} documents are queued")
        };
        Some(format!(
            "the indexer is wedged: no progress for {:.1} s (indexer.inactivityTimeout) while {waiting}",
            silent.as_secs_f64()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fires_only_after_silence_while_work_waits() {
        let t0 = Instant::now();
        let stats = IndexerStats::default();
        let mut w = Watchdog::new(Some(Duration::from_secs(10)), t0);
        // Idle with nothing queued: never wedged, however long.
        assert_eq!(w.check(&stats, 0, t0 + Duration::from_secs(100)), None);
        // Work waits from t=100; not yet silent for 10 s.
        assert_eq!(w.check(&stats, 5, t0 + Duration::from_secs(105)), None);
        // Progress resets the clock.
        stats.progress.fetch_add(1, Ordering::Relaxed);
        assert_eq!(w.check(&stats, 5, t0 + Duration::from_secs(109)), None);
        assert_eq!(w.check(&stats, 5, t0 + Duration::from_secs(118)), None);
        let reason = w.check(&stats, 5, t0 + Duration::from_secs(119)).unwrap();
        assert!(reason.contains("5 documents are queued"), "{reason}");
        // An in-flight call with an empty queue is still work waiting.
        stats.sending.store(true, Ordering::Relaxed);
        let reason = w.check(&stats, 0, t0 + Duration::from_secs(130)).unwrap();
        assert!(reason.contains("backend call has not returned"), "{reason}");
    }

    #[test]
    fn disabled_never_fires() {
        let t0 = Instant::now();
        let stats = IndexerStats::default();
        stats.sending.store(true, Ordering::Relaxed);
        let mut w = Watchdog::new(None, t0);
        assert_eq!(
            w.check(&stats, 9, t0 + Duration::from_secs(1_000_000)),
            None
        );
    }
}
