//! What a config can name, described: `lucille doc CLASS` prints a stage's or a connector's
//! options as its options type declares them (summary, then each key's kind, default, range
//! and description).

use crate::config::options::describe as describe_spec;
use crate::connector::ConnectorDescriptor;
use crate::registry;
use crate::stage::StageDescriptor;

/// A class that names no stage or connector.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no stage or connector named {class:?}{hint}")]
pub struct UnknownClass {
    pub class: String,
    hint: String,
}

/// The documentation of the stage or connector `class` names (its name, Lucille's class name
/// or an alias).
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
    let hint = registry::suggest::<StageDescriptor>(class)
        .or_else(|| registry::suggest::<ConnectorDescriptor>(class))
        .map(|n| format!(" (did you mean {n:?}?)"))
        .unwrap_or_default();
    Err(UnknownClass {
        class: class.to_string(),
        hint,
    })
}
