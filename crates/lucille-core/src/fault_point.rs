//! Test-only fault points: places in the runtime's own loops (outside the per-document catch of
//! stage and backend panics) where a test can make a thread die, to show the runner observes a
//! dead worker or indexer thread. Compiled into `cargo test` builds only.

use parking_lot::Mutex;

static ARMED: Mutex<Vec<(&'static str, String)>> = Mutex::new(Vec::new());

/// Makes the thread that reaches fault point `place` with document `id` panic (once).
pub fn arm(place: &'static str, id: &str) {
    ARMED.lock().push((place, id.to_string()));
}

/// Panics when a test armed `place` for `id`.
pub fn hit(place: &'static str, id: &str) {
    let mut armed = ARMED.lock();
    if let Some(i) = armed.iter().position(|(p, d)| *p == place && d == id) {
        armed.swap_remove(i);
        drop(armed);
        panic!("fault point {place} hit by {id}");
    }
}
