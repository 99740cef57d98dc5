//! Lifecycle events: workers and the indexer tell the Publisher what became of each
//! document. The run id is shared (`Arc<str>`) so an event costs one allocation, its doc id.

use std::fmt;
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    /// A stage generated this child; start tracking it.
    Create,
    /// Indexed (terminal).
    Finish,
    /// Failed in a stage or rejected by the backend (terminal).
    Fail,
    /// Dropped by a stage (terminal).
    Drop,
}

impl EventType {
    pub fn is_terminal(self) -> bool {
        !matches!(self, EventType::Create)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Create => "CREATE",
            EventType::Finish => "FINISH",
            EventType::Fail => "FAIL",
            EventType::Drop => "DROP",
        }
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which emission of a document an event is about, where messages can be replayed (Kafka):
/// the source message the document came from and, for a child, the how-many-th emission of
/// its id while that message was processed (0: the source document itself). A replayed
/// message produces the same origins again, so the Publisher counts each once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Origin {
    pub partition: i32,
    pub offset: i64,
    pub ordinal: u32,
}

impl Origin {
    /// `partition:offset:ordinal`, as carried in event JSON and message headers.
    pub fn parse(s: &str) -> Option<Origin> {
        let mut parts = s.split(':');
        let o = Origin {
            partition: parts.next()?.parse().ok()?,
            offset: parts.next()?.parse().ok()?,
            ordinal: parts.next()?.parse().ok()?,
        };
        parts.next().is_none().then_some(o)
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.partition, self.offset, self.ordinal)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub doc_id: String,
    pub run_id: Arc<str>,
    pub kind: EventType,
    pub message: Option<String>,
    /// Set where events can be replayed (see [`Origin`]); `None` locally.
    pub origin: Option<Origin>,
}

impl Event {
    pub fn new(doc_id: impl Into<String>, run_id: Arc<str>, kind: EventType) -> Self {
        Event {
            doc_id: doc_id.into(),
            run_id,
            kind,
            message: None,
            origin: None,
        }
    }

    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} (run {})", self.kind, self.doc_id, self.run_id)?;
        if let Some(m) = &self.message {
            write!(f, ": {m}")?;
        }
        Ok(())
    }
}
