//! SequenceConnector: publishes `numDocs` empty documents with ids `startWith`,
//! `startWith + 1`, ... (with `docIdPrefix`), as Lucille's; for tests and benchmarks.

use std::sync::Arc;

use super::{connector_spec, Common, Connector, ConnectorDescriptor, ConnectorError};
use crate::accounting::Publisher;
use crate::config::{ComponentConfig, ConfigError, Kind, Spec};
use crate::document::Document;

pub const DESCRIPTOR: ConnectorDescriptor = ConnectorDescriptor {
    name: "SequenceConnector",
    aliases: &[],
    spec,
    build,
};
inventory::submit!(DESCRIPTOR);

fn spec() -> Spec {
    connector_spec()
        .required("numDocs", Kind::Integer)
        .optional("startWith", Kind::Integer)
}

struct SequenceConnector {
    common: Common,
    num_docs: u64,
    start_with: i64,
}

fn build(config: &ComponentConfig, common: &Common) -> Result<Box<dyn Connector>, ConfigError> {
    let num_docs = config.require_i64("numDocs")?;
    let num_docs =
        u64::try_from(num_docs).map_err(|_| config.error("numDocs", "must not be negative"))?;
    Ok(Box::new(SequenceConnector {
        common: common.clone(),
        num_docs,
        start_with: config.i64("startWith")?.unwrap_or(0),
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
