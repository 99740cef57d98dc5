//! `tikaConfigPath`: Lucille's examples point TextExtractor at a tika-config.xml that only picks
//! Tika's parsers. Such a file is read and accepted when what it asks for is what extraction
//! here does anyway (every supported format on, detection from the content); anything it
//! configures that has no equivalent (parser parameters, excluded types, detectors, ...) is a
//! config error saying so, never silently ignored.

use quick_xml::events::Event;
use quick_xml::Reader;

use crate::config::{ComponentConfig, ConfigError};

/// Tika parsers whose formats are all extracted here (their class names without
/// `org.apache.tika.parser.`).
const COVERED: &[&str] = &[
    "DefaultParser",
    "AutoDetectParser",
    "mail.RFC822Parser",
    "pdf.PDFParser",
    "microsoft.ooxml.OOXMLParser",
    "microsoft.OfficeParser",
    "odf.OpenDocumentParser",
    "html.HtmlParser",
    "html.JSoupParser",
    "rtf.RTFParser",
    "epub.EpubParser",
    "txt.TXTParser",
    "csv.TextAndCSVParser",
];

/// Checks the file `tikaConfigPath` names (`given`, as written).
pub fn check(config: &ComponentConfig, given: &str) -> Result<(), ConfigError> {
    let path = config.paths().resolve_input(given);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        config.error(
            "tikaConfigPath",
            format!("cannot read {}: {e}", path.display()),
        )
    })?;
    let problem = |what: String| {
        config.error(
            "tikaConfigPath",
            format!(
                "{} {what}, which has no equivalent here (there is no Apache Tika: every supported \
                 format is extracted, detected from the content; docs/EXTRACTION.md); remove it, or \
                 the key",
                path.display()
            ),
        )
    };
    let mut reader = Reader::from_str(&text);
    let mut stack: Vec<String> = Vec::new();
    loop {
        let event = reader
            .read_event()
            .map_err(|e| config.error("tikaConfigPath", format!("{}: {e}", path.display())))?;
        let (start, empty) = match &event {
            Event::Start(e) => (Some(e.clone()), false),
            Event::Empty(e) => (Some(e.clone()), true),
            Event::End(_) => {
                stack.pop();
                continue;
            }
            Event::Eof => break,
            _ => continue,
        };
        let Some(e) = start else { continue };
        let name = String::from_utf8_lossy(e.name().as_ref()).into_owned();
        let at: Vec<&str> = stack.iter().map(String::as_str).collect();
        match (at.as_slice(), name.as_str()) {
            ([], "properties") | (["properties"], "parsers") => {}
            (["properties", "parsers"], "parser") => {
                let class = e
                    .attributes()
                    .flatten()
                    .find(|a| a.key.as_ref() == b"class")
                    .map(|a| String::from_utf8_lossy(&a.value).into_owned())
                    .unwrap_or_default();
                let short = class
                    .strip_prefix("org.apache.tika.parser.")
                    .unwrap_or(&class);
                if !COVERED.contains(&short) {
                    return Err(problem(format!("selects the parser {class:?}")));
                }
                if !empty {
                    return Err(problem(format!("configures the parser {class:?}")));
                }
            }
            _ => return Err(problem(format!("has <{name}>"))),
        }
        if !empty {
            stack.push(name);
        }
    }
    tracing::info!(
        "tikaConfigPath {}: its parsers are all covered here; every supported format is extracted",
        path.display()
    );
    Ok(())
}
