//! The messaging roles, the topology and the local queues live in `lucille-core`; Kafka, the
//! broker of the distributed modes, in `lucille-kafka` (both re-exported here).

pub use lucille_core::messaging::*;
#[cfg(feature = "kafka")]
pub use lucille_kafka as kafka;
