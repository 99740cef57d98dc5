//! Schedules: a config run on a cron expression or every N seconds. A schedule never starts
//! a run while its previous run is still queued or running: that occurrence is skipped (and
//! logged), the next one is planned. A path config is read again at each occurrence, so a
//! change to the file applies to the next run; a config that became invalid is recorded as a
//! failed run with its problems.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use chrono::{DateTime, Utc};
use parking_lot::{Condvar, Mutex};

use crate::executor::{Executor, RunError, Submission};
use crate::model::{Mode, ScheduleView};
use crate::store::{ScheduleRow, Store, StoreError};
use crate::submit::{Problem, Source};

/// When a schedule fires.
#[derive(Clone, Debug)]
pub enum When {
    Cron(Box<croner::Cron>),
    Every(Duration),
}

impl When {
    /// From the API's `cron` / `everySecs`: exactly one of them.
    pub fn parse(cron: Option<&str>, every_secs: Option<u64>) -> Result<When, Problem> {
        match (cron, every_secs) {
            (Some(c), None) => croner::Cron::from_str(c)
                .map(|c| When::Cron(Box::new(c)))
                .map_err(|e| {
                    Problem::new(
                        "cron",
                        format!(
                            "{c:?} is not a cron expression ({e}); five fields: minute hour \
                             day-of-month month day-of-week, e.g. \"*/15 * * * *\""
                        ),
                    )
                }),
            (None, Some(0)) => Err(Problem::new("everySecs", "must be at least 1")),
            (None, Some(n)) => Ok(When::Every(Duration::from_secs(n))),
            (Some(_), Some(_)) => Err(Problem::new(
                "everySecs",
                "give cron or everySecs, not both",
            )),
            (None, None) => Err(Problem::new(
                "cron",
                "a schedule needs cron (a cron expression) or everySecs (an interval)",
            )),
        }
    }

    /// The first occurrence after `after`.
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self {
            When::Cron(c) => c.find_next_occurrence(&after, false).ok(),
            When::Every(d) => chrono::Duration::from_std(*d).ok().map(|d| after + d),
        }
    }
}

/// What a client asks to schedule.
pub struct NewSchedule {
    pub source: Source,
    pub mode: Mode,
    pub name: Option<String>,
    pub cron: Option<String>,
    pub every_secs: Option<u64>,
}

#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    #[error("the schedule has errors")]
    Invalid(Vec<Problem>, Vec<String>),
    #[error("no schedule {0:?}")]
    NotFound(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Io(String),
}

pub struct Scheduler {
    store: Arc<Store>,
    executor: Arc<Executor>,
    /// Each schedule's next occurrence.
    next: Mutex<HashMap<String, DateTime<Utc>>>,
    wake: Condvar,
    stopping: AtomicBool,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Scheduler {
    pub fn start(
        store: Arc<Store>,
        executor: Arc<Executor>,
    ) -> Result<Arc<Scheduler>, ScheduleError> {
        let s = Arc::new(Scheduler {
            store,
            executor,
            next: Mutex::new(HashMap::new()),
            wake: Condvar::new(),
            stopping: AtomicBool::new(false),
            thread: Mutex::new(None),
        });
        let me = s.clone();
        let t = std::thread::Builder::new()
            .name("lucille-service-schedules".into())
            .spawn(move || me.run())
            .map_err(|e| ScheduleError::Io(format!("cannot start the scheduler: {e}")))?;
        *s.thread.lock() = Some(t);
        Ok(s)
    }

    /// Validates the config now (as a run would be) and adds the schedule.
    pub fn create(&self, n: NewSchedule) -> Result<ScheduleView, ScheduleError> {
        let when = When::parse(n.cron.as_deref(), n.every_secs)
            .map_err(|p| ScheduleError::Invalid(vec![p], Vec::new()))?;
        let loaded =
            crate::submit::load(&n.source).map_err(|p| ScheduleError::Invalid(p, Vec::new()))?;
        crate::submit::validate(&loaded)
            .map_err(|p| ScheduleError::Invalid(p, loaded.secrets.clone()))?;
        let row = ScheduleRow {
            id: lucille_core::document::ids::random_id(),
            name: lucille_core::config::scrub(
                &n.name.unwrap_or_else(|| n.source.default_name()),
                &loaded.secrets,
            ),
            cron: n.cron,
            every_secs: n.every_secs,
            source: n.source,
            mode: n.mode,
            paused: false,
            last_run_id: None,
            created_at: crate::model::now(),
        };
        self.store.insert_schedule(&row)?;
        if let Some(next) = when.next_after(Utc::now()) {
            self.next.lock().insert(row.id.clone(), next);
        }
        self.wake.notify_all();
        tracing::info!("schedule {:?} ({}) created", row.name, row.id);
        Ok(self.view(&row))
    }

    pub fn list(&self) -> Result<Vec<ScheduleView>, ScheduleError> {
        Ok(self
            .store
            .schedules()?
            .iter()
            .map(|r| self.view(r))
            .collect())
    }

    pub fn set_paused(&self, id: &str, paused: bool) -> Result<ScheduleView, ScheduleError> {
        if !self.store.set_paused(id, paused)? {
            return Err(ScheduleError::NotFound(id.into()));
        }
        if !paused {
            // Resumed: the next occurrence from now, not the ones missed while paused.
            self.next.lock().remove(id);
        }
        self.wake.notify_all();
        self.store
            .schedules()?
            .iter()
            .find(|r| r.id == id)
            .map(|r| self.view(r))
            .ok_or_else(|| ScheduleError::NotFound(id.into()))
    }

    pub fn delete(&self, id: &str) -> Result<(), ScheduleError> {
        if !self.store.delete_schedule(id)? {
            return Err(ScheduleError::NotFound(id.into()));
        }
        self.next.lock().remove(id);
        Ok(())
    }

    pub fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        self.wake.notify_all();
        if let Some(t) = self.thread.lock().take() {
            let _ = t.join();
        }
    }

    fn view(&self, r: &ScheduleRow) -> ScheduleView {
        ScheduleView {
            id: r.id.clone(),
            name: r.name.clone(),
            cron: r.cron.clone(),
            every_secs: r.every_secs,
            paused: r.paused,
            last_run_id: r.last_run_id.clone(),
            next_run_at: (!r.paused)
                .then(|| self.next.lock().get(&r.id).copied())
                .flatten()
                .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
        }
    }

    /// Wakes at least twice a second, fires what is due.
    fn run(&self) {
        while !self.stopping.load(Ordering::SeqCst) {
            if let Err(e) = self.tick(Utc::now()) {
                tracing::error!("schedules: {e}");
            }
            let mut next = self.next.lock();
            if self.stopping.load(Ordering::SeqCst) {
                break;
            }
            self.wake.wait_for(&mut next, Duration::from_millis(250));
        }
    }

    fn tick(&self, now: DateTime<Utc>) -> Result<(), ScheduleError> {
        for row in self.store.schedules()? {
            let Ok(when) = When::parse(row.cron.as_deref(), row.every_secs) else {
                continue;
            };
            if row.paused {
                self.next.lock().remove(&row.id);
                continue;
            }
            let due = {
                let mut next = self.next.lock();
                let at = *next
                    .entry(row.id.clone())
                    .or_insert_with(|| when.next_after(now).unwrap_or(now));
                if at > now {
                    continue;
                }
                match when.next_after(now) {
                    Some(n) => next.insert(row.id.clone(), n),
                    None => next.remove(&row.id),
                };
                at
            };
            self.fire(&row, due)?;
        }
        Ok(())
    }

    fn fire(&self, row: &ScheduleRow, due: DateTime<Utc>) -> Result<(), ScheduleError> {
        if self.store.schedule_busy(&row.id)? {
            tracing::info!(
                "schedule {:?}: its previous run is still going; the run due at {due} is skipped",
                row.name
            );
            return Ok(());
        }
        let submitted = self.executor.submit(Submission {
            source: row.source.clone(),
            mode: row.mode,
            name: Some(row.name.clone()),
            schedule_id: Some(row.id.clone()),
        });
        let run = match submitted {
            Ok(run) => run,
            Err(RunError::Invalid(problems, secrets)) => {
                tracing::error!("schedule {:?}: its config is no longer valid", row.name);
                self.executor
                    .record_rejected(&row.name, row.mode, Some(&row.id), &problems, &secrets)
                    .map_err(|e| ScheduleError::Io(e.to_string()))?
            }
            Err(e) => return Err(ScheduleError::Io(e.to_string())),
        };
        self.store.set_last_run(&row.id, &run.id)?;
        Ok(())
    }
}
