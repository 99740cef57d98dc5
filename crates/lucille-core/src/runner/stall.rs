//! The stall warning (`runner.stallWarningSecs`): when a run's pending documents stop moving,
//! the run says so, naming how many are pending and a sample of them with where their source
//! messages are, instead of waiting silently until `runner.connectorTimeout` ends it.

use std::time::{Duration, Instant};

use crate::accounting::ledger::Counts;
use crate::accounting::Publisher;

/// The default of `runner.stallWarningSecs`.
pub const DEFAULT_STALL_WARNING: Duration = Duration::from_secs(300);

/// How many pending ids the warning names.
const SAMPLE: usize = 10;

/// Watches a run's counts between completion polls: no count moving (nothing published, no
/// child created, no terminal event) for `limit` while documents are pending is a stall. It
/// warns once `limit` has passed, then again every `limit` while the stall lasts.
pub struct StallWatch {
    limit: Option<Duration>,
    counts: Counts,
    since: Instant,
    warned: Option<Instant>,
}

impl StallWatch {
    /// `limit` `None`: never warns.
    pub fn new(limit: Option<Duration>, now: Instant) -> Self {
        StallWatch {
            limit,
            counts: Counts::default(),
            since: now,
            warned: None,
        }
    }

    /// Whether a warning is due now; if so, how long nothing has moved.
    pub fn check(&mut self, counts: Counts, pending: usize, now: Instant) -> Option<Duration> {
        let limit = self.limit?;
        if counts != self.counts || pending == 0 {
            self.counts = counts;
            self.since = now;
            self.warned = None;
            return None;
        }
        let still = now.saturating_duration_since(self.since);
        let due = match self.warned {
            None => still >= limit,
            Some(at) => now.saturating_duration_since(at) >= limit,
        };
        if !due {
            return None;
        }
        self.warned = Some(now);
        Some(still)
    }

    /// Checks the publisher and logs the warning when one is due.
    pub fn watch(&mut self, connector: &str, p: &Publisher, timeout: Option<Duration>) {
        let Some(still) = self.check(p.counts(), p.pending(), Instant::now()) else {
            return;
        };
        tracing::warn!("{}", message(connector, p, still, timeout));
    }
}

fn message(connector: &str, p: &Publisher, still: Duration, timeout: Option<Duration>) -> String {
    let pending = p.pending();
    let ids = p.pending_sample(SAMPLE);
    let sample = ids
        .iter()
        .zip(p.source_positions(&ids))
        .map(|(id, at)| match at {
            Some(at) => format!("{id:?} (source {at})"),
            None => format!("{id:?}"),
        })
        .collect::<Vec<_>>()
        .join(", ");
    let more = if pending > ids.len() { ", ..." } else { "" };
    let end = match timeout {
        Some(t) => format!(
            "runner.connectorTimeout ends the run {} s after it started",
            t.as_secs()
        ),
        None => "runner.connectorTimeout is off, so the run waits for them".to_string(),
    };
    format!(
        "{connector}: {pending} document(s) pending and none finished, failed, dropped or \
         was published for {} s (runner.stallWarningSecs): {sample}{more}. Is every worker \
         and indexer running? {end}",
        still.as_secs()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(succeeded: u64) -> Counts {
        Counts {
            published: 10,
            succeeded,
            ..Counts::default()
        }
    }

    #[test]
    fn warns_once_the_limit_passes_without_movement_then_every_limit() {
        let t0 = Instant::now();
        let s = |n: u64| t0 + Duration::from_secs(n);
        let mut w = StallWatch::new(Some(Duration::from_secs(10)), t0);
        assert_eq!(w.check(counts(1), 9, s(0)), None);
        assert_eq!(w.check(counts(1), 9, s(9)), None);
        assert_eq!(w.check(counts(1), 9, s(10)), Some(Duration::from_secs(10)));
        assert_eq!(w.check(counts(1), 9, s(15)), None, "not again at once");
        assert_eq!(w.check(counts(1), 9, s(20)), Some(Duration::from_secs(20)));
        // Movement starts the clock again.
        assert_eq!(w.check(counts(2), 8, s(21)), None);
        assert_eq!(w.check(counts(2), 8, s(30)), None);
        assert_eq!(w.check(counts(2), 8, s(31)), Some(Duration::from_secs(10)));
    }

    #[test]
    fn nothing_pending_or_no_limit_is_never_a_stall() {
        let t0 = Instant::now();
        let mut w = StallWatch::new(Some(Duration::from_secs(1)), t0);
        assert_eq!(w.check(counts(10), 0, t0 + Duration::from_secs(5)), None);
        assert_eq!(w.check(counts(10), 0, t0 + Duration::from_secs(50)), None);
        let mut off = StallWatch::new(None, t0);
        assert_eq!(
            off.check(counts(1), 9, t0 + Duration::from_secs(5000)),
            None
        );
    }
}
