//! Accounting: the ledger, and the Publisher that knows when a run is complete, from the
//! lifecycle events ([`crate::event`]) that come back.

pub mod ledger;
pub mod publisher;

pub use crate::event::{Event, EventType};
pub use ledger::{Counts, Ledger};
pub use publisher::{ConnectorStatus, PublishError, Publisher, PublisherResult, PublisherSettings};
