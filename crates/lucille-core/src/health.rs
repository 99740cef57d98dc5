//! Whether a long-running process can do its work, as `/ready` reports it: not ready (with a
//! reason) until its config is validated and it has reached what it needs (the backend for a
//! run with an indexer, the broker for a Kafka role), ready after that, and not ready again
//! while it drains after a stop signal. The process that serves the endpoint owns one
//! [`Health`] and hands it to the run or role it starts; `/healthz` needs nothing from it (a
//! process that answers is alive).

use parking_lot::Mutex;

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    NotReady(String),
    Ready,
    Draining,
}

/// Why a process is not ready (the reason `/ready` answers with its 503).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotReady {
    /// Not there yet: what the process is waiting for ("validating the config", "connecting
    /// to the broker"), as given to [`Health::not_ready`] or [`Health::restart`].
    #[error("{0}")]
    Waiting(String),
    /// Stopping after a stop signal: nothing new is taken.
    #[error("draining: the process is stopping")]
    Draining,
}

/// A process's readiness; shared (`Arc`) between what does the work and the endpoint.
#[derive(Debug)]
pub struct Health {
    state: Mutex<State>,
}

impl Default for Health {
    fn default() -> Self {
        Health::new()
    }
}

impl Health {
    /// Not ready: the config is still being validated.
    pub fn new() -> Self {
        Health {
            state: Mutex::new(State::NotReady("validating the config".into())),
        }
    }

    /// Not ready, for `reason` (what the process is waiting for). Ignored while draining: a
    /// process that is stopping does not become ready again.
    pub fn not_ready(&self, reason: impl Into<String>) {
        let mut state = self.state.lock();
        if *state != State::Draining {
            *state = State::NotReady(reason.into());
        }
    }

    /// Ready (unless draining).
    pub fn ready(&self) {
        let mut state = self.state.lock();
        if *state != State::Draining {
            *state = State::Ready;
        }
    }

    /// Not ready for `reason`, even after draining: the process starts new work (a notebook's
    /// next run after an interrupted one).
    pub fn restart(&self, reason: impl Into<String>) {
        *self.state.lock() = State::NotReady(reason.into());
    }

    /// Stopping: documents in flight finish, nothing new is taken; `ready` and `not_ready`
    /// no longer change it (only `restart` does).
    pub fn draining(&self) {
        *self.state.lock() = State::Draining;
    }

    /// `Ok` when ready; else why not.
    pub fn status(&self) -> Result<(), NotReady> {
        match &*self.state.lock() {
            State::Ready => Ok(()),
            State::NotReady(reason) => Err(NotReady::Waiting(reason.clone())),
            State::Draining => Err(NotReady::Draining),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_not_ready_becomes_ready_and_draining_is_final() {
        let waiting = |reason: &str| Err(NotReady::Waiting(reason.into()));
        let h = Health::new();
        assert_eq!(h.status(), waiting("validating the config"));
        h.not_ready("connecting to the broker");
        assert_eq!(h.status(), waiting("connecting to the broker"));
        h.ready();
        assert_eq!(h.status(), Ok(()));
        h.draining();
        h.ready();
        h.not_ready("x");
        assert_eq!(h.status(), Err(NotReady::Draining));
        h.restart("starting the run");
        assert_eq!(h.status(), waiting("starting the run"));
        h.ready();
        assert_eq!(h.status(), Ok(()));
    }

    #[test]
    fn the_reason_reads_as_ready_reports_it() {
        assert_eq!(
            NotReady::Waiting("connecting to the broker".into()).to_string(),
            "connecting to the broker"
        );
        assert_eq!(
            NotReady::Draining.to_string(),
            "draining: the process is stopping"
        );
    }
}
