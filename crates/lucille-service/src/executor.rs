//! Runs submitted configs: a queue, `--max-concurrent-runs` runner threads, each run with the
//! core's runner (the same validation, runner and accounting as `lucille run`) and its own
//! stop flag (cancel drains as SIGINT does), its live numbers kept for the API and written to
//! the store about once a second, its FAILs kept with their reasons, its dead-letter file in
//! the data directory (what a replay processes again).

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use lucille_core::accounting::Publisher;
use lucille_core::runner::{self, RunMode, RunOptions, RunResult};
use parking_lot::{Condvar, Mutex};
use serde_json::Value;

use crate::model::{self, ConnectorView, Counts, Mode, RunState, RunView, StageView};
use crate::store::{Failure, NewRun, Store, StoreError};
use crate::submit::{self, Loaded, Problem, Source};

/// How often a live run's numbers and failures reach the store.
const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// Why a submission or an action on a run was refused.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("the config has errors")]
    Invalid(Vec<Problem>, Vec<String>),
    #[error("no run {0:?}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Io(String),
}

/// What a client asks to run.
pub struct Submission {
    pub source: Source,
    pub mode: Mode,
    pub name: Option<String>,
    pub schedule_id: Option<String>,
}

/// A run going on: its view (what the API shows), the flags that stop it, the failures not
/// yet in the store.
struct LiveRun {
    view: Mutex<RunView>,
    stop: Arc<AtomicBool>,
    force: Arc<AtomicBool>,
    cancelled: AtomicBool,
    interrupted: AtomicBool,
    failures: Mutex<Vec<Failure>>,
    secrets: Vec<String>,
    /// Set when the data directory stopped taking writes: the run is stopped and fails with it.
    storage_error: Mutex<Option<String>>,
}

impl LiveRun {
    /// Asks the run to drain and end `cancelled`; the run as it is now.
    fn cancel(&self) -> RunView {
        self.cancelled.store(true, Ordering::SeqCst);
        self.stop.store(true, Ordering::SeqCst);
        self.view.lock().clone()
    }
}

/// How much history the service keeps (`lucille serve --keep-runs N --keep-days D`): the
/// newest `keep_runs` ended runs, none that ended more than `keep_days` days ago; 0 is no limit
/// of that kind. Checked when the service starts and whenever a run ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention {
    pub keep_runs: u64,
    pub keep_days: u64,
}

impl Default for Retention {
    /// A thousand runs (an hourly schedule's six weeks), for at most 30 days: a run's page and
    /// failures stay long enough to look into a problem, the data directory stays bounded.
    fn default() -> Self {
        Retention {
            keep_runs: 1000,
            keep_days: 30,
        }
    }
}

pub struct Executor {
    store: Arc<Store>,
    data_dir: PathBuf,
    retention: Retention,
    queue: Mutex<VecDeque<String>>,
    wake: Condvar,
    live: Mutex<HashMap<String, Arc<LiveRun>>>,
    /// Runs cancelled while a runner thread was taking them from the queue: cancelled as soon
    /// as they are live.
    cancel_on_start: Mutex<std::collections::HashSet<String>>,
    stopping: AtomicBool,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Runs that ended while the store could not record them (a full disk): how they ended
    /// and their failures, shown by the API from here and written once the store takes
    /// writes again.
    unrecorded: Mutex<HashMap<String, (RunView, Vec<Failure>)>>,
    /// Held by the runner thread writing the unrecorded runs.
    recording: Mutex<()>,
}

impl Executor {
    /// Starts `slots` runner threads; runs the last process left queued are queued again.
    pub fn start(
        store: Arc<Store>,
        data_dir: PathBuf,
        slots: usize,
        retention: Retention,
    ) -> Result<Arc<Executor>, RunError> {
        let queued = store.queued()?;
        let ex = Arc::new(Executor {
            store,
            data_dir,
            retention,
            queue: Mutex::new(queued.into_iter().collect()),
            wake: Condvar::new(),
            live: Mutex::new(HashMap::new()),
            cancel_on_start: Mutex::new(std::collections::HashSet::new()),
            stopping: AtomicBool::new(false),
            threads: Mutex::new(Vec::new()),
            unrecorded: Mutex::new(HashMap::new()),
            recording: Mutex::new(()),
        });
        ex.remove_orphan_folders();
        ex.prune();
        for n in 0..slots.max(1) {
            let me = ex.clone();
            let t = std::thread::Builder::new()
                .name(format!("lucille-service-run-{n}"))
                .spawn(move || me.slot())
                .map_err(|e| RunError::Io(format!("cannot start a runner thread: {e}")))?;
            ex.threads.lock().push(t);
        }
        Ok(ex)
    }

    /// The folder of a run's files (its dead-letter file, a replay's input).
    pub fn run_dir(&self, id: &str) -> PathBuf {
        self.data_dir.join("runs").join(id)
    }

    /// Applies the [`Retention`]: the runs past it leave the history, with their failures and
    /// their folder (dead-letter file, replay input). A failure here is logged: the next run's
    /// end tries again.
    pub fn prune(&self) {
        let Retention {
            keep_runs,
            keep_days,
        } = self.retention;
        let cutoff = (keep_days > 0).then(|| {
            // Capped at a thousand years: chrono's durations end near 292,000 years.
            let days = chrono::Duration::days(i64::try_from(keep_days.min(365_000)).unwrap_or(0));
            (chrono::Utc::now() - days).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
        });
        if keep_runs == 0 && cutoff.is_none() {
            return;
        }
        match self.store.prune(keep_runs, cutoff.as_deref()) {
            Ok(ids) if ids.is_empty() => {}
            Ok(ids) => {
                for id in &ids {
                    self.remove_folder(id);
                }
                tracing::info!(
                    "retention (--keep-runs {keep_runs}, --keep-days {keep_days}): {} run(s) \
                     removed from the history, the oldest {}",
                    ids.len(),
                    ids[0]
                );
            }
            Err(e) => tracing::warn!("retention: cannot prune the history: {e}"),
        }
    }

    fn remove_folder(&self, id: &str) {
        let dir = self.run_dir(id);
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!("retention: cannot remove {}: {e}", dir.display()),
        }
    }

    /// At start: run folders whose run is not in the history (a prune the last process was
    /// stopped in the middle of) are removed.
    fn remove_orphan_folders(&self) {
        let Ok(entries) = std::fs::read_dir(self.data_dir.join("runs")) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(id) = name.to_str() else { continue };
            if matches!(self.store.has_run(id), Ok(false)) {
                self.remove_folder(id);
            }
        }
    }

    /// Validates and queues a config; `Invalid` with every problem when it has any.
    pub fn submit(&self, s: Submission) -> Result<RunView, RunError> {
        let loaded = submit::load(&s.source).map_err(|p| RunError::Invalid(p, Vec::new()))?;
        let name = s.name.unwrap_or_else(|| s.source.default_name());
        self.queue_run(
            &lucille_core::document::ids::random_id(),
            &loaded,
            &name,
            s.mode,
            s.schedule_id.as_deref(),
            None,
        )
    }

    /// A run that could not be queued (a schedule's config no longer valid): recorded as
    /// failed, with its problems as its error, so it shows in the history.
    pub fn record_rejected(
        &self,
        name: &str,
        mode: Mode,
        schedule_id: Option<&str>,
        problems: &[Problem],
        secrets: &[String],
    ) -> Result<RunView, RunError> {
        let id = lucille_core::document::ids::random_id();
        let now = model::now();
        self.store.insert_run(&NewRun {
            id: &id,
            name,
            mode,
            schedule_id,
            replay_of: None,
            submitted_at: &now,
            config: &Value::Null,
            base_dir: None,
            connectors: &[],
        })?;
        let text: Vec<String> = problems
            .iter()
            .map(|p| {
                let line = if p.path.is_empty() {
                    p.message.clone()
                } else {
                    format!("{}: {}", p.path, p.message)
                };
                lucille_core::config::scrub(&line, secrets)
            })
            .collect();
        let view = RunView {
            id: id.clone(),
            name: name.into(),
            state: RunState::Failed,
            mode,
            schedule_id: schedule_id.map(str::to_string),
            replay_of: None,
            submitted_at: now.clone(),
            started_at: None,
            ended_at: Some(now),
            connectors: Vec::new(),
            stages: Vec::new(),
            error: Some(format!("the config is not valid: {}", text.join("; "))),
            summary: None,
        };
        self.store.finish(&view, &[])?;
        Ok(view)
    }

    fn queue_run(
        &self,
        id: &str,
        loaded: &Loaded,
        name: &str,
        mode: Mode,
        schedule_id: Option<&str>,
        replay_of: Option<&str>,
    ) -> Result<RunView, RunError> {
        let plan =
            submit::validate(loaded).map_err(|p| RunError::Invalid(p, loaded.secrets.clone()))?;
        let connectors: Vec<ConnectorView> = plan
            .connectors
            .iter()
            .map(|c| ConnectorView {
                name: c.common.name.clone(),
                state: "pending".into(),
                counts: Counts::default(),
            })
            .collect();
        let now = model::now();
        let name = lucille_core::config::scrub(name, &loaded.secrets);
        self.store.insert_run(&NewRun {
            id,
            name: &name,
            mode,
            schedule_id,
            replay_of,
            submitted_at: &now,
            config: &loaded.config,
            base_dir: loaded.base_dir.as_deref(),
            connectors: &connectors,
        })?;
        self.queue.lock().push_back(id.to_string());
        self.wake.notify_one();
        tracing::info!(run_id = id, "run {name:?} queued");
        Ok(RunView {
            id: id.into(),
            name,
            state: RunState::Queued,
            mode,
            schedule_id: schedule_id.map(str::to_string),
            replay_of: replay_of.map(str::to_string),
            submitted_at: now,
            started_at: None,
            ended_at: None,
            connectors,
            stages: Vec::new(),
            error: None,
            summary: None,
        })
    }

    /// A run as it is now: live numbers while it runs, else the store's.
    pub fn view(&self, id: &str) -> Result<Option<RunView>, StoreError> {
        if let Some(live) = self.live.lock().get(id).cloned() {
            return Ok(Some(live.view.lock().clone()));
        }
        if let Some((view, _)) = self.unrecorded.lock().get(id) {
            return Ok(Some(view.clone()));
        }
        self.store.get_run(id)
    }

    /// A run's progress samples, oldest first (a live run's as of its last write, about a
    /// second ago).
    /// The embedded indexes the runs wrote, the most recently written first.
    pub fn indexes(&self) -> Result<Vec<crate::store::IndexRow>, StoreError> {
        self.store.indexes()
    }

    pub fn timeline(&self, id: &str) -> Result<Vec<crate::store::ProgressPoint>, StoreError> {
        self.store.timeline(id)
    }

    /// Runs newest first, live ones with their live numbers.
    pub fn list(&self, limit: u64, offset: u64) -> Result<(Vec<RunView>, u64), StoreError> {
        let (mut runs, total) = self.store.list_runs(limit, offset)?;
        let live = self.live.lock();
        let unrecorded = self.unrecorded.lock();
        for r in &mut runs {
            if let Some(l) = live.get(&r.id) {
                *r = l.view.lock().clone();
            } else if let Some((view, _)) = unrecorded.get(&r.id) {
                *r = view.clone();
            }
        }
        Ok((runs, total))
    }

    /// A page of a run's failures (a live run's as of its last write, at most a second ago).
    pub fn failures(
        &self,
        id: &str,
        limit: u64,
        offset: u64,
    ) -> Result<(Vec<Failure>, u64), StoreError> {
        let (mut page, stored) = self.store.failures(id, limit, offset)?;
        // An unrecorded run's failures that the store does not have yet follow its own.
        let unrecorded = self.unrecorded.lock();
        let Some((_, pending)) = unrecorded.get(id) else {
            return Ok((page, stored));
        };
        let skip = usize::try_from(offset.saturating_sub(stored)).unwrap_or(usize::MAX);
        let room = usize::try_from(limit)
            .unwrap_or(usize::MAX)
            .saturating_sub(page.len());
        page.extend(pending.iter().skip(skip).take(room).cloned());
        Ok((page, stored + pending.len() as u64))
    }

    /// Cancels a run: a queued one ends now; a running one drains (its connector stops
    /// publishing, what is in flight finishes) and ends `cancelled`.
    pub fn cancel(&self, id: &str) -> Result<RunView, RunError> {
        if let Some(live) = self.live.lock().get(id).cloned() {
            tracing::info!(run_id = id, "cancelling: the run drains");
            return Ok(live.cancel());
        }
        if let Some((view, _)) = self.unrecorded.lock().get(id) {
            return Err(RunError::Conflict(format!(
                "run {id} has already ended ({})",
                view.state.as_str()
            )));
        }
        let removed = {
            let mut q = self.queue.lock();
            let before = q.len();
            q.retain(|q| q != id);
            before != q.len()
        };
        if removed && self.store.cancel_queued(id, &model::now())? {
            tracing::info!(run_id = id, "cancelled before it started");
        }
        match self.store.get_run(id)? {
            None => Err(RunError::NotFound(id.into())),
            Some(v) if v.state == RunState::Cancelled && removed => Ok(v),
            // Taken by a runner thread between the two looks: cancelled there, as soon as it
            // is live (the runner thread looks after making it live).
            Some(v) if v.state == RunState::Queued || v.state == RunState::Running => {
                self.cancel_on_start.lock().insert(id.to_string());
                let live = self.live.lock().get(id).cloned();
                Ok(live.map_or(v, |live| live.cancel()))
            }
            Some(v) => Err(RunError::Conflict(format!(
                "run {id} has already ended ({})",
                v.state.as_str()
            ))),
        }
    }

    /// A new run of exactly the documents run `id` failed, through its pipelines and indexer.
    pub fn replay(&self, id: &str) -> Result<RunView, RunError> {
        let view = self
            .view(id)?
            .ok_or_else(|| RunError::NotFound(id.into()))?;
        if !view.state.is_final() {
            return Err(RunError::Conflict(format!(
                "run {id} is {}: replay it once it has ended",
                view.state.as_str()
            )));
        }
        let stored = self
            .store
            .run_config(id)?
            .filter(|s| !s.config.is_null())
            .ok_or_else(|| RunError::Conflict(format!("run {id} has no config to replay")))?;
        let (failures, total) = self.store.failures(id, u64::MAX >> 1, 0)?;
        if total == 0 {
            return Err(RunError::Conflict(format!(
                "run {id} has no failed documents to replay"
            )));
        }
        let new_id = lucille_core::document::ids::random_id();
        let input = self.run_dir(&new_id).join("replay-input.jsonl");
        write_replay_input(
            &self.run_dir(id).join("dead-letter.jsonl"),
            &failures,
            &stored.config,
            &input,
        )
        .map_err(|e| RunError::Io(format!("cannot write the replay's input: {e}")))?;
        let config = lucille_core::connector::dead_letter::replay_config(&stored.config, &input)
            .map_err(|e| RunError::Invalid(submit::problems(&e), Vec::new()))?;
        let secrets = lucille_core::config::secrets(&config);
        let loaded = Loaded {
            config,
            base_dir: stored.base_dir,
            secrets,
        };
        self.queue_run(
            &new_id,
            &loaded,
            &format!("replay of {}", view.name),
            stored.mode,
            None,
            Some(id),
        )
    }

    /// Stops taking runs; running ones drain and end `interrupted`; queued ones stay queued
    /// for the next start. Returns when the runner threads have ended.
    pub fn shutdown(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        for live in self.live.lock().values() {
            live.interrupted.store(true, Ordering::SeqCst);
            live.stop.store(true, Ordering::SeqCst);
        }
        self.wake.notify_all();
        let threads: Vec<_> = self.threads.lock().drain(..).collect();
        for t in threads {
            let _ = t.join();
        }
        // A last try for the ends the disk refused; what is still refused is lost to the
        // history (those runs show `interrupted` at the next start), and said so.
        self.record_unrecorded();
        for (id, (view, failures)) in self.unrecorded.lock().iter() {
            tracing::error!(
                run_id = id.as_str(),
                "stopping with the run's end ({}, {} failure(s)) not recorded: the data directory \
                 {} still refuses writes",
                view.state.as_str(),
                failures.len(),
                self.data_dir.display()
            );
        }
    }

    /// After a first shutdown request: stop the running runs now (as a second Ctrl-C does).
    pub fn force(&self) {
        for live in self.live.lock().values() {
            live.force.store(true, Ordering::SeqCst);
        }
    }

    /// Whether any run is going on.
    pub fn busy(&self) -> bool {
        !self.live.lock().is_empty()
    }

    /// A runner thread: takes queued runs one at a time until the service stops.
    fn slot(self: Arc<Self>) {
        loop {
            self.record_unrecorded();
            let id = {
                let mut q = self.queue.lock();
                if self.stopping.load(Ordering::SeqCst) {
                    return;
                }
                match q.pop_front() {
                    Some(id) => id,
                    None => {
                        self.wake.wait_for(&mut q, Duration::from_millis(500));
                        continue;
                    }
                }
            };
            if let Err(e) = self.run(&id) {
                tracing::error!(run_id = id.as_str(), "the run could not be recorded: {e}");
            }
            self.prune();
        }
    }

    /// Writes the runs that ended while the store could not take them, oldest first, until
    /// one still fails (about every half second, from a runner thread).
    fn record_unrecorded(&self) {
        if self.unrecorded.lock().is_empty() {
            return;
        }
        let Some(_writing) = self.recording.try_lock() else {
            return;
        };
        let mut pending: Vec<(String, RunView, Vec<Failure>)> = self
            .unrecorded
            .lock()
            .iter()
            .map(|(id, (view, failures))| (id.clone(), view.clone(), failures.clone()))
            .collect();
        pending.sort_by(|a, b| a.1.ended_at.cmp(&b.1.ended_at));
        for (id, view, failures) in pending {
            if self.store.finish(&view, &failures).is_err() {
                return;
            }
            self.unrecorded.lock().remove(&id);
            tracing::info!(
                run_id = id.as_str(),
                "the data directory takes writes again: the run's end ({}) is recorded",
                view.state.as_str()
            );
        }
    }

    /// Records how a run ended; when the store cannot, keeps it (the API shows it) for
    /// [`Executor::record_unrecorded`].
    fn record_end(&self, end: &RunView, failures: Vec<Failure>) {
        if let Err(e) = self.store.finish(end, &failures) {
            tracing::error!(
                run_id = end.id.as_str(),
                "cannot record how the run ended ({e}); kept in memory and written as soon as \
                 the data directory {} takes writes again",
                self.data_dir.display()
            );
            self.unrecorded
                .lock()
                .insert(end.id.clone(), (end.clone(), failures));
        }
    }

    /// The error a run fails with when the data directory stops taking writes.
    fn storage_message(data_dir: &std::path::Path, e: &StoreError) -> String {
        format!(
            "the service cannot write to its data directory {} ({e}): the run was stopped (the \
             documents in flight finished) and failed. Free space there, then run it again or \
             replay its failures",
            data_dir.display()
        )
    }

    fn run(&self, id: &str) -> Result<(), RunError> {
        let Some(mut view) = self.store.get_run(id)? else {
            return Ok(());
        };
        if view.state != RunState::Queued {
            return Ok(());
        }
        let Some(stored) = self.store.run_config(id)? else {
            return Ok(());
        };
        let secrets = lucille_core::config::secrets(&stored.config);
        let mut config = stored.config;
        let dead_letter = self.run_dir(id).join("dead-letter.jsonl");
        lucille_core::config::set_path(
            &mut config,
            "worker.deadLetterPath",
            Value::from(dead_letter.to_string_lossy().into_owned()),
        );
        let now = model::now();
        view.started_at = Some(now.clone());
        let plan = match runner::plan(&config, stored.base_dir.as_deref()) {
            Ok(p) => p,
            Err(e) => {
                // Valid when submitted; something it reads changed since (before a restart).
                view.state = RunState::Failed;
                view.ended_at = Some(model::now());
                view.error = Some(lucille_core::config::scrub(
                    &format!("the config is no longer valid: {e}"),
                    &secrets,
                ));
                self.store.finish(&view, &[])?;
                return Ok(());
            }
        };
        let live = Arc::new(LiveRun {
            view: Mutex::new(RunView {
                state: RunState::Running,
                ..view.clone()
            }),
            stop: Arc::new(AtomicBool::new(false)),
            force: Arc::new(AtomicBool::new(false)),
            cancelled: AtomicBool::new(false),
            interrupted: AtomicBool::new(false),
            failures: Mutex::new(Vec::new()),
            secrets,
            storage_error: Mutex::new(None),
        });
        self.live.lock().insert(id.to_string(), live.clone());
        if self.cancel_on_start.lock().remove(id) {
            live.cancel();
        }
        if self.stopping.load(Ordering::SeqCst) {
            // The service stopped between taking the run and starting it: it stays queued.
            self.live.lock().remove(id);
            self.queue.lock().push_front(id.to_string());
            return Ok(());
        }
        if let Err(e) = self.store.set_running(id, &now) {
            if !e.is_storage_failure() {
                self.live.lock().remove(id);
                return Err(e.into());
            }
            let mut end = live.view.lock().clone();
            end.state = RunState::Failed;
            end.ended_at = Some(model::now());
            end.error = Some(Self::storage_message(&self.data_dir, &e));
            tracing::error!(run_id = id, "{}", end.error.as_deref().unwrap_or_default());
            self.record_end(&end, Vec::new());
            self.live.lock().remove(id);
            return Ok(());
        }
        tracing::info!(run_id = id, "run {:?} started", view.name);
        if let Some(path) = embedded_index(&plan) {
            // The index stays searchable from the console whatever happens to the run.
            if let Err(e) = self.store.record_index(&path, id) {
                tracing::error!(run_id = id, "cannot note the index the run writes: {e}");
            }
        }
        let opts = RunOptions {
            mode: match stored.mode {
                Mode::Local => RunMode::Local,
                Mode::Test => RunMode::Test,
            },
            stop: live.stop.clone(),
            force: live.force.clone(),
            progress: Some(self.progress_fn(id, &live)),
            run_id: Some(id.to_string()),
            on_fail: Some({
                let live = live.clone();
                Arc::new(move |connector: &str, doc_id: &str, reason: &str| {
                    live.failures.lock().push(Failure {
                        doc_id: doc_id.to_string(),
                        connector: connector.to_string(),
                        stage: lucille_core::stage::failed_stage(reason),
                        reason: lucille_core::config::scrub(reason, &live.secrets),
                    });
                })
            }),
            ..Default::default()
        };
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            runner::run_plan(&plan, &opts)
        }));
        let mut end = live.view.lock().clone();
        end.ended_at = Some(model::now());
        match result {
            Ok(result) => finish_view(&mut end, &result, &plan, &live.secrets),
            Err(payload) => {
                end.state = RunState::Failed;
                end.error = Some(format!(
                    "the run panicked: {}",
                    lucille_panic::message(payload.as_ref())
                ));
            }
        }
        if live.interrupted.load(Ordering::SeqCst) {
            end.state = RunState::Interrupted;
            end.error
                .get_or_insert_with(|| "the service stopped while the run was going".into());
        } else if live.cancelled.load(Ordering::SeqCst) {
            end.state = RunState::Cancelled;
        }
        if let Some(message) = live.storage_error.lock().clone() {
            end.state = RunState::Failed;
            end.error = Some(message);
        }
        let failures = std::mem::take(&mut *live.failures.lock());
        *live.view.lock() = end.clone();
        self.record_end(&end, failures);
        self.live.lock().remove(id);
        tracing::info!(
            run_id = id,
            "run {:?} ended: {}",
            end.name,
            end.state.as_str()
        );
        Ok(())
    }

    /// The runner's progress callback: the current connector's counts into the live view,
    /// and about once a second the view and new failures into the store.
    fn progress_fn(&self, id: &str, live: &Arc<LiveRun>) -> runner::ProgressFn {
        let (id, live, store) = (id.to_string(), live.clone(), self.store.clone());
        let data_dir = self.data_dir.clone();
        let last = Mutex::new(Instant::now());
        Arc::new(move |connector: &str, p: &Publisher| {
            let c = p.counts();
            let connectors = {
                let mut view = live.view.lock();
                let at = view.connectors.iter().position(|k| k.name == connector);
                for (i, k) in view.connectors.iter_mut().enumerate() {
                    match at {
                        Some(a) if i == a => {
                            k.state = "running".into();
                            k.counts = Counts {
                                published: c.published,
                                succeeded: c.succeeded,
                                failed: c.failed,
                                dropped: c.dropped,
                                unchanged: c.unchanged,
                            };
                        }
                        Some(a) if i < a && k.state == "running" => k.state = "complete".into(),
                        _ => {}
                    }
                }
                view.connectors.clone()
            };
            let mut last = last.lock();
            if last.elapsed() >= FLUSH_EVERY {
                *last = Instant::now();
                let failures = std::mem::take(&mut *live.failures.lock());
                if let Err(e) = store.progress(&id, &connectors, &failures) {
                    // Kept for the next write (or the run's end): a failure never vanishes.
                    live.failures.lock().splice(0..0, failures);
                    let mut storage_error = live.storage_error.lock();
                    if !e.is_storage_failure() {
                        tracing::warn!(run_id = id.as_str(), "cannot record progress: {e}");
                    } else if storage_error.is_none() {
                        let message = Executor::storage_message(&data_dir, &e);
                        tracing::error!(run_id = id.as_str(), "{message}");
                        *storage_error = Some(message);
                        live.stop.store(true, Ordering::SeqCst);
                    }
                }
            }
        })
    }
}

/// How a run ended, from the runner's result: each connector's status and counts, the stages'
/// numbers, the error that ended it, the summary.
/// The folder of the embedded Tantivy index a run writes, if it writes one.
fn embedded_index(plan: &runner::RunPlan) -> Option<PathBuf> {
    let output = plan.output.as_ref()?;
    (plan.indexer.kind == "tantivy").then(|| crate::submit::absolute(&output.path))
}

fn finish_view(view: &mut RunView, result: &RunResult, plan: &runner::RunPlan, secrets: &[String]) {
    view.state = match (result.ok, result.connectors.iter().any(|c| c.failed > 0)) {
        (true, false) => RunState::Succeeded,
        // The summary's "Partial success": every connector completed, some documents failed.
        (true, true) => RunState::Partial,
        (false, _) => RunState::Failed,
    };
    view.connectors = result
        .connectors
        .iter()
        .map(|c| ConnectorView {
            name: c.name.clone(),
            state: c.status_text().to_string(),
            counts: Counts {
                published: c.published,
                succeeded: c.succeeded,
                failed: c.failed,
                dropped: c.dropped,
                unchanged: c.unchanged,
            },
        })
        .collect();
    view.stages = result
        .stage_metrics
        .iter()
        .flat_map(|(pipeline, metrics)| {
            let classes = plan.pipelines.get(pipeline);
            metrics.iter().enumerate().map(move |(i, m)| StageView {
                pipeline: pipeline.clone(),
                name: m.name.clone(),
                class: classes
                    .and_then(|p| p.stages.get(i))
                    .filter(|s| s.name == m.name)
                    .map(|s| s.class_name().to_string())
                    .unwrap_or_default(),
                documents: m.processed,
                errors: m.errors,
                seconds: m.total_time().as_secs_f64(),
            })
        })
        .collect();
    view.error = result.connectors.iter().find_map(|c| match &c.status {
        lucille_core::runner::ConnectorStatus::Failed(m) => Some(lucille_core::config::scrub(
            &format!("{}: {m}", c.name),
            secrets,
        )),
        _ => None,
    });
    view.summary = Some(lucille_core::config::scrub(&result.summary, secrets));
}

/// The input of a replay: for each failure of the run, its dead-letter record (the document
/// as it entered the pipeline), else (an indexer's FAIL, a record that never became a
/// document) a record without a document, which the replay FAILs again saying why.
fn write_replay_input(
    dead_letter: &Path,
    failures: &[Failure],
    config: &Value,
    out: &Path,
) -> std::io::Result<()> {
    let mut kept: HashMap<String, String> = HashMap::new();
    if let Ok(text) = std::fs::read_to_string(dead_letter) {
        for line in text.lines() {
            if let Some(id) = serde_json::from_str::<Value>(line)
                .ok()
                .and_then(|v| v.get("id").and_then(Value::as_str).map(str::to_string))
            {
                kept.insert(id, line.to_string());
            }
        }
    }
    // A connector's pipeline, for the records the dead-letter file does not have.
    let pipeline_of = |connector: &str| -> String {
        config
            .get("connectors")
            .and_then(Value::as_array)
            .and_then(|cs| {
                cs.iter()
                    .find(|c| c.get("name").and_then(Value::as_str) == Some(connector))
            })
            .and_then(|c| c.get("pipeline").and_then(Value::as_str))
            .map_or_else(
                || lucille_core::connector::no_pipeline_name(connector),
                str::to_string,
            )
    };
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut text = String::new();
    for f in failures {
        match kept.get(&f.doc_id) {
            Some(line) => text.push_str(line),
            None => text.push_str(
                &serde_json::json!({
                    "id": f.doc_id, "pipeline": pipeline_of(&f.connector), "error": f.reason,
                    "attempts": 0, "document": null,
                })
                .to_string(),
            ),
        }
        text.push('\n');
    }
    std::fs::write(out, text)
}
