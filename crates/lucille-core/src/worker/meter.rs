//! A one-minute exponentially weighted rate, as Codahale's Meter reports it in Lucille's
//! "One minute rate" log line. Small enough to write by hand: `mark` is a relaxed atomic add on
//! the hot path and `tick` (every 5 s, from the pool's logger thread) folds the count in.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

pub const TICK: Duration = Duration::from_secs(5);

#[derive(Debug, Default)]
pub struct Meter {
    uncounted: AtomicU64,
    /// f64 bits of the current rate in events per second.
    rate: AtomicU64,
    initialized: AtomicBool,
}

impl Meter {
    pub fn mark(&self, n: u64) {
        self.uncounted.fetch_add(n, Ordering::Relaxed);
    }

    /// Folds the events since the last tick into the rate; call every [`TICK`].
    pub fn tick(&self) {
        let count = self.uncounted.swap(0, Ordering::Relaxed) as f64;
        let instant = count / TICK.as_secs_f64();
        let alpha = 1.0 - (-TICK.as_secs_f64() / 60.0).exp();
        let rate = if self.initialized.swap(true, Ordering::Relaxed) {
            let old = f64::from_bits(self.rate.load(Ordering::Relaxed));
            old + alpha * (instant - old)
        } else {
            instant
        };
        self.rate.store(rate.to_bits(), Ordering::Relaxed);
    }

    pub fn one_minute_rate(&self) -> f64 {
        f64::from_bits(self.rate.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_starts_at_first_tick_and_decays_toward_new_rate() {
        let m = Meter::default();
        assert_eq!(m.one_minute_rate(), 0.0);
        m.mark(500);
        m.tick();
        assert!((m.one_minute_rate() - 100.0).abs() < 1e-9);
        for _ in 0..12 {
            m.tick(); // one minute of silence
        }
        let r = m.one_minute_rate();
        assert!(
            r < 100.0 * 0.4 && r > 100.0 * 0.3,
            "decays by about 1/e per minute: {r}"
        );
    }
}
