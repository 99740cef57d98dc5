//! SleepConnector (Lucille's `connector.SleepConnector`): publishes nothing and waits
//! `duration` milliseconds, as a step of a run's connector sequence (to let a service settle
//! between two connectors, or in tests of run timing). A run that is stopped cuts the wait
//! short, as Lucille's interrupted sleep does: the connector then ends with an error.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{connector_spec, Common, Connector, ConnectorDescriptor, ConnectorError};
use crate::accounting::Publisher;
use crate::config::{ComponentConfig, ConfigErrors, Options};

pub const DESCRIPTOR: ConnectorDescriptor = ConnectorDescriptor {
    name: "SleepConnector",
    aliases: &[],
    spec: SleepOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// How often a sleeping connector looks whether the run is stopping.
const STOP_POLL: Duration = Duration::from_millis(50);

/// Publishes nothing: waits `duration` milliseconds, then ends.
#[derive(Options)]
#[options(base = connector_spec())]
struct SleepOptions {
    /// Milliseconds to wait.
    #[option(min = 0)]
    duration: i64,
}

struct SleepConnector {
    name: String,
    duration: Duration,
}

fn build(config: &ComponentConfig, common: &Common) -> Result<Box<dyn Connector>, ConfigErrors> {
    let o = SleepOptions::from_config(config)?;
    Ok(Box::new(SleepConnector {
        name: common.name.clone(),
        // Not negative: checked by its `min`.
        duration: Duration::from_millis(o.duration.unsigned_abs()),
    }))
}

impl Connector for SleepConnector {
    fn execute(&mut self, publisher: &Arc<Publisher>) -> Result<(), ConnectorError> {
        let until = Instant::now() + self.duration;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(());
            }
            if publisher.is_stopping() {
                return Err(ConnectorError::new(format!(
                    "SleepConnector {:?}: the run stopped {} ms before the end of its sleep",
                    self.name,
                    left.as_millis()
                )));
            }
            std::thread::sleep(left.min(STOP_POLL));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;
    use crate::accounting::PublisherSettings;
    use crate::messaging::LocalMessenger;

    fn run(
        duration_ms: u64,
        stop_after: Option<Duration>,
    ) -> (Result<(), ConnectorError>, Duration) {
        let stopping = Arc::new(AtomicBool::new(false));
        let publisher = Arc::new(Publisher::new(
            Arc::from("run-1"),
            Arc::new(LocalMessenger::new(10)),
            PublisherSettings::default(),
            stopping.clone(),
        ));
        let mut c = SleepConnector {
            name: "nap".into(),
            duration: Duration::from_millis(duration_ms),
        };
        let started = Instant::now();
        let stopper = stop_after.map(|after| {
            std::thread::spawn(move || {
                std::thread::sleep(after);
                stopping.store(true, Ordering::Relaxed);
            })
        });
        let result = c.execute(&publisher);
        let took = started.elapsed();
        if let Some(s) = stopper {
            s.join().unwrap();
        }
        (result, took)
    }

    #[test]
    fn waits_its_duration_and_publishes_nothing() {
        let (result, took) = run(150, None);
        assert!(result.is_ok());
        assert!(took >= Duration::from_millis(150), "{took:?}");
        let (result, _) = run(0, None);
        assert!(result.is_ok());
    }

    #[test]
    fn a_stopped_run_cuts_the_wait_short_with_an_error() {
        let (result, took) = run(60_000, Some(Duration::from_millis(100)));
        let message = result.unwrap_err().to_string();
        assert!(message.contains("the run stopped"), "{message}");
        // Far from the minute it was asked to wait.
        assert!(took < Duration::from_secs(30), "{took:?}");
    }
}
