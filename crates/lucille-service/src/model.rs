//! What the API shows: a run's state and its numbers (the `RUN` object of interface.md), a
//! schedule, a failure. Built from the store's rows or a live run's snapshot.

use serde_json::{json, Value};

/// Where a run is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunState {
    Queued,
    Running,
    Succeeded,
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

/// Published, succeeded, failed, dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub published: u64,
    pub succeeded: u64,
    pub failed: u64,
    pub dropped: u64,
}

impl Counts {
    pub fn add(&mut self, other: &Counts) {
        self.published += other.published;
        self.succeeded += other.succeeded;
        self.failed += other.failed;
        self.dropped += other.dropped;
    }

    fn fields(&self, out: &mut serde_json::Map<String, Value>) {
        out.insert("published".into(), self.published.into());
        out.insert("succeeded".into(), self.succeeded.into());
        out.insert("failed".into(), self.failed.into());
        out.insert("dropped".into(), self.dropped.into());
    }

    pub fn to_json(self) -> Value {
        let mut m = serde_json::Map::new();
        self.fields(&mut m);
        Value::Object(m)
    }

    pub fn from_json(v: &Value) -> Counts {
        let n = |k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
        Counts {
            published: n("published"),
            succeeded: n("succeeded"),
            failed: n("failed"),
            dropped: n("dropped"),
        }
    }
}

/// One connector of a run: `pending`, `running`, then how it ended (`complete`, `failed`,
/// `skipped`, as the RUN SUMMARY says).
#[derive(Clone, Debug, PartialEq)]
pub struct ConnectorView {
    pub name: String,
    pub state: String,
    pub counts: Counts,
}

impl ConnectorView {
    pub fn to_json(&self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("name".into(), self.name.clone().into());
        m.insert("state".into(), self.state.clone().into());
        self.counts.fields(&mut m);
        Value::Object(m)
    }

    pub fn from_json(v: &Value) -> ConnectorView {
        ConnectorView {
            name: str_field(v, "name"),
            state: str_field(v, "state"),
            counts: Counts::from_json(v),
        }
    }
}

/// One stage's numbers at the end of a run (documents processed, errors, seconds in it).
#[derive(Clone, Debug, PartialEq)]
pub struct StageView {
    pub pipeline: String,
    pub name: String,
    pub class: String,
    pub documents: u64,
    pub errors: u64,
    pub seconds: f64,
}

impl StageView {
    pub fn to_json(&self) -> Value {
        json!({
            "pipeline": self.pipeline, "name": self.name, "class": self.class,
            "documents": self.documents, "errors": self.errors, "seconds": self.seconds,
        })
    }

    pub fn from_json(v: &Value) -> StageView {
        StageView {
            pipeline: str_field(v, "pipeline"),
            name: str_field(v, "name"),
            class: str_field(v, "class"),
            documents: v.get("documents").and_then(Value::as_u64).unwrap_or(0),
            errors: v.get("errors").and_then(Value::as_u64).unwrap_or(0),
            seconds: v.get("seconds").and_then(Value::as_f64).unwrap_or(0.0),
        }
    }
}

fn str_field(v: &Value, k: &str) -> String {
    v.get(k)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
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
            "counts": self.counts().to_json(),
            "connectors": self.connectors.iter().map(ConnectorView::to_json).collect::<Vec<_>>(),
            "stages": self.stages.iter().map(StageView::to_json).collect::<Vec<_>>(),
            "error": self.error,
            "summary": self.summary,
        })
    }
}

/// A schedule as the API shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct ScheduleView {
    pub id: String,
    pub name: String,
    pub cron: Option<String>,
    pub every_secs: Option<u64>,
    pub paused: bool,
    pub last_run_id: Option<String>,
    pub next_run_at: Option<String>,
}

impl ScheduleView {
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id, "name": self.name, "cron": self.cron, "everySecs": self.every_secs,
            "paused": self.paused, "lastRunId": self.last_run_id, "nextRunAt": self.next_run_at,
        })
    }
}

/// The time now as the API writes times: RFC 3339, UTC, milliseconds.
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
