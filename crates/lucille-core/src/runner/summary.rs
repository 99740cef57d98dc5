//! Run and connector results, and the RUN SUMMARY text (interface.md):
//!
//! ```text
//! RUN SUMMARY: Success. 1/1 connectors complete. All published docs succeeded.
//! files: complete. 200000 docs succeeded. 0 docs failed. 0 docs dropped. Time: 41.64 secs.
//! Run took 41.80 secs.
//! ```
//!
//! As in Lucille: "Partial success." when every connector completed but some documents
//! failed, "Failure." when a connector failed; a failed connector's line reads `ERROR.` with the
//! reason, and connectors after it are `skipped.`.

use std::time::Duration;

use crate::accounting::Counts;
use crate::messaging::History;
use crate::pipeline::StageMetrics;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConnectorStatus {
    Complete,
    Failed(String),
    Skipped,
}

#[derive(Debug, Clone)]
pub struct ConnectorResult {
    pub name: String,
    pub status: ConnectorStatus,
    /// Documents the connector published (after collapsing).
    pub published: u64,
    /// Calls to publish (before collapsing).
    pub received: u64,
    pub succeeded: u64,
    pub failed: u64,
    pub dropped: u64,
    /// Documents `skipUnchanged` found unchanged (DROPs counted apart).
    pub unchanged: u64,
    /// Whether the connector had `skipUnchanged` (its summary line counts unchanged ones).
    pub skip_unchanged: bool,
    /// Documents (children included) tracked but without a terminal event when the
    /// connector ended: only after a stop, a timeout or a failure.
    pub in_flight: u64,
    pub seconds: f64,
    pub history: Option<History>,
}

impl ConnectorResult {
    fn base(name: &str, status: ConnectorStatus, counts: Counts, elapsed: Duration) -> Self {
        ConnectorResult {
            name: name.to_string(),
            status,
            published: counts.published,
            received: counts.published,
            succeeded: counts.succeeded,
            failed: counts.failed,
            dropped: counts.dropped,
            unchanged: counts.unchanged,
            skip_unchanged: false,
            in_flight: 0,
            seconds: elapsed.as_secs_f64(),
            history: None,
        }
    }

    pub fn complete(name: &str, counts: Counts, elapsed: Duration) -> Self {
        Self::base(name, ConnectorStatus::Complete, counts, elapsed)
    }

    pub fn failed(name: &str, message: String, elapsed: Duration) -> Self {
        Self::base(
            name,
            ConnectorStatus::Failed(message),
            Counts::default(),
            elapsed,
        )
    }

    pub fn failed_with_counts(
        name: &str,
        message: String,
        counts: Counts,
        elapsed: Duration,
    ) -> Self {
        Self::base(name, ConnectorStatus::Failed(message), counts, elapsed)
    }

    pub fn skipped(name: &str) -> Self {
        Self::base(
            name,
            ConnectorStatus::Skipped,
            Counts::default(),
            Duration::ZERO,
        )
    }

    pub fn status_text(&self) -> &'static str {
        match self.status {
            ConnectorStatus::Complete => "complete",
            ConnectorStatus::Failed(_) => "failed",
            ConnectorStatus::Skipped => "skipped",
        }
    }

    fn line(&self) -> String {
        match &self.status {
            ConnectorStatus::Skipped => format!("{}: skipped.", self.name),
            status => {
                let head = match status {
                    ConnectorStatus::Failed(m) => format!("ERROR. {m}"),
                    _ => "complete.".to_string(),
                };
                let failed = if self.failed > 0 { "FAILED" } else { "failed" };
                let unchanged = if self.skip_unchanged || self.unchanged > 0 {
                    format!(" {} docs unchanged.", self.unchanged)
                } else {
                    String::new()
                };
                format!(
                    "{}: {head} {} docs succeeded. {} docs {failed}. {} docs dropped.{unchanged} Time: {:.2} secs.",
                    self.name, self.succeeded, self.failed, self.dropped, self.seconds
                )
            }
        }
    }
}

#[derive(Debug, Clone)]
pub struct RunResult {
    pub run_id: String,
    pub ok: bool,
    pub connectors: Vec<ConnectorResult>,
    pub seconds: f64,
    pub summary: String,
    /// Per pipeline run (connector order): the stage metrics summed over the workers.
    pub stage_metrics: Vec<(String, Vec<StageMetrics>)>,
}

impl RunResult {
    pub fn new(
        run_id: String,
        connectors: Vec<ConnectorResult>,
        elapsed: Duration,
        stage_metrics: Vec<(String, Vec<StageMetrics>)>,
    ) -> Self {
        let ok = connectors
            .iter()
            .all(|c| c.status == ConnectorStatus::Complete);
        let seconds = elapsed.as_secs_f64();
        let summary = render(ok, &connectors, seconds);
        RunResult {
            run_id,
            ok,
            connectors,
            seconds,
            summary,
            stage_metrics,
        }
    }

    pub fn status(&self) -> &'static str {
        if self.ok {
            "Success"
        } else {
            "Failure"
        }
    }

    pub fn totals(&self) -> Counts {
        let mut t = Counts::default();
        for c in &self.connectors {
            t.published += c.published;
            t.succeeded += c.succeeded;
            t.failed += c.failed;
            t.dropped += c.dropped;
            t.unchanged += c.unchanged;
        }
        t
    }
}

fn render(ok: bool, connectors: &[ConnectorResult], seconds: f64) -> String {
    let any_failed_docs = connectors.iter().any(|c| c.failed > 0);
    let any_docs = connectors
        .iter()
        .any(|c| c.published > 0 || c.succeeded + c.failed + c.dropped + c.unchanged > 0);
    let verdict = match (ok, any_failed_docs) {
        (true, false) => "Success.",
        (true, true) => "Partial success.",
        (false, _) => "Failure.",
    };
    let complete = connectors
        .iter()
        .filter(|c| c.status == ConnectorStatus::Complete)
        .count();
    let mut out = format!(
        "RUN SUMMARY: {verdict} {complete}/{} connectors complete.",
        connectors.len()
    );
    let any_in_flight = connectors.iter().any(|c| c.in_flight > 0);
    if any_docs {
        if any_failed_docs {
            out.push_str(" Some docs failed.");
        }
        if any_in_flight {
            out.push_str(" Some docs did not finish.");
        }
        if !any_failed_docs && !any_in_flight {
            out.push_str(" All published docs succeeded.");
        }
    }
    out.push('\n');
    for c in connectors {
        out.push_str(&c.line());
        out.push('\n');
    }
    out.push_str(&format!("Run took {seconds:.2} secs."));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(published: u64, succeeded: u64, failed: u64, dropped: u64) -> Counts {
        Counts {
            published,
            succeeded,
            failed,
            dropped,
            created: 0,
            unchanged: 0,
        }
    }

    #[test]
    fn success_summary_matches_the_interface() {
        let r = RunResult::new(
            "r".into(),
            vec![ConnectorResult::complete(
                "files",
                counts(200000, 200000, 0, 0),
                Duration::from_millis(41640),
            )],
            Duration::from_millis(41800),
            vec![],
        );
        assert_eq!(
            r.summary,
            "RUN SUMMARY: Success. 1/1 connectors complete. All published docs succeeded.\n\
             files: complete. 200000 docs succeeded. 0 docs failed. 0 docs dropped. Time: 41.64 secs.\n\
             Run took 41.80 secs."
        );
        assert_eq!(r.status(), "Success");
    }

    #[test]
    fn a_skip_unchanged_connector_counts_unchanged_documents_on_its_line() {
        let mut files = ConnectorResult::complete(
            "files",
            Counts {
                unchanged: 990,
                ..counts(1000, 10, 0, 0)
            },
            Duration::from_millis(1500),
        );
        files.skip_unchanged = true;
        let mut none = ConnectorResult::complete("none", counts(0, 0, 0, 0), Duration::ZERO);
        none.skip_unchanged = true;
        let r = RunResult::new(
            "r".into(),
            vec![files, none],
            Duration::from_secs(2),
            vec![],
        );
        assert_eq!(
            r.summary,
            "RUN SUMMARY: Success. 2/2 connectors complete. All published docs succeeded.\n\
             files: complete. 10 docs succeeded. 0 docs failed. 0 docs dropped. 990 docs unchanged. Time: 1.50 secs.\n\
             none: complete. 0 docs succeeded. 0 docs failed. 0 docs dropped. 0 docs unchanged. Time: 0.00 secs.\n\
             Run took 2.00 secs."
        );
        assert_eq!(r.totals().unchanged, 990);
    }

    #[test]
    fn partial_failure_and_skipped() {
        let r = RunResult::new(
            "r".into(),
            vec![
                ConnectorResult::complete("a", counts(3, 2, 1, 0), Duration::from_secs(1)),
                ConnectorResult::failed("b", "Connector timeout.".into(), Duration::from_secs(2)),
                ConnectorResult::skipped("c"),
            ],
            Duration::from_secs(3),
            vec![],
        );
        let lines: Vec<_> = r.summary.lines().collect();
        assert_eq!(
            lines[0],
            "RUN SUMMARY: Failure. 1/3 connectors complete. Some docs failed."
        );
        assert_eq!(
            lines[1],
            "a: complete. 2 docs succeeded. 1 docs FAILED. 0 docs dropped. Time: 1.00 secs."
        );
        assert!(lines[2].starts_with("b: ERROR. Connector timeout. 0 docs succeeded."));
        assert_eq!(lines[3], "c: skipped.");
        assert_eq!(r.status(), "Failure");
        let partial = RunResult::new(
            "r".into(),
            vec![ConnectorResult::complete(
                "a",
                counts(1, 0, 1, 0),
                Duration::ZERO,
            )],
            Duration::ZERO,
            vec![],
        );
        assert!(partial.summary.starts_with("RUN SUMMARY: Partial success."));
        assert!(partial.ok);
    }
}
