//! `worker.maxProcessingSecs`: the pool's supervisor observes every worker and times out a
//! document whose pipeline runs too long.
//!
//! Each worker publishes its phase in one atomic word, `seq << 2 | phase`: `IDLE` (waiting
//! for work), `STAGE` (running stage code on document `seq`), `SEND` (emitting events and
//! index operations, which may wait on backpressure and does not count), or `ABANDONED`. The
//! worker reads no clock for it: the supervisor, ticking every 100 ms, adds up the time it
//! sees one `seq` in `STAGE`.
//!
//! Past the limit it first interrupts the thread (a Python stage gets a `TimeoutError` raised
//! in it, so the thread unwinds and FAILs the document itself, with a timeout reason). If the
//! thread is still in the stage [`GRACE`] later (or there is no interrupter: a Rust stage
//! cannot be interrupted), the supervisor claims the document by moving the word from `STAGE`
//! to `ABANDONED`, FAILs it, detaches the thread and starts a replacement. Every worker
//! transition out of `STAGE` is a compare-and-swap, so exactly one side wins: a worker that
//! comes back to an `ABANDONED` word discards its late result, sends nothing and ends.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

pub const IDLE: u64 = 0;
pub const STAGE: u64 = 1;
pub const SEND: u64 = 2;
pub const ABANDONED: u64 = 3;
const PHASE: u64 = 3;

/// How long a thread that was interrupted may take to unwind before it is abandoned.
pub const GRACE: Duration = Duration::from_secs(2);

/// The supervisor claimed this worker's document: the worker must send nothing more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Abandoned;

/// One worker's observable state.
#[derive(Debug, Default)]
pub struct Slot {
    state: AtomicU64,
    /// Ids of the documents of the current `seq` (read only by a supervisor that won the
    /// claim, so the lock is never contended on the worker's path).
    ids: Mutex<Vec<String>>,
    /// The interrupter's id of the worker thread (0: none).
    pub thread_id: AtomicU64,
    /// The `seq` an interrupt was requested for (0: none).
    interrupt_for: AtomicU64,
}

impl Slot {
    /// Starts document(s) `ids`: a new `seq` in `STAGE`. Called only from `IDLE` or `SEND`,
    /// which only the worker leaves, so a plain store is safe.
    pub fn begin<'a>(&self, ids: impl IntoIterator<Item = &'a str>) {
        {
            let mut slot_ids = self.ids.lock();
            let mut n = 0;
            for id in ids {
                match slot_ids.get_mut(n) {
                    Some(s) => {
                        s.clear();
                        s.push_str(id);
                    }
                    None => slot_ids.push(id.to_string()),
                }
                n += 1;
            }
            slot_ids.truncate(n);
        }
        let seq = (self.state.load(Ordering::Relaxed) >> 2) + 1;
        self.state.store(seq << 2 | STAGE, Ordering::Release);
    }

    /// Leaves stage code to send; fails if the supervisor claimed the document.
    pub fn enter_send(&self) -> Result<(), Abandoned> {
        let s = self.state.load(Ordering::Acquire);
        match s & PHASE {
            SEND | IDLE => Ok(()),
            STAGE => self
                .state
                .compare_exchange(s, s & !PHASE | SEND, Ordering::AcqRel, Ordering::Acquire)
                .map(|_| ())
                .map_err(|_| Abandoned),
            _ => Err(Abandoned),
        }
    }

    /// Back to stage code after sending (the worker owns `SEND`, so a plain store).
    pub fn leave_send(&self) {
        let s = self.state.load(Ordering::Relaxed);
        if s & PHASE == SEND {
            self.state.store(s & !PHASE | STAGE, Ordering::Release);
        }
    }

    /// The document(s) are done; fails if the supervisor claimed them first.
    pub fn end(&self) -> Result<(), Abandoned> {
        self.enter_send()?;
        let s = self.state.load(Ordering::Relaxed);
        self.state.store(s & !PHASE | IDLE, Ordering::Release);
        Ok(())
    }

    /// Whether the current document was interrupted for running too long.
    pub fn interrupted(&self) -> bool {
        let seq = self.state.load(Ordering::Relaxed) >> 2;
        seq != 0 && self.interrupt_for.load(Ordering::Acquire) == seq
    }

    /// After [`Slot::end`]: withdraws an interrupt that may still be pending for the thread.
    pub fn clear_interrupt(&self, seq_done: u64) {
        if self.interrupt_for.load(Ordering::Acquire) != seq_done {
            return;
        }
        if let Some(i) = crate::thread_scope::interrupter() {
            (i.clear)(self.thread_id.load(Ordering::Relaxed));
        }
    }

    /// The current `seq`.
    pub fn seq(&self) -> u64 {
        self.state.load(Ordering::Relaxed) >> 2
    }

    /// The raw word, for the supervisor.
    pub fn word(&self) -> u64 {
        self.state.load(Ordering::Acquire)
    }

    /// Supervisor: claims `word` (a `STAGE` word it observed); on success returns the ids
    /// of the documents it now owns.
    pub fn abandon(&self, word: u64) -> Option<Vec<String>> {
        self.state
            .compare_exchange(
                word,
                word & !PHASE | ABANDONED,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .ok()?;
        Some(self.ids.lock().clone())
    }

    /// Supervisor: notes that `seq` is being interrupted (before raising, so a worker that
    /// finishes meanwhile withdraws the raise).
    pub fn request_interrupt(&self, seq: u64) {
        self.interrupt_for.store(seq, Ordering::Release);
    }
}

/// The supervisor's view of one worker.
#[derive(Debug, Default)]
pub struct Observed {
    seq: u64,
    busy: Duration,
    interrupted: bool,
}

/// What the supervisor should do about a worker after a tick.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    Fine,
    /// Interrupt the thread (document `seq`, observed word `word`).
    Interrupt {
        seq: u64,
        word: u64,
    },
    /// Claim `word` and abandon the thread.
    Abandon {
        word: u64,
    },
}

impl Observed {
    /// Adds `tick` of observation of `word`; `can_interrupt` when an interrupter exists.
    pub fn observe(
        &mut self,
        word: u64,
        tick: Duration,
        limit: Duration,
        can_interrupt: bool,
    ) -> Verdict {
        let seq = word >> 2;
        if seq != self.seq {
            *self = Observed {
                seq,
                ..Observed::default()
            };
        }
        if word & PHASE != STAGE {
            return Verdict::Fine;
        }
        self.busy += tick;
        if self.busy < limit {
            return Verdict::Fine;
        }
        if can_interrupt && !self.interrupted {
            self.interrupted = true;
            return Verdict::Interrupt { seq, word };
        }
        if self.interrupted && self.busy < limit + GRACE {
            return Verdict::Fine;
        }
        Verdict::Abandon { word }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exactly_one_side_wins_the_document() {
        let slot = Slot::default();
        slot.begin(["a"]);
        let word = slot.word();
        // The worker sends first: the supervisor's claim of the old word fails.
        assert_eq!(slot.enter_send(), Ok(()));
        assert_eq!(slot.abandon(word), None);
        slot.leave_send();
        // The supervisor claims first: the worker's late result is refused.
        let word = slot.word();
        assert_eq!(slot.abandon(word), Some(vec!["a".to_string()]));
        assert_eq!(slot.enter_send(), Err(Abandoned));
        assert_eq!(slot.end(), Err(Abandoned));
    }

    #[test]
    fn only_stage_time_of_one_document_counts() {
        let limit = Duration::from_secs(1);
        let tick = Duration::from_millis(400);
        let slot = Slot::default();
        let mut o = Observed::default();
        slot.begin(["a"]);
        assert_eq!(o.observe(slot.word(), tick, limit, false), Verdict::Fine);
        slot.enter_send().unwrap();
        // Time spent sending (backpressure) does not count.
        for _ in 0..10 {
            assert_eq!(o.observe(slot.word(), tick, limit, false), Verdict::Fine);
        }
        slot.leave_send();
        assert_eq!(o.observe(slot.word(), tick, limit, false), Verdict::Fine);
        let w = slot.word();
        assert_eq!(
            o.observe(w, tick, limit, false),
            Verdict::Abandon { word: w }
        );
        // A new document starts from zero.
        slot.end().unwrap();
        slot.begin(["b"]);
        assert_eq!(o.observe(slot.word(), tick, limit, true), Verdict::Fine);
        assert_eq!(o.observe(slot.word(), tick, limit, true), Verdict::Fine);
        let w = slot.word();
        assert_eq!(
            o.observe(w, tick, limit, true),
            Verdict::Interrupt {
                seq: w >> 2,
                word: w
            }
        );
        // Interrupted: abandoned only after the grace.
        let mut waited = Duration::ZERO;
        while o.observe(w, tick, limit, true) == Verdict::Fine {
            waited += tick;
            assert!(waited <= GRACE, "never abandoned");
        }
        assert!(waited + tick >= GRACE);
    }
}
