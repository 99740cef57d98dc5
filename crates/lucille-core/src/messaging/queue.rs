//! The bounded queue of a local run's hand-offs, which items cross in blocks.
//!
//! Written here rather than taken from crossbeam-channel (which the queues used before): a
//! channel hands over one item per operation and wakes a waiting receiver on every send. A
//! run's threads hand over blocks (a connector's publishes, a worker's outputs, an indexer
//! batch's events), and what a waiting thread costs is its wake-ups: each one is a task switch
//! for it and, on a machine with few cores, a preemption of a thread doing the work. This queue
//! takes and gives blocks under one lock, counts its capacity in items, and wakes a waiting
//! consumer only when enough has queued for it ([`BlockQueue::new`]'s `wake_at`) or when a
//! producer is about to wait itself ([`BlockQueue::ring`]), so a trickle is never held back
//! while a busy run wakes its consumers once per many blocks. A consumer that waits with a
//! timeout takes what is there when the timeout ends, so the wake-up rule changes when items
//! are taken, never whether. A full queue takes a producer back only once it has drained to
//! half (one wake-up per half queue, not per slot).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, MutexGuard};

struct State<T> {
    items: VecDeque<T>,
    readers_waiting: usize,
    writers_waiting: usize,
}

/// A bounded multi-producer, multi-consumer FIFO queue of items handed over in blocks.
pub(crate) struct BlockQueue<T> {
    state: Mutex<State<T>>,
    readers: Condvar,
    writers: Condvar,
    capacity: usize,
    wake_at: usize,
    /// The items queued, readable without the lock (queue depths, emptiness checks).
    len: AtomicUsize,
}

impl<T> BlockQueue<T> {
    /// A queue of at most `capacity` items (a block larger than that is taken alone into an
    /// empty queue) whose waiting consumers are woken once `wake_at` items are queued.
    pub(crate) fn new(capacity: usize, wake_at: usize) -> Self {
        let capacity = capacity.max(1);
        BlockQueue {
            state: Mutex::new(State {
                items: VecDeque::new(),
                readers_waiting: 0,
                writers_waiting: 0,
            }),
            readers: Condvar::new(),
            writers: Condvar::new(),
            capacity,
            wake_at: wake_at.clamp(1, capacity),
            len: AtomicUsize::new(0),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Appends `block` in order, waiting while the queue is full until it has drained to half.
    pub(crate) fn push(&self, block: impl IntoIterator<Item = T>) {
        let mut block = block.into_iter().peekable();
        if block.peek().is_none() {
            return;
        }
        let mut s = self.state.lock();
        if s.items.len() >= self.capacity {
            s.writers_waiting += 1;
            while s.items.len() > self.capacity / 2 {
                self.writers.wait(&mut s);
            }
            s.writers_waiting -= 1;
        }
        self.append(&mut s, block);
    }

    /// Appends `block` under the lock, waking a waiting consumer once `wake_at` are queued.
    fn append(&self, s: &mut MutexGuard<'_, State<T>>, block: impl IntoIterator<Item = T>) {
        s.items.extend(block);
        self.len.store(s.items.len(), Ordering::Relaxed);
        if s.readers_waiting > 0 && s.items.len() >= self.wake_at {
            self.readers.notify_one();
        }
    }

    /// Appends `block` only if that needs no wait: `Err` gives it back when the queue is full.
    pub(crate) fn try_push(&self, block: Vec<T>) -> Result<(), Vec<T>> {
        let mut s = self.state.lock();
        if s.items.len() >= self.capacity {
            return Err(block);
        }
        self.append(&mut s, block);
        Ok(())
    }

    /// Wakes the waiting consumers if anything is queued: a producer calls it before it waits
    /// for its own input, so what it handed over is not left waiting for `wake_at`.
    pub(crate) fn ring(&self) {
        if self.len() == 0 {
            return;
        }
        let s = self.state.lock();
        if s.readers_waiting > 0 && !s.items.is_empty() {
            self.readers.notify_all();
        }
    }

    /// Moves up to `max` items into `into`, oldest first: waits up to `timeout` until some are
    /// queued (woken early once `wake_at` are, or by [`BlockQueue::ring`]), then takes what is
    /// there. Returns how many it took.
    pub(crate) fn pop(&self, max: usize, timeout: Duration, into: &mut Vec<T>) -> usize {
        if max == 0 || (timeout.is_zero() && self.len() == 0) {
            return 0;
        }
        let mut s = self.state.lock();
        self.wait_for_items(&mut s, timeout);
        let n = max.min(s.items.len());
        into.extend(s.items.drain(..n));
        self.taken(&mut s, n);
        n
    }

    /// The oldest item, waiting as [`BlockQueue::pop`] does: for a consumer that takes one at
    /// a time (an uncontended lock per item; nothing is held outside the queue).
    pub(crate) fn pop_one(&self, timeout: Duration) -> Option<T> {
        if timeout.is_zero() && self.len() == 0 {
            return None;
        }
        let mut s = self.state.lock();
        self.wait_for_items(&mut s, timeout);
        let item = s.items.pop_front();
        self.taken(&mut s, usize::from(item.is_some()));
        item
    }

    fn wait_for_items(&self, s: &mut MutexGuard<'_, State<T>>, timeout: Duration) {
        if s.items.len() >= self.wake_at || timeout.is_zero() {
            return;
        }
        // Read once the queue is found short, so a busy queue hands items over without a
        // clock read.
        let deadline = Instant::now() + timeout;
        s.readers_waiting += 1;
        while s.items.len() < self.wake_at {
            if self.readers.wait_until(s, deadline).timed_out() {
                break;
            }
            if !s.items.is_empty() && s.items.len() < self.wake_at {
                // Woken by a ring, or handed on by another consumer: take what is there.
                break;
            }
        }
        s.readers_waiting -= 1;
    }

    fn taken(&self, s: &mut MutexGuard<'_, State<T>>, n: usize) {
        let left = s.items.len();
        self.len.store(left, Ordering::Relaxed);
        if s.writers_waiting > 0 && left <= self.capacity / 2 {
            self.writers.notify_all();
        }
        if n > 0 && left > 0 && s.readers_waiting > 0 {
            // Another consumer waits and items are left (this one took its fill).
            self.readers.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn blocks_keep_their_order_and_a_consumer_takes_at_most_its_fill() {
        let q = BlockQueue::new(100, 1);
        q.push(vec![1, 2, 3]);
        q.push(vec![4, 5]);
        assert_eq!(q.len(), 5);
        let mut got = Vec::new();
        assert_eq!(q.pop(2, Duration::ZERO, &mut got), 2);
        assert_eq!(got, [1, 2]);
        assert_eq!(q.pop(10, Duration::ZERO, &mut got), 3);
        assert_eq!(got, [1, 2, 3, 4, 5]);
        assert_eq!(
            q.pop(10, Duration::from_millis(5), &mut got),
            0,
            "empty: timed out"
        );
    }

    #[test]
    fn a_waiting_consumer_is_woken_at_its_threshold_not_before() {
        let q = Arc::new(BlockQueue::new(100, 10));
        let q2 = q.clone();
        let consumer = std::thread::spawn(move || {
            let started = Instant::now();
            let mut got = Vec::new();
            q2.pop(100, Duration::from_secs(10), &mut got);
            (got.len(), started.elapsed())
        });
        std::thread::sleep(Duration::from_millis(50));
        q.push(vec![0; 4]);
        std::thread::sleep(Duration::from_millis(100));
        assert!(!consumer.is_finished(), "4 of 10: not woken");
        q.push(vec![0; 6]);
        let (n, took) = consumer.join().unwrap();
        assert_eq!(n, 10);
        assert!(
            took < Duration::from_secs(5),
            "woken at 10, not at the timeout"
        );
    }

    #[test]
    fn a_ring_hands_a_short_queue_over_at_once() {
        let q = Arc::new(BlockQueue::new(100, 50));
        let q2 = q.clone();
        let consumer = std::thread::spawn(move || {
            let mut got = Vec::new();
            q2.pop(100, Duration::from_secs(10), &mut got);
            got
        });
        std::thread::sleep(Duration::from_millis(50));
        q.push(vec![7]);
        std::thread::sleep(Duration::from_millis(50));
        assert!(!consumer.is_finished());
        q.ring();
        assert_eq!(consumer.join().unwrap(), [7]);
    }

    #[test]
    fn the_timeout_takes_what_is_there() {
        let q = BlockQueue::new(100, 50);
        q.push(vec![1, 2]);
        let mut got = Vec::new();
        assert_eq!(q.pop(100, Duration::from_millis(20), &mut got), 2);
    }

    #[test]
    fn a_full_queue_takes_a_producer_back_at_half_and_try_push_never_waits() {
        let q = Arc::new(BlockQueue::new(4, 1));
        q.push(vec![1, 2, 3, 4]);
        assert_eq!(q.try_push(vec![5]), Err(vec![5]));
        let q2 = q.clone();
        let producer = std::thread::spawn(move || q2.push(vec![5, 6]));
        let mut got = Vec::new();
        std::thread::sleep(Duration::from_millis(50));
        q.pop(1, Duration::ZERO, &mut got);
        std::thread::sleep(Duration::from_millis(50));
        assert!(!producer.is_finished(), "3 of 4 left: still waiting");
        q.pop(1, Duration::ZERO, &mut got);
        producer.join().unwrap();
        q.pop(10, Duration::ZERO, &mut got);
        assert_eq!(got, [1, 2, 3, 4, 5, 6]);
    }
}
