//! The runner (validation, the connector loop, the RUN SUMMARY) lives in `lucille-core`; the
//! Kafka modes' transport and processes in `lucille-kafka` (both re-exported here).

pub use lucille_core::runner::*;
pub use lucille_kafka::distributed;
