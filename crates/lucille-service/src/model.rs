//! What the API shows: a run's state and its numbers (the `RUN` object of interface.md), a
//! schedule, a failure. Built from the store's rows or a live run's snapshot.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// Where a run is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunState {
    Queued,
    Running,
    Succeeded,
    /// Every connector completed but some documents failed (the summary's "Partial success").
    Partial,
    Failed,
    Cancelled,
    /// The service stopped (or was killed) while the run went on.
    Interrupted,
}

impl RunState {
    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Queued => "queued",
            RunState::Running => "running",
            RunState::Succeeded => "succeeded",
            RunState::Partial => "partial",
            RunState::Failed => "failed",
            RunState::Cancelled => "cancelled",
            RunState::Interrupted => "interrupted",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "queued" => RunState::Queued,
            "running" => RunState::Running,
            "succeeded" => RunState::Succeeded,
            "partial" => RunState::Partial,
            "failed" => RunState::Failed,
            "cancelled" => RunState::Cancelled,
            "interrupted" => RunState::Interrupted,
            _ => return None,
        })
    }

    /// Whether the run has ended (nothing about it changes any more).
    pub fn is_final(self) -> bool {
        !matches!(self, RunState::Queued | RunState::Running)
    }
}

/// How a run is run: `local` (the config's indexer) or `test` (no backend).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Local,
    Test,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Local => "local",
            Mode::Test => "test",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "local" => Some(Mode::Local),
            "test" => Some(Mode::Test),
            _ => None,
        }
    }
}

/// Published, succeeded, failed, dropped, and unchanged (`skipUnchanged`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Counts {
    pub published: u64,
    pub succeeded: u64,
    pub failed: u64,
    pub dropped: u64,
    pub unchanged: u64,
}

impl Counts {
    pub fn add(&mut self, other: &Counts) {
        self.published += other.published;
        self.succeeded += other.succeeded;
        self.failed += other.failed;
        self.dropped += other.dropped;
        self.unchanged += other.unchanged;
    }
}

/// One connector of a run: `pending`, `running`, then how it ended (`complete`, `failed`,
/// `skipped`, as the RUN SUMMARY says), with its counts beside its name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConnectorView {
    pub name: String,
    pub state: String,
    #[serde(flatten)]
    pub counts: Counts,
}

/// One stage's numbers at the end of a run (documents processed, errors, seconds in it).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StageView {
    pub pipeline: String,
    pub name: String,
    pub class: String,
    pub documents: u64,
    pub errors: u64,
    pub seconds: f64,
}

/// A run as the API shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct RunView {
    pub id: String,
    pub name: String,
    pub state: RunState,
    pub mode: Mode,
    pub schedule_id: Option<String>,
    pub replay_of: Option<String>,
    pub submitted_at: String,
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
    pub connectors: Vec<ConnectorView>,
    pub stages: Vec<StageView>,
    pub error: Option<String>,
    pub summary: Option<String>,
}

impl RunView {
    /// The totals of its connectors.
    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for k in &self.connectors {
            c.add(&k.counts);
        }
        c
    }

    /// The `RUN` object of interface.md (its `counts` are the connectors' totals).
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "name": self.name,
            "state": self.state.as_str(),
            "mode": self.mode.as_str(),
            "scheduleId": self.schedule_id,
            "replayOf": self.replay_of,
            "submittedAt": self.submitted_at,
            "startedAt": self.started_at,
            "endedAt": self.ended_at,
            "counts": self.counts(),
            "connectors": self.connectors,
            "stages": self.stages,
            "error": self.error,
            "summary": self.summary,
        })
    }
}

/// A schedule as the API shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleView {
    pub id: String,
    pub name: String,
    pub cron: Option<String>,
    pub every_secs: Option<u64>,
    pub paused: bool,
    pub last_run_id: Option<String>,
    pub next_run_at: Option<String>,
}

/// The time now as the API writes times: RFC 3339, UTC, milliseconds.
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
