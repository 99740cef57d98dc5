//! `indexer.versionType`: external versioning for the bulk backends (OpenSearch,
//! Elasticsearch), where each document carries its version.

use crate::config::{ComponentConfig, ConfigError};

/// `indexer.versionType`: external versioning (the document carries its version).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionType {
    External,
    ExternalGte,
}

impl VersionType {
    pub fn as_str(self) -> &'static str {
        match self {
            VersionType::External => "external",
            VersionType::ExternalGte => "external_gte",
        }
    }

    /// Accepts `external` / `external_gte` and the Java client's `External` / `ExternalGte`.
    pub fn from_config(c: &ComponentConfig, errors: &mut Vec<ConfigError>) -> Option<Self> {
        match c.string("versionType") {
            Ok(None) => None,
            Ok(Some(s)) => match s.to_ascii_lowercase().replace('_', "").as_str() {
                "external" => Some(VersionType::External),
                "externalgte" => Some(VersionType::ExternalGte),
                _ => {
                    errors.push(c.error(
                        "versionType",
                        format!("must be external or external_gte, found {s:?}"),
                    ));
                    None
                }
            },
            Err(e) => {
                errors.push(e);
                None
            }
        }
    }
}
