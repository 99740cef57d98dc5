//! What a config can name, described: `lucille doc CLASS` prints a stage's, a connector's or an
//! indexer backend's options as its options type declares them (summary, then each key's kind,
//! default, range and description); `lucille doc indexer` prints the generic `indexer` block's.

use crate::config::options::describe as describe_spec;
use crate::connector::ConnectorDescriptor;
use crate::indexer::{indexer_spec, IndexerDescriptor};
use crate::registry;
use crate::stage::StageDescriptor;

/// The name `lucille doc` takes for the generic `indexer { }` block.
pub const INDEXER_BLOCK: &str = "indexer";

/// A class that names no stage, connector or indexer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no stage, connector or indexer named {class:?}{hint}")]
pub struct UnknownClass {
    pub class: String,
    hint: String,
}

/// The documentation of the stage, connector or indexer backend `class` names (its name,
/// Lucille's class name or an alias; a backend by its `indexer.type`), or of the `indexer`
/// block itself.
pub fn describe(class: &str) -> Result<String, UnknownClass> {
    if let Some(d) = registry::find::<StageDescriptor>(class) {
        return Ok(describe_spec(&format!("{} (stage)", d.name), &(d.spec)()));
    }
    if let Some(d) = registry::find::<ConnectorDescriptor>(class) {
        return Ok(describe_spec(
            &format!("{} (connector)", d.name),
            &(d.spec)(),
        ));
    }
    if class.trim() == INDEXER_BLOCK {
        return Ok(describe_spec(
            "indexer (the indexer block)",
            &indexer_spec(),
        ));
    }
    if let Some(d) = registry::find::<IndexerDescriptor>(class) {
        return Ok(describe_spec(&format!("{} (indexer)", d.name), &(d.spec)()));
    }
    let hint = registry::suggest::<StageDescriptor>(class)
        .or_else(|| registry::suggest::<ConnectorDescriptor>(class))
        .or_else(|| registry::suggest::<IndexerDescriptor>(class))
        .map(|n| format!(" (did you mean {n:?}?)"))
        .unwrap_or_default();
    Err(UnknownClass {
        class: class.to_string(),
        hint,
    })
}

#[cfg(test)]
mod tests {
    use super::describe;

    #[test]
    fn an_indexer_backend_and_the_indexer_block_are_described() {
        let nop = describe("nop").unwrap();
        assert!(
            nop.starts_with("nop (indexer)\n  Accepts every document"),
            "{nop}"
        );
        // Lucille's class name finds the backend too.
        assert_eq!(
            describe("com.kmwllc.lucille.indexer.NopIndexer").unwrap(),
            nop
        );
        let block = describe("indexer").unwrap();
        assert!(
            block.starts_with("indexer (the indexer block)\n  How processed documents reach"),
            "{block}"
        );
        for line in [
            "  type (a string): The backend by its name (nop, the default;",
            "  batchSize (an integer), at least 1: The most documents in a batch",
            "  batchTimeout (an integer), default 100, at least 0: Milliseconds",
            "  sendEnabled (a boolean), default true: ",
        ] {
            assert!(block.contains(line), "{line} missing in:\n{block}");
        }
        let e = describe("nopp").unwrap_err().to_string();
        assert_eq!(
            e,
            "no stage, connector or indexer named \"nopp\" (did you mean \"nop\"?)"
        );
    }
}
