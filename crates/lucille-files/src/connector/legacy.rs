//! Lucille's deprecated single-format connectors, run as the FileConnector with the matching
//! handler reading every file named, whatever its extension, and with their old keys:
//!
//! - `CSVConnector`: `path` (one file), `moveToAfterProcessing`, `moveToErrorFolder`, and the CSV
//!   handler's keys at the connector's top level (`idField`, `docIdFormat`, `separatorChar`,
//!   `useTabs`, `interpretQuotes`, `ignoreEscapeChar`, `lowercaseFields`, `ignoredTerms`,
//!   `lineNumberField`, `filenameField`, `filePathField`).
//! - `JSONConnector`: `jsonPath` (one JSON-lines file).
//! - `XMLConnector` (`com.kmwllc.lucille.connector.xml.XMLConnector`): `filePaths` or `urlFiles`
//!   (`file://` URLs; other schemes are not fetched here) with `xmlRootPath`, `xmlIdPath`,
//!   `encoding` and `outputField`, all four required as in Lucille.

use serde_json::{json, Map, Value};

use super::file::{build_handler, FileConnector};
use super::{connector_spec, Common, Connector, ConnectorDescriptor};
use crate::config::{ComponentConfig, ConfigError, ConfigErrors, Kind, Spec};

pub const CSV_DESCRIPTOR: ConnectorDescriptor = ConnectorDescriptor {
    name: "CSVConnector",
    aliases: &[],
    spec: csv_spec,
    build: build_csv,
};
inventory::submit!(CSV_DESCRIPTOR);

pub const JSON_DESCRIPTOR: ConnectorDescriptor = ConnectorDescriptor {
    name: "JSONConnector",
    aliases: &[],
    spec: json_spec,
    build: build_json,
};
inventory::submit!(JSON_DESCRIPTOR);

pub const XML_DESCRIPTOR: ConnectorDescriptor = ConnectorDescriptor {
    name: "XMLConnector",
    aliases: &["com.kmwllc.lucille.connector.xml.XMLConnector"],
    spec: xml_spec,
    build: build_xml,
};
inventory::submit!(XML_DESCRIPTOR);

/// The keys every connector has, which stay with the connector rather than the handler.
const CONNECTOR_KEYS: [&str; 5] = ["name", "class", "pipeline", "collapse", "docIdPrefix"];

fn csv_spec() -> Spec {
    connector_spec()
        .required("path", Kind::String)
        .optional("moveToAfterProcessing", Kind::String)
        .optional("moveToErrorFolder", Kind::String)
        .optional("lineNumberField", Kind::String)
        .optional("filenameField", Kind::String)
        .optional("filePathField", Kind::String)
        .optional("idField", Kind::String)
        .optional("docIdFormat", Kind::String)
        .optional("separatorChar", Kind::String)
        .optional("useTabs", Kind::Bool)
        .optional("interpretQuotes", Kind::Bool)
        .optional("ignoreEscapeChar", Kind::Bool)
        .optional("lowercaseFields", Kind::Bool)
        .optional("ignoredTerms", Kind::StringList)
}

fn json_spec() -> Spec {
    connector_spec().required("jsonPath", Kind::String)
}

fn xml_spec() -> Spec {
    connector_spec()
        .required("xmlRootPath", Kind::String)
        .required("xmlIdPath", Kind::String)
        .required("encoding", Kind::String)
        .required("outputField", Kind::String)
        .optional("filePaths", Kind::StringList)
        .optional("urlFiles", Kind::StringList)
}

/// The connector's keys other than the common ones and `moved`: the handler's block.
fn handler_block(config: &ComponentConfig, moved: &[&str]) -> Map<String, Value> {
    config
        .map()
        .iter()
        .filter(|(k, _)| !CONNECTOR_KEYS.contains(&k.as_str()) && !moved.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// A FileConnector over `paths`, reading every file with the `kind` handler built from
/// `handler` (errors name the connector's own keys, as the user wrote them).
fn file_connector(
    config: &ComponentConfig,
    common: &Common,
    paths: Vec<String>,
    mut extra: Map<String, Value>,
    kind: &str,
    handler: Map<String, Value>,
) -> Result<Box<dyn Connector>, ConfigErrors> {
    let prefix = common.doc_id_prefix.clone().unwrap_or_default();
    let handler_config =
        ComponentConfig::new(handler, config.path()).with_paths(config.paths().clone());
    let handler = build_handler(kind, &handler_config, &prefix)
        .map_err(|errors| ConfigError::joined(config.path(), errors))?;
    extra.insert("paths".into(), json!(paths));
    let file_config = ComponentConfig::new(extra, config.path()).with_paths(config.paths().clone());
    let connector = FileConnector::from_config(&file_config, common)?;
    Ok(Box::new(connector.with_handler_for_every_file(handler)))
}

fn build_csv(
    config: &ComponentConfig,
    common: &Common,
) -> Result<Box<dyn Connector>, ConfigErrors> {
    let moved = ["path", "moveToAfterProcessing", "moveToErrorFolder"];
    let path = config.require_string("path")?;
    let mut extra = Map::new();
    for key in &moved[1..] {
        if let Some(v) = config.map().get(*key) {
            extra.insert((*key).to_string(), v.clone());
        }
    }
    file_connector(
        config,
        common,
        vec![path],
        extra,
        "csv",
        handler_block(config, &moved),
    )
}

fn build_json(
    config: &ComponentConfig,
    common: &Common,
) -> Result<Box<dyn Connector>, ConfigErrors> {
    let path = config.require_string("jsonPath")?;
    file_connector(config, common, vec![path], Map::new(), "json", Map::new())
}

fn build_xml(
    config: &ComponentConfig,
    common: &Common,
) -> Result<Box<dyn Connector>, ConfigErrors> {
    let moved = ["filePaths", "urlFiles"];
    let files = config.string_list("filePaths")?;
    let urls = config.string_list("urlFiles")?;
    let paths = match (urls, files) {
        // Lucille would read urlFiles and ignore filePaths.
        (Some(_), Some(_)) => {
            return Err(config.error(
                "filePaths",
                "give filePaths or urlFiles, not both (Lucille reads only urlFiles then)",
            ).into())
        }
        (Some(urls), None) => urls
            .iter()
            .map(|u| match u.strip_prefix("file://") {
                Some(p) => Ok(p.to_string()),
                None if u.contains("://") => Err(config.error(
                    "urlFiles",
                    format!("{u:?}: only file:// URLs are read here; download the file and list it in filePaths"),
                )),
                None => Ok(u.clone()),
            })
            .collect::<Result<Vec<_>, _>>()?,
        (None, Some(files)) => files,
        (None, None) => {
            return Err(config.error(
                "filePaths",
                "XMLConnector needs filePaths (files to read) or urlFiles (file:// URLs)",
            ).into())
        }
    };
    file_connector(
        config,
        common,
        paths,
        Map::new(),
        "xml",
        handler_block(config, &moved),
    )
}
