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

use std::sync::Arc;

use super::file::csv::{AsciiChar, CsvHandler, CsvOptions};
use super::file::json::{JsonHandler, JsonOptions};
use super::file::xml::{XmlHandler, XmlOptions};
use super::file::{FileConnector, FileConnectorOptions, FileHandler};
use super::{connector_spec, Common, Connector, ConnectorDescriptor};
use crate::config::{ComponentConfig, ConfigError, ConfigErrors, Options};

pub const CSV_DESCRIPTOR: ConnectorDescriptor = ConnectorDescriptor {
    name: "CSVConnector",
    aliases: &[],
    spec: CsvConnectorOptions::spec,
    build: build_csv,
};
inventory::submit!(CSV_DESCRIPTOR);

pub const JSON_DESCRIPTOR: ConnectorDescriptor = ConnectorDescriptor {
    name: "JSONConnector",
    aliases: &[],
    spec: JsonConnectorOptions::spec,
    build: build_json,
};
inventory::submit!(JSON_DESCRIPTOR);

pub const XML_DESCRIPTOR: ConnectorDescriptor = ConnectorDescriptor {
    name: "XMLConnector",
    aliases: &["com.kmwllc.lucille.connector.xml.XMLConnector"],
    spec: XmlConnectorOptions::spec,
    build: build_xml,
};
inventory::submit!(XML_DESCRIPTOR);

/// Lucille's deprecated CSVConnector: reads one CSV file, the first row its header, each
/// further row a document (the FileConnector's CSV handler, with its keys at the top level).
#[derive(Options)]
#[options(base = connector_spec())]
struct CsvConnectorOptions {
    /// The CSV file to read.
    path: String,
    /// The folder the file is moved to once read.
    move_to_after_processing: Option<String>,
    /// The folder the file is moved to when it could not be read to the end.
    move_to_error_folder: Option<String>,
    /// The field that gets the row's line number.
    #[option(default = "csvLineNumber")]
    line_number_field: String,
    /// The field that gets the file's name.
    #[option(default = "filename")]
    filename_field: String,
    /// The field that gets the file's full path.
    #[option(default = "source")]
    file_path_field: String,
    /// The column whose value is the id (default: the file name and the row number).
    id_field: Option<String>,
    /// How the id column's value makes the id: Java's String.format with %s placeholders.
    doc_id_format: Option<String>,
    /// The character between columns (default `,`; `\t` is a tab).
    separator_char: Option<AsciiChar>,
    /// Columns are separated by tabs (separatorChar is then not used).
    #[option(default)]
    use_tabs: bool,
    /// Quotes are read as quotes; false reads them as text.
    #[option(default = true)]
    interpret_quotes: bool,
    /// No escape character (the default has none either: quotes are doubled as in RFC 4180).
    #[option(default)]
    ignore_escape_char: bool,
    /// Header names are lower-cased.
    #[option(default)]
    lowercase_fields: bool,
    /// Values left out of their row's document (e.g. "NULL").
    #[option(default)]
    ignored_terms: Vec<String>,
}

/// Lucille's deprecated JSONConnector: reads one JSON-lines file, each line a document with
/// its `id` field as the id.
#[derive(Options)]
#[options(base = connector_spec())]
struct JsonConnectorOptions {
    /// The JSON-lines file to read.
    json_path: String,
}

/// Lucille's XMLConnector: reads XML files, each element at `xmlRootPath` a document.
#[derive(Options)]
#[options(base = connector_spec())]
struct XmlConnectorOptions {
    /// The absolute path of the elements that become documents, e.g. "/Company/staff".
    xml_root_path: String,
    /// The absolute path of the element whose text is the id, below xmlRootPath (e.g.
    /// "/Company/staff/id").
    xml_id_path: String,
    /// The files' encoding: only UTF-8 is read.
    encoding: String,
    /// The field that gets the element's XML.
    output_field: String,
    /// The XML files to read (or give urlFiles).
    file_paths: Option<Vec<String>>,
    /// file:// URLs of the XML files to read (or give filePaths); other schemes are not
    /// fetched here.
    url_files: Option<Vec<String>>,
}

/// A FileConnector over `paths` (with the moves), reading every file with `handler`; the
/// handler's problems and the connector's reported together.
fn file_connector(
    config: &ComponentConfig,
    common: &Common,
    options: FileConnectorOptions,
    handler: Result<Arc<dyn FileHandler>, ConfigErrors>,
) -> Result<Box<dyn Connector>, ConfigErrors> {
    match (
        handler,
        FileConnector::from_options(config, common, options),
    ) {
        (Ok(handler), Ok(connector)) => {
            Ok(Box::new(connector.with_handler_for_every_file(handler)))
        }
        (Err(mut a), Err(b)) => {
            a.0.extend(b.0);
            Err(a)
        }
        (Err(e), _) | (_, Err(e)) => Err(e),
    }
}

/// The connector's `docIdPrefix`, which the handler's ids get.
fn prefix(common: &Common) -> String {
    common.doc_id_prefix.clone().unwrap_or_default()
}

fn build_csv(
    config: &ComponentConfig,
    common: &Common,
) -> Result<Box<dyn Connector>, ConfigErrors> {
    let o = CsvConnectorOptions::from_config(config)?;
    let handler = CsvHandler::new(
        CsvOptions {
            doc_id_prefix: None,
            id_field: o.id_field,
            id_fields: None,
            doc_id_format: o.doc_id_format,
            separator_char: o.separator_char,
            use_tabs: o.use_tabs,
            quote_char: None,
            interpret_quotes: o.interpret_quotes,
            escape_char: None,
            ignore_escape_char: o.ignore_escape_char,
            lowercase_fields: o.lowercase_fields,
            ignored_terms: o.ignored_terms,
            line_number_field: o.line_number_field,
            filename_field: o.filename_field,
            file_path_field: o.file_path_field,
        },
        &prefix(common),
    );
    let options = FileConnectorOptions::of_paths(
        vec![o.path],
        o.move_to_after_processing,
        o.move_to_error_folder,
    );
    file_connector(config, common, options, Ok(Arc::new(handler)))
}

fn build_json(
    config: &ComponentConfig,
    common: &Common,
) -> Result<Box<dyn Connector>, ConfigErrors> {
    let o = JsonConnectorOptions::from_config(config)?;
    let handler = JsonHandler::new(config, JsonOptions::default(), &prefix(common))
        .map(|h| Arc::new(h) as Arc<dyn FileHandler>);
    let options = FileConnectorOptions::of_paths(vec![o.json_path], None, None);
    file_connector(config, common, options, handler)
}

fn build_xml(
    config: &ComponentConfig,
    common: &Common,
) -> Result<Box<dyn Connector>, ConfigErrors> {
    let o = XmlConnectorOptions::from_config(config)?;
    let paths = match (o.url_files, o.file_paths) {
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
            .collect::<Result<Vec<_>, ConfigError>>()?,
        (None, Some(files)) => files,
        (None, None) => {
            return Err(config.error(
                "filePaths",
                "XMLConnector needs filePaths (files to read) or urlFiles (file:// URLs)",
            ).into())
        }
    };
    let handler = XmlHandler::new(
        config,
        XmlOptions {
            xml_root_path: o.xml_root_path,
            xml_id_path: Some(o.xml_id_path),
            id_field: None,
            doc_id_prefix: None,
            output_field: o.output_field,
            encoding: Some(o.encoding),
            skip_empty_id: false,
        },
        &prefix(common),
    )
    .map(|h| Arc::new(h) as Arc<dyn FileHandler>);
    let options = FileConnectorOptions::of_paths(paths, None, None);
    file_connector(config, common, options, handler)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CSVConnector's handler keys are the CSV handler's, with the same kinds and defaults.
    #[test]
    fn csv_connector_keys_are_the_csv_handlers() {
        let handler = CsvOptions::spec();
        let mut shared = 0;
        for p in CsvConnectorOptions::spec().properties() {
            if let Some(h) = handler.properties().iter().find(|h| h.name == p.name) {
                assert_eq!(
                    (&p.kind, p.required, p.default),
                    (&h.kind, h.required, h.default),
                    "{}",
                    p.name
                );
                shared += 1;
            }
        }
        // The eleven handler keys, and docIdPrefix (the connector's, which the handler takes).
        assert_eq!(shared, 12);
    }
}
