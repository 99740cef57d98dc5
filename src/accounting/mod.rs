//! Accounting: events, the ledger, and the Publisher that knows when a run is complete.

pub mod event;
pub mod ledger;
pub mod publisher;

pub use event::{Event, EventType};
pub use ledger::{Counts, Ledger};
pub use publisher::{ConnectorStatus, PublishError, Publisher, PublisherResult, PublisherSettings};
