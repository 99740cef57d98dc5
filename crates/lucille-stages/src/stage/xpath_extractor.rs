//! XPathExtractor: evaluates XPath expressions over XML held in a field and writes the results
//! to document fields.
//!
//! Keys: `fieldMapping` (required object `{ "xpath": [field, ...] }`; a single field name is
//! accepted too), `xmlField` (default `xml`).
//!
//! Expressions are XPath 1.0 (`sxd-xpath`), checked at validation so a bad expression is a
//! config error naming `fieldMapping`. A node-set result writes the text content of every node,
//! in document order; a string, number or boolean result (`count(//book)`) writes its XPath
//! string form. Each value is added to every field mapped to the expression (set if absent,
//! appended otherwise, as Lucille's `setOrAdd`). Only the first value of `xmlField` is read; a
//! missing or null field is skipped.
//!
//! Differences from Lucille: XML that does not parse fails the document with the parser's
//! message (Lucille logs an error and passes the document on); non-node-set results are
//! written rather than rejected. Expressions are re-parsed for each document, because compiled
//! `sxd-xpath` expressions cannot move between threads (parsing one costs microseconds, far
//! less than parsing the XML).

use serde_json::{Map, Value as Json};
use sxd_xpath::{Context, Factory, Value, XPath};

use super::{Stage, StageDescriptor, StageFailure, StageResult};
use crate::config::{as_string, ComponentConfig, ConfigErrors, Options, Spec};
use crate::document::Document;

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "XPathExtractor",
    spec: XPathExtractorOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Evaluates XPath 1.0 expressions over XML held in a field and writes the results to document
/// fields.
#[derive(Options)]
#[options(base = Spec::stage())]
struct XPathExtractorOptions {
    /// `{ "xpath": [field, ...] }`: each expression's results go to its fields (a single field
    /// name is accepted too).
    field_mapping: Map<String, Json>,
    /// The field holding the XML.
    #[option(default = "xml")]
    xml_field: String,
}

struct XPathExtractor {
    mapping: Vec<(String, Vec<String>)>,
    xml_field: String,
}

/// An expression that is not an XPath.
#[derive(Debug, thiserror::Error)]
enum BadXPath {
    #[error("XPath {0:?} is empty")]
    Empty(String),
    #[error("invalid XPath {expr:?}: {source}")]
    Invalid {
        expr: String,
        source: sxd_xpath::ParserError,
    },
}

fn compile(expr: &str) -> Result<XPath, BadXPath> {
    match Factory::new().build(expr) {
        Ok(Some(x)) => Ok(x),
        Ok(None) => Err(BadXPath::Empty(expr.to_string())),
        Err(source) => Err(BadXPath::Invalid {
            expr: expr.to_string(),
            source,
        }),
    }
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = XPathExtractorOptions::from_config(config)?;
    if o.field_mapping.is_empty() {
        return Err(config
            .error("fieldMapping", "needs at least one expression")
            .into());
    }
    let mut mapping = Vec::new();
    let mut errors = Vec::new();
    for (expr, fields) in o.field_mapping {
        if let Err(e) = compile(&expr) {
            errors.push(config.error("fieldMapping", e.to_string()));
            continue;
        }
        let fields: Option<Vec<String>> = match &fields {
            Json::Array(items) => items.iter().map(as_string).collect(),
            other => as_string(other).map(|f| vec![f]),
        };
        match fields.filter(|f| !f.is_empty()) {
            Some(fields) => mapping.push((expr, fields)),
            None => errors.push(config.error(
                "fieldMapping",
                format!(
                    "the fields for {expr:?} must be a field name or a non-empty list of names"
                ),
            )),
        }
    }
    if !errors.is_empty() {
        return Err(errors.into());
    }
    Ok(Box::new(XPathExtractor {
        mapping,
        xml_field: o.xml_field,
    }))
}

impl Stage for XPathExtractor {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        let xml = match doc.get_first(&self.xml_field) {
            None | Some(Json::Null) => return Ok(None),
            Some(Json::String(s)) => s.clone(),
            Some(_) => {
                return Err(StageFailure::msg(format!(
                    "field {:?} of document {:?} must hold XML text",
                    self.xml_field,
                    doc.id()
                )))
            }
        };
        let package = sxd_document::parser::parse(&xml).map_err(|e| {
            StageFailure::msg(format!(
                "field {:?} of document {:?} is not well-formed XML: {e}",
                self.xml_field,
                doc.id()
            ))
        })?;
        let xml_doc = package.as_document();
        let context = Context::new();
        let mut results = Vec::with_capacity(self.mapping.len());
        for (expr, _) in &self.mapping {
            let xpath = compile(expr).map_err(|e| StageFailure::msg(e.to_string()))?;
            let value = xpath.evaluate(&context, xml_doc.root()).map_err(|e| {
                StageFailure::msg(format!(
                    "XPath {expr:?} failed on document {:?}: {e}",
                    doc.id()
                ))
            })?;
            let texts: Vec<String> = match value {
                Value::Nodeset(nodes) => nodes
                    .document_order()
                    .iter()
                    .map(|n| n.string_value())
                    .collect(),
                other => vec![other.string()],
            };
            results.push(texts);
        }
        for ((_, fields), texts) in self.mapping.iter().zip(results) {
            for field in fields {
                for t in &texts {
                    doc.set_or_add(field, t.as_str())?;
                }
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::stage::testing::{build_err, build_stage, process, process_err};
    use serde_json::json;

    const BOOKS: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<bookstore>\n<book>\n  <title lang=\"en\">Harry Potter</title>\n  <price>29.99</price>\n</book>\n<book>\n  <title lang=\"en\">해리 포터 <b>2</b></title>\n  <price>39.95</price>\n</book>\n<book><title lang=\"fr\">Le Livre</title></book>\n</bookstore>";

    #[test]
    fn extracts_node_text_into_every_mapped_field() {
        let mut s = build_stage(json!({"class": "XPathExtractor",
            "fieldMapping": {"//title[@lang='en']": ["output1", "output2"], "//book/price": "prices"}}));
        let out = process(&mut s, json!({"id": "d", "xml": BOOKS}));
        assert_eq!(
            out.get("output1"),
            Some(&json!(["Harry Potter", "해리 포터 2"]))
        );
        assert_eq!(
            out.get("output2"),
            Some(&json!(["Harry Potter", "해리 포터 2"]))
        );
        assert_eq!(out.get("prices"), Some(&json!(["29.99", "39.95"])));
    }

    #[test]
    fn other_xml_field_scalar_results_and_appending() {
        let mut s = build_stage(json!({"class": "XPathExtractor", "xmlField": "random",
            "fieldMapping": {"count(//book)": ["n"], "//title[@lang='fr']/@lang": ["lang"],
                             "//nothing": ["none"]}}));
        let out = process(&mut s, json!({"id": "d", "random": BOOKS, "n": "0"}));
        assert_eq!(out.get("n"), Some(&json!(["0", "3"])));
        assert_eq!(out.get("lang"), Some(&json!("fr")));
        assert!(!out.has("none"));
        let out = process(&mut s, json!({"id": "d", "xml": BOOKS}));
        assert!(!out.has("n"), "missing xmlField: skipped");
    }

    #[test]
    fn bad_xml_fails_the_document() {
        let mut s = build_stage(json!({"class": "XPathExtractor", "fieldMapping": {"//a": ["a"]}}));
        let err = process_err(&mut s, json!({"id": "d", "xml": "<a><b></a>"}));
        assert!(
            err.contains("not well-formed XML") && err.contains("\"xml\""),
            "{err}"
        );
        let err = process_err(&mut s, json!({"id": "d", "xml": {"a": 1}}));
        assert!(err.contains("XML text"), "{err}");
    }

    #[test]
    fn bad_configs() {
        assert!(build_err(json!({"class": "XPathExtractor"})).contains("fieldMapping"));
        assert!(
            build_err(json!({"class": "XPathExtractor", "fieldMapping": {"//a[": ["a"]}}))
                .contains("invalid XPath")
        );
        assert!(
            build_err(json!({"class": "XPathExtractor", "fieldMapping": {"//a": []}}))
                .contains("non-empty list")
        );
        assert!(
            build_err(json!({"class": "XPathExtractor", "fieldMapping": {}}))
                .contains("at least one")
        );
        assert!(build_err(
            json!({"class": "XPathExtractor", "fieldMapping": {"//a": ["a"]},
            "xmlField": ["x"]})
        )
        .contains("xmlField"));
    }
}
