//! What travels from the workers to the indexer: an operation for the backend ([`IndexOp`]),
//! prepared on a worker ([`PreparedOp`], with the backend's encoding), or a document the
//! indexer still has to turn into one ([`ToIndex`]). Below both the indexer loop and the
//! messaging that carries them.

use std::any::Any;

use crate::document::{Document, Fields};

/// One operation for the backend, in the order the documents arrived.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub enum IndexOp {
    Upsert {
        /// The id in the index (`idOverrideField` applied).
        id: String,
        /// The destination index (`indexOverrideField`), if overridden.
        index: Option<String>,
        /// The document's fields, filtered, without reserved fields.
        fields: Fields,
        /// The attached child documents (Lucille's `___children`), in order: each child's `id`
        /// first (always; a backend that stores ids drops it when the whitelist / blacklist
        /// drop `id`, as it does the document's), its other fields filtered as the document's
        /// are, then its own children as `___children` (the same way), if any.
        /// Reserved fields other than those two are left out. What a backend does with them is
        /// its [`ChildDocuments`](crate::indexer::ChildDocuments); an encoder reads them but
        /// leaves them in the op, where the indexer counts what the backend drops. Empty for
        /// most documents; left out of the op's hash when empty, so hashes of documents
        /// without children do not change.
        #[serde(skip_serializing_if = "Children::is_empty")]
        children: Children,
        /// The routing key (`indexer.routingField`), if configured and present.
        routing: Option<String>,
        /// The external version's text (`indexer.versionField`), if configured and present;
        /// a backend that uses it FAILs the document when it is not an integer.
        version: Option<String>,
    },
    DeleteById {
        id: String,
        index: Option<String>,
        routing: Option<String>,
        version: Option<String>,
    },
    /// Delete every indexed document whose `field` equals `value`.
    DeleteByField {
        field: String,
        value: String,
        index: Option<String>,
    },
}

/// An upsert's attached child documents (see [`IndexOp::Upsert`]), read as a slice: one
/// pointer, null for the documents without children (most), so an op is barely bigger for
/// carrying them.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
#[serde(transparent)]
// The box is the point: a `Vec` is three words in every op on the destination queue, where
// a document with children (the rare case) can pay the one extra allocation.
#[allow(clippy::box_collection)]
pub struct Children(Option<Box<Vec<Fields>>>);

impl Children {
    pub fn is_empty(&self) -> bool {
        self.0.as_ref().is_none_or(|c| c.is_empty())
    }

    /// The children, moved out.
    pub fn into_vec(self) -> Vec<Fields> {
        self.0.map(|c| *c).unwrap_or_default()
    }
}

impl From<Vec<Fields>> for Children {
    fn from(children: Vec<Fields>) -> Self {
        Children((!children.is_empty()).then(|| Box::new(children)))
    }
}

impl std::ops::Deref for Children {
    type Target = [Fields];

    fn deref(&self) -> &[Fields] {
        self.0.as_deref().map_or(&[], Vec::as_slice)
    }
}

/// A backend's encoding of one operation, made on a worker thread; only the backend that
/// made it reads it (each downcasts to its own type).
pub type Encoded = Box<dyn Any + Send>;

/// Takes `encoded[i]` as the backend's own type `T` (`None` where the op was not encoded).
pub fn take_encoded<T: 'static>(encoded: &mut [Option<Encoded>], i: usize) -> Option<T> {
    encoded
        .get_mut(i)
        .and_then(Option::take)
        .and_then(|e| e.downcast::<T>().ok())
        .map(|b| *b)
}

/// Why an operation could not be encoded for the backend: its document FAILs with it and
/// never reaches the backend. It holds the backend's own error (`EncodeError::from(e)`), or a
/// reason in words (`"...".into()`).
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct EncodeError(Box<dyn std::error::Error + Send + Sync>);

impl EncodeError {
    pub fn new(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        EncodeError(error.into())
    }
}

impl From<String> for EncodeError {
    fn from(reason: String) -> Self {
        EncodeError::new(reason)
    }
}

impl From<&str> for EncodeError {
    fn from(reason: &str) -> Self {
        EncodeError::new(reason)
    }
}

/// An operation a worker prepared.
pub struct PreparedOp {
    /// The document's id (its FINISH / FAIL event names it; the op's id may be overridden).
    pub doc_id: String,
    pub op: IndexOp,
    pub encoded: Result<Option<Encoded>, EncodeError>,
    /// The document's JSON size when `indexer.batchByteSize` is set, else 0.
    pub bytes: u64,
    /// `skipUnchanged: "output"`: the hash of what the op sends, taken before encoding (which
    /// may move the fields out of the op).
    pub output_hash: Option<crate::unchanged::Hash>,
}

impl IndexOp {
    /// The hash of what an upsert sends (`skipUnchanged: "output"`); `None` for deletes, which
    /// are always sent.
    pub fn content_hash(&self) -> Option<crate::unchanged::Hash> {
        matches!(self, IndexOp::Upsert { .. }).then(|| crate::unchanged::json_hash(self))
    }
}

/// What the destination queue carries.
pub enum ToIndex {
    /// A processed document; the indexer builds (and encodes) its operation.
    Doc(Document),
    /// An operation prepared on a worker.
    Op(PreparedOp),
}

impl From<Document> for ToIndex {
    fn from(doc: Document) -> Self {
        ToIndex::Doc(doc)
    }
}

impl ToIndex {
    /// The document's id.
    pub fn id(&self) -> &str {
        match self {
            ToIndex::Doc(d) => d.id(),
            ToIndex::Op(p) => &p.doc_id,
        }
    }

    /// The document, when it still travels whole.
    pub fn document(&self) -> Option<&Document> {
        match self {
            ToIndex::Doc(d) => Some(d),
            ToIndex::Op(_) => None,
        }
    }
}
