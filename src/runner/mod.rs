//! The runner (validation, the connector loop, the RUN SUMMARY) lives in `lucille-core`; the
//! Kafka modes' transport and processes in `lucille-kafka` (both re-exported here).

pub use lucille_core::runner::*;
#[cfg(feature = "kafka")]
pub use lucille_kafka::distributed;
