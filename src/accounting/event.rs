//! Lifecycle events (spec §4): workers and the indexer tell the Publisher what became of each
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

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub doc_id: String,
    pub run_id: Arc<str>,
    pub kind: EventType,
    pub message: Option<String>,
}

impl Event {
    pub fn new(doc_id: impl Into<String>, run_id: Arc<str>, kind: EventType) -> Self {
        Event {
            doc_id: doc_id.into(),
            run_id,
            kind,
            message: None,
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
