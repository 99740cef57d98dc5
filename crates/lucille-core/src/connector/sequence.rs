//! SequenceConnector: publishes `numDocs` empty documents with ids `startWith`,
//! `startWith + 1`, ... (with `docIdPrefix`), as Lucille's; for tests and benchmarks.

use std::sync::Arc;

use super::{connector_spec, Common, Connector, ConnectorDescriptor, ConnectorError};
use crate::accounting::Publisher;
use crate::config::{ComponentConfig, ConfigErrors, Options};
use crate::document::Document;

pub const DESCRIPTOR: ConnectorDescriptor = ConnectorDescriptor {
    name: "SequenceConnector",
    aliases: &[],
    spec: SequenceOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Publishes `numDocs` empty documents with ids counting up from `startWith` (after
/// `docIdPrefix`), for tests and benchmarks.
#[derive(Options)]
#[options(base = connector_spec())]
struct SequenceOptions {
    /// How many documents to publish.
    #[option(min = 0)]
    num_docs: i64,
    /// The number in the first document's id.
    #[option(default = 0)]
    start_with: i64,
}

struct SequenceConnector {
    common: Common,
    num_docs: u64,
    start_with: i64,
}

fn build(config: &ComponentConfig, common: &Common) -> Result<Box<dyn Connector>, ConfigErrors> {
    let o = SequenceOptions::from_config(config)?;
    Ok(Box::new(SequenceConnector {
        common: common.clone(),
        // Not negative: checked by its `min`.
        num_docs: o.num_docs.unsigned_abs(),
        start_with: o.start_with,
    }))
}

impl Connector for SequenceConnector {
    fn execute(&mut self, publisher: &Arc<Publisher>) -> Result<(), ConnectorError> {
        for (n, _) in (self.start_with..).zip(0..self.num_docs) {
            let doc = Document::new(self.common.doc_id(&n.to_string()))
                .map_err(|e| ConnectorError::new(e.to_string()))?;
            publisher.publish(doc)?;
        }
        Ok(())
    }
}
