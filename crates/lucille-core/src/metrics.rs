//! The process's metrics, by the names and labels of interface.md ("Metrics, health, traces,
//! logs"): one registry per process (Prometheus counts per process, so runs that share a
//! process add up), recorded by the publisher, the pipeline's stages, the indexer loop and the
//! queues, and served by `lucille-observe` (the `/metrics` endpoint, which also adds the
//! `process_*` metrics).
//!
//! The hot paths never touch a shared counter per document: the publisher adds each batch of
//! events it applies at once, a stage's counts are kept in cells its worker alone writes and
//! the scrape sums ([`StageLive`], [`StageCounters`]: true at every scrape, even while a
//! worker is stuck in a stage), its sampled durations are flushed about once a second, and
//! the indexer counts per batch.
//! Labels stay bounded: pipeline, connector, stage and indexer names come from the config,
//! never from documents.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use prometheus::core::{Collector, Desc};
use prometheus::local::LocalHistogram;
use prometheus::proto::MetricFamily;
use prometheus::{
    Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry,
};

use crate::accounting::ledger::Counts;
pub use crate::messaging::QueueDepths;

/// Upper bounds (seconds) of a stage call's duration histogram: stages take microseconds
/// (field edits) to seconds (model calls).
const STAGE_BUCKETS: &[f64] = &[
    0.000_001, 0.000_005, 0.000_025, 0.000_1, 0.000_5, 0.002_5, 0.01, 0.05, 0.25, 1.0, 5.0, 25.0,
];
/// Upper bounds (seconds) of an indexer batch's duration histogram.
const BATCH_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
];

type QueueProbe = Box<dyn Fn() -> Option<QueueDepths> + Send + Sync>;

/// Every metric family of the process.
pub struct Metrics {
    registry: Registry,
    documents: IntCounterVec,
    published: IntCounterVec,
    created: IntCounterVec,
    in_flight: IntGauge,
    stages: Arc<StageCounters>,
    stage_duration: HistogramVec,
    indexer_batches: IntCounterVec,
    indexer_batch_duration: HistogramVec,
    indexer_documents: IntCounterVec,
    indexer_retries: IntCounterVec,
    traces_dropped: IntCounter,
    queues: Arc<Mutex<Vec<QueueProbe>>>,
}

/// The process's metrics, created (every family registered) on first use.
pub fn global() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(Metrics::new)
}

fn counter_vec(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    let c = IntCounterVec::new(Opts::new(name, help), labels)
        .unwrap_or_else(|e| panic!("metric {name}: {e}"));
    // A family registered twice or with a bad name is a bug in this file, found by its tests.
    registry
        .register(Box::new(c.clone()))
        .unwrap_or_else(|e| panic!("metric {name}: {e}"));
    c
}

fn histogram_vec(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
    buckets: &[f64],
) -> HistogramVec {
    let h = HistogramVec::new(
        HistogramOpts::new(name, help).buckets(buckets.to_vec()),
        labels,
    )
    .unwrap_or_else(|e| panic!("metric {name}: {e}"));
    registry
        .register(Box::new(h.clone()))
        .unwrap_or_else(|e| panic!("metric {name}: {e}"));
    h
}

impl Metrics {
    fn new() -> Self {
        let registry = Registry::new();
        let r = &registry;
        let in_flight = IntGauge::new(
            "lucille_documents_in_flight",
            "Documents published or created and not yet at a terminal event.",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let traces_dropped = IntCounter::new(
            "lucille_traces_dropped_total",
            "Spans dropped because the trace export buffer was full or the collector failed.",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let build_info = IntGaugeVec::new(
            Opts::new("lucille_build_info", "Lucille-rs's version; always 1."),
            &["version"],
        )
        .unwrap_or_else(|e| panic!("{e}"));
        build_info
            .with_label_values(&[env!("CARGO_PKG_VERSION")])
            .set(1);
        let queues: Arc<Mutex<Vec<QueueProbe>>> = Arc::default();
        let stages = Arc::new(StageCounters::new());
        for c in [
            Box::new(SharedStageCounters(stages.clone())) as Box<dyn Collector>,
            Box::new(in_flight.clone()),
            Box::new(traces_dropped.clone()),
            Box::new(build_info),
            Box::new(QueueCollector::new(queues.clone())),
        ] {
            r.register(c).unwrap_or_else(|e| panic!("{e}"));
        }
        Metrics {
            documents: counter_vec(
                r,
                "lucille_documents_total",
                "Documents that reached a terminal event, by outcome (succeeded, failed, dropped).",
                &["pipeline", "outcome"],
            ),
            published: counter_vec(
                r,
                "lucille_documents_published_total",
                "Documents a connector published.",
                &["connector"],
            ),
            created: counter_vec(
                r,
                "lucille_documents_created_total",
                "Child documents stages created.",
                &["pipeline"],
            ),
            in_flight,
            stages,
            stage_duration: histogram_vec(
                r,
                "lucille_stage_duration_seconds",
                "Time of a stage call, sampled: every call of a worker's first 1024, then one in 8.",
                &["pipeline", "stage", "class"],
                STAGE_BUCKETS,
            ),
            indexer_batches: counter_vec(
                r,
                "lucille_indexer_batches_total",
                "Batches the indexer sent to its backend.",
                &["indexer"],
            ),
            indexer_batch_duration: histogram_vec(
                r,
                "lucille_indexer_batch_duration_seconds",
                "Time the backend took to take a batch.",
                &["indexer"],
                BATCH_BUCKETS,
            ),
            indexer_documents: counter_vec(
                r,
                "lucille_indexer_documents_total",
                "Documents the indexer finished with, by outcome (succeeded, failed).",
                &["indexer", "outcome"],
            ),
            indexer_retries: counter_vec(
                r,
                "lucille_indexer_retries_total",
                "Requests to the backend sent again after a retryable failure.",
                &["indexer"],
            ),
            traces_dropped,
            queues,
            registry,
        }
    }

    /// Every family's current values (for the `/metrics` endpoint's text encoding).
    pub fn gather(&self) -> Vec<MetricFamily> {
        self.registry.gather()
    }

    /// Adds a collector to the process's registry (the endpoint's `process_*` metrics).
    pub fn register(&self, c: Box<dyn Collector>) -> Result<(), prometheus::Error> {
        self.registry.register(c)
    }

    /// The counters a connector's publisher adds to.
    pub fn publisher(&self, connector: &str, pipeline: &str) -> PublisherMetrics {
        PublisherMetrics {
            published: self.published.with_label_values(&[connector]),
            created: self.created.with_label_values(&[pipeline]),
            succeeded: self.documents.with_label_values(&[pipeline, "succeeded"]),
            failed: self.documents.with_label_values(&[pipeline, "failed"]),
            dropped: self.documents.with_label_values(&[pipeline, "dropped"]),
            unchanged: std::sync::OnceLock::new(),
            documents: self.documents.clone(),
            pipeline: pipeline.to_string(),
            in_flight: self.in_flight.clone(),
            counted_in_flight: AtomicI64::new(0),
        }
    }

    /// A stage's counters and duration histogram, for one worker's copy of the stage.
    pub fn stage(&self, pipeline: &str, stage: &str, class: &str) -> StageLive {
        let key = [pipeline.to_string(), stage.to_string(), class.to_string()];
        let cells = Arc::new(StageCells::default());
        self.stages
            .series
            .lock()
            .entry(key.clone())
            .or_default()
            .live
            .push(cells.clone());
        StageLive {
            cells,
            key,
            counters: self.stages.clone(),
            duration: self
                .stage_duration
                .with_label_values(&[pipeline, stage, class])
                .local(),
        }
    }

    /// The indexer loop's counters for the backend `indexer` (its `indexer.type`).
    pub fn indexer(&self, indexer: &str) -> IndexerMetrics {
        IndexerMetrics {
            batches: self.indexer_batches.with_label_values(&[indexer]),
            batch_duration: self.indexer_batch_duration.with_label_values(&[indexer]),
            succeeded: self
                .indexer_documents
                .with_label_values(&[indexer, "succeeded"]),
            failed: self
                .indexer_documents
                .with_label_values(&[indexer, "failed"]),
        }
    }

    /// The retry counter of the backend `indexer`, which its HTTP client adds to.
    pub fn indexer_retries(&self, indexer: &str) -> IntCounter {
        self.indexer_retries.with_label_values(&[indexer])
    }

    /// Counts spans the trace exporter dropped.
    pub fn traces_dropped(&self, n: u64) {
        self.traces_dropped.inc_by(n);
    }

    /// Reports a run's queues in `lucille_queue_depth` while `probe` answers (it returns
    /// `None` once the queues are gone, and is then forgotten).
    pub fn watch_queues(&self, probe: impl Fn() -> Option<QueueDepths> + Send + Sync + 'static) {
        self.queues.lock().push(Box::new(probe));
    }

    /// Reports the queues of `messenger` while it lives.
    pub fn watch_messenger<M: crate::messaging::Events + ?Sized + 'static>(&self, m: Weak<M>) {
        self.watch_queues(move || m.upgrade().and_then(|m| m.queue_depths()));
    }
}

/// `lucille_queue_depth{queue}`, read from the live runs' queues when scraped.
struct QueueCollector {
    probes: Arc<Mutex<Vec<QueueProbe>>>,
    gauge: IntGaugeVec,
}

impl QueueCollector {
    fn new(probes: Arc<Mutex<Vec<QueueProbe>>>) -> Self {
        let gauge = IntGaugeVec::new(
            Opts::new(
                "lucille_queue_depth",
                "Items waiting in the process's queues: source (documents for the workers), \
                 destination (documents for the indexer), events (for the publisher).",
            ),
            &["queue"],
        )
        .unwrap_or_else(|e| panic!("{e}"));
        QueueCollector { probes, gauge }
    }
}

impl Collector for QueueCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.gauge.desc()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let mut total = QueueDepths::default();
        self.probes.lock().retain(|probe| match probe() {
            Some(d) => {
                total.source += d.source;
                total.destination += d.destination;
                total.events += d.events;
                true
            }
            None => false,
        });
        for (queue, n) in [
            ("source", total.source),
            ("destination", total.destination),
            ("events", total.events),
        ] {
            self.gauge
                .with_label_values(&[queue])
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
        self.gauge.collect()
    }
}

/// What one connector's publisher adds: its published documents, its pipeline's outcomes and
/// children, and its share of the documents in flight (given back when it is dropped, so a
/// run stopped with documents in flight does not leave them counted).
pub struct PublisherMetrics {
    published: IntCounter,
    created: IntCounter,
    succeeded: IntCounter,
    failed: IntCounter,
    dropped: IntCounter,
    /// Made on the first unchanged document: a run without skipUnchanged shows no such series.
    unchanged: std::sync::OnceLock<IntCounter>,
    documents: IntCounterVec,
    pipeline: String,
    in_flight: IntGauge,
    counted_in_flight: AtomicI64,
}

impl PublisherMetrics {
    /// `docs` documents sent for processing (or accounted as failed before they could be).
    pub fn published(&self, docs: u64) {
        self.published.inc_by(docs);
        self.in_flight.add(docs as i64);
        self.counted_in_flight
            .fetch_add(docs as i64, Ordering::Relaxed);
    }

    /// `docs` documents of a unit `skipUnchanged` did not read: published and unchanged at
    /// once.
    pub fn unread_unchanged(&self, docs: u64) {
        self.published.inc_by(docs);
        self.count_unchanged(docs);
    }

    fn count_unchanged(&self, n: u64) {
        if n > 0 {
            self.unchanged
                .get_or_init(|| {
                    self.documents
                        .with_label_values(&[self.pipeline.as_str(), "unchanged"])
                })
                .inc_by(n);
        }
    }

    /// What applying events changed in the ledger's counts.
    pub fn applied(&self, before: &Counts, after: &Counts) {
        let delta = |a: u64, b: u64| a.saturating_sub(b);
        let created = delta(after.created, before.created);
        let succeeded = delta(after.succeeded, before.succeeded);
        let failed = delta(after.failed, before.failed);
        let dropped = delta(after.dropped, before.dropped);
        let unchanged = delta(after.unchanged, before.unchanged);
        self.created.inc_by(created);
        self.count_unchanged(unchanged);
        self.succeeded.inc_by(succeeded);
        self.failed.inc_by(failed);
        self.dropped.inc_by(dropped);
        let change = created as i64 - (succeeded + failed + dropped + unchanged) as i64;
        self.in_flight.add(change);
        self.counted_in_flight.fetch_add(change, Ordering::Relaxed);
    }
}

impl Drop for PublisherMetrics {
    fn drop(&mut self) {
        self.in_flight
            .sub(self.counted_in_flight.load(Ordering::Relaxed));
    }
}

/// One worker's counts of one stage: written by that worker alone, as plain stores of its
/// totals (no read-modify-write on a line other threads write), and read by the scrape.
#[derive(Default)]
struct StageCells {
    documents: AtomicU64,
    errors: AtomicU64,
}

/// A stage's series: the counts of workers that are gone, and the live workers' cells.
#[derive(Default)]
struct StageSeries {
    retired: (u64, u64),
    live: Vec<Arc<StageCells>>,
}

/// `lucille_stage_documents_total` and `lucille_stage_errors_total`: each series the sum, at
/// the moment of the scrape, of its live workers' cells and of what its finished workers
/// left. A worker that hangs in a stage still shows every document it passed on, which a
/// flush from the worker's own loop could not (the loop is what hangs).
struct StageCounters {
    documents: IntCounterVec,
    errors: IntCounterVec,
    series: Mutex<BTreeMap<[String; 3], StageSeries>>,
}

impl StageCounters {
    fn new() -> Self {
        let labels = &["pipeline", "stage", "class"];
        let vec = |name: &str, help: &str| {
            IntCounterVec::new(Opts::new(name, help), labels)
                .unwrap_or_else(|e| panic!("metric {name}: {e}"))
        };
        StageCounters {
            documents: vec(
                "lucille_stage_documents_total",
                "Documents a stage processed (its conditions held).",
            ),
            errors: vec(
                "lucille_stage_errors_total",
                "Documents a stage failed on (an error or a panic).",
            ),
            series: Mutex::default(),
        }
    }
}

/// The registry's handle on the process's [`StageCounters`].
struct SharedStageCounters(Arc<StageCounters>);

impl Collector for SharedStageCounters {
    fn desc(&self) -> Vec<&Desc> {
        let mut d = self.0.documents.desc();
        d.extend(self.0.errors.desc());
        d
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let c = &self.0;
        // Held while the counters are brought up to the sums, so two scrapes cannot both add.
        let series = c.series.lock();
        for (key, s) in series.iter() {
            let (mut documents, mut errors) = s.retired;
            for cell in &s.live {
                documents += cell.documents.load(Ordering::Relaxed);
                errors += cell.errors.load(Ordering::Relaxed);
            }
            let labels = [key[0].as_str(), key[1].as_str(), key[2].as_str()];
            for (vec, total) in [(&c.documents, documents), (&c.errors, errors)] {
                let counter = vec.with_label_values(&labels);
                counter.inc_by(total.saturating_sub(counter.get()));
            }
        }
        let mut families = c.documents.collect();
        families.extend(c.errors.collect());
        families
    }
}

/// One worker's copy of a stage's metrics: its counts, visible to every scrape as soon as
/// [`StageLive::count`] stores them; its sampled call durations, kept in a local histogram
/// and added to the shared one when flushed. Dropped with its worker, it leaves its counts to
/// the series.
pub struct StageLive {
    cells: Arc<StageCells>,
    key: [String; 3],
    counters: Arc<StageCounters>,
    duration: LocalHistogram,
}

impl StageLive {
    /// One timed call of the stage.
    pub fn observe(&self, d: Duration) {
        self.duration.observe(d.as_secs_f64());
    }

    /// The stage's totals in this worker so far (`documents`, `errors`), for the next scrape.
    #[inline]
    pub fn count(&self, documents: u64, errors: u64) {
        self.cells.documents.store(documents, Ordering::Relaxed);
        self.cells.errors.store(errors, Ordering::Relaxed);
    }

    /// Stores the totals and adds the sampled durations since the last flush.
    pub fn flush(&mut self, documents: u64, errors: u64) {
        self.count(documents, errors);
        self.duration.flush();
    }
}

impl Drop for StageLive {
    fn drop(&mut self) {
        self.duration.flush();
        let mut series = self.counters.series.lock();
        if let Some(s) = series.get_mut(&self.key) {
            s.live.retain(|c| !Arc::ptr_eq(c, &self.cells));
            s.retired.0 += self.cells.documents.load(Ordering::Relaxed);
            s.retired.1 += self.cells.errors.load(Ordering::Relaxed);
        }
    }
}

/// The indexer loop's counters for its backend.
pub struct IndexerMetrics {
    pub batches: IntCounter,
    pub batch_duration: Histogram,
    pub succeeded: IntCounter,
    pub failed: IntCounter,
}

/// A counter a [`crate::retry::RetryPolicy`] carries: how the HTTP client counts an
/// indexer's retries without knowing about metrics. Equal to any other (a policy compares by
/// its settings).
#[derive(Clone)]
pub struct RetryCounter(pub IntCounter);

impl RetryCounter {
    pub fn inc(&self) {
        self.0.inc();
    }
}

impl PartialEq for RetryCounter {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for RetryCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RetryCounter")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        global()
            .gather()
            .into_iter()
            .find(|f| f.name() == name)
            .and_then(|f| {
                f.get_metric()
                    .iter()
                    .find(|m| {
                        labels.iter().all(|(k, v)| {
                            m.get_label()
                                .iter()
                                .any(|l| l.name() == *k && l.value() == *v)
                        })
                    })
                    .map(|m| match f.get_field_type() {
                        prometheus::proto::MetricType::COUNTER => m.get_counter().get_value(),
                        _ => m.get_gauge().get_value(),
                    })
            })
    }

    #[test]
    fn every_family_is_registered_once_and_build_info_is_one() {
        let names: Vec<String> = global()
            .gather()
            .iter()
            .map(|f| f.name().to_string())
            .collect();
        for name in [
            "lucille_build_info",
            "lucille_documents_in_flight",
            "lucille_queue_depth",
        ] {
            assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
        }
        assert_eq!(
            value(
                "lucille_build_info",
                &[("version", env!("CARGO_PKG_VERSION"))]
            ),
            Some(1.0)
        );
    }

    #[test]
    fn unchanged_documents_have_their_own_outcome_made_on_the_first_one() {
        let m = global().publisher("metrics-test-u", "metrics-test-u");
        let outcome = |o| {
            value(
                "lucille_documents_total",
                &[("pipeline", "metrics-test-u"), ("outcome", o)],
            )
        };
        m.applied(&Counts::default(), &Counts::default());
        assert_eq!(
            outcome("unchanged"),
            None,
            "no series without skipUnchanged"
        );
        m.published(1);
        let after = Counts {
            published: 1,
            unchanged: 1,
            ..Counts::default()
        };
        m.applied(&Counts::default(), &after);
        m.unread_unchanged(5);
        assert_eq!(outcome("unchanged"), Some(6.0));
        assert_eq!(outcome("dropped"), Some(0.0));
    }

    #[test]
    fn publisher_metrics_add_the_ledgers_changes_and_give_back_in_flight_when_dropped() {
        let m = global().publisher("metrics-test-c", "metrics-test-p");
        for _ in 0..4 {
            m.published(1);
        }
        let before = Counts::default();
        let after = Counts {
            published: 4,
            created: 2,
            succeeded: 3,
            failed: 1,
            dropped: 1,
            unchanged: 0,
        };
        m.applied(&before, &after);
        let outcome = |o| {
            value(
                "lucille_documents_total",
                &[("pipeline", "metrics-test-p"), ("outcome", o)],
            )
        };
        assert_eq!(outcome("succeeded"), Some(3.0));
        assert_eq!(outcome("failed"), Some(1.0));
        assert_eq!(outcome("dropped"), Some(1.0));
        assert_eq!(
            value(
                "lucille_documents_published_total",
                &[("connector", "metrics-test-c")]
            ),
            Some(4.0)
        );
        assert_eq!(
            value(
                "lucille_documents_created_total",
                &[("pipeline", "metrics-test-p")]
            ),
            Some(2.0)
        );
        // 4 published + 2 created - 5 ended: 1 still in flight, which the drop gives back.
        assert_eq!(m.counted_in_flight.load(Ordering::Relaxed), 1);
        drop(m);
    }

    #[test]
    fn stage_counts_are_the_workers_totals_at_each_scrape() {
        let mut s = global().stage("metrics-test-p", "s1", "Shout");
        s.observe(Duration::from_micros(3));
        s.flush(10, 1);
        s.flush(15, 1);
        let labels = [
            ("pipeline", "metrics-test-p"),
            ("stage", "s1"),
            ("class", "Shout"),
        ];
        assert_eq!(value("lucille_stage_documents_total", &labels), Some(15.0));
        assert_eq!(value("lucille_stage_errors_total", &labels), Some(1.0));
        let family = global()
            .gather()
            .into_iter()
            .find(|f| f.name() == "lucille_stage_duration_seconds");
        let count = family.and_then(|f| {
            f.get_metric()
                .iter()
                .find(|m| m.get_label().iter().any(|l| l.value() == "metrics-test-p"))
                .map(|m| m.get_histogram().get_sample_count())
        });
        assert_eq!(count, Some(1));
    }

    #[test]
    fn stage_counts_are_seen_without_a_flush_and_outlive_their_worker() {
        let labels = [
            ("pipeline", "metrics-test-live"),
            ("stage", "copy"),
            ("class", "CopyFields"),
        ];
        let docs = || value("lucille_stage_documents_total", &labels);
        let a = global().stage("metrics-test-live", "copy", "CopyFields");
        let b = global().stage("metrics-test-live", "copy", "CopyFields");
        // Worker a is stuck after 7 documents: it never flushes, its stores are what counts.
        a.count(7, 0);
        b.count(3, 1);
        assert_eq!(docs(), Some(10.0));
        assert_eq!(value("lucille_stage_errors_total", &labels), Some(1.0));
        b.count(5, 1);
        assert_eq!(docs(), Some(12.0));
        // A worker that ends leaves its counts; a new one starts from them.
        drop(b);
        assert_eq!(docs(), Some(12.0));
        let c = global().stage("metrics-test-live", "copy", "CopyFields");
        c.count(1, 0);
        assert_eq!(docs(), Some(13.0));
        drop((a, c));
        assert_eq!(docs(), Some(13.0));
        let series = global().stages.series.lock();
        let key = ["metrics-test-live", "copy", "CopyFields"].map(String::from);
        assert!(
            series[&key].live.is_empty(),
            "dropped workers' cells are let go"
        );
    }

    #[test]
    fn queue_depths_add_up_over_live_probes_and_dead_ones_are_forgotten() {
        let probes: Arc<Mutex<Vec<QueueProbe>>> = Arc::default();
        let collector = QueueCollector::new(probes.clone());
        let (a, b) = (Arc::new(()), Arc::new(()));
        for (owner, depth) in [(&a, 7), (&b, 5)] {
            let weak = Arc::downgrade(owner);
            probes.lock().push(Box::new(move || {
                weak.upgrade().map(|_| QueueDepths {
                    source: depth,
                    destination: 1,
                    events: 0,
                })
            }));
        }
        let source = |c: &QueueCollector| {
            c.collect()[0]
                .get_metric()
                .iter()
                .find(|m| m.get_label()[0].value() == "source")
                .map(|m| m.get_gauge().get_value())
        };
        assert_eq!(source(&collector), Some(12.0));
        drop(a);
        assert_eq!(source(&collector), Some(5.0));
        assert_eq!(probes.lock().len(), 1);
    }
}
