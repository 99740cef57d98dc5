//! ApplyJSoup: selects elements of an HTML page with CSS selectors and writes their text,
//! an attribute, or their HTML to destination fields.
//!
//! Keys: exactly one of `filePathField` (a field holding the path of an HTML file),
//! `byteArrayField` (a field holding the page as bytes, i.e. base64 text) or `stringField` (a
//! field holding the page as text); `charset` (optional encoding label such as `ISO-8859-1`,
//! for files and bytes); `destinationFields` (required object
//! `{ field: { selector: "css", type: "text" | "attribute" | "html" | "outerHtml",
//! attribute: "href" } }`, `attribute` being required for type attribute).
//!
//! Selectors are CSS (the `scraper` crate, the selectors of browsers), parsed at validation so
//! a bad selector is a config error. For each destination, the matching elements give, in
//! document order: `text`, each element's text with whitespace collapsed (elements without
//! text are left out; block elements and `<br>` separate words, as jsoup's `text()`); `attribute`,
//! the attribute's value on each element that has it; `html`, each element's inner HTML;
//! `outerHtml`, each element's HTML including its own tag. The values replace the destination
//! (a list when several); a selector that finds nothing leaves the destination alone.
//!
//! A file with no `charset` is decoded by its byte-order mark, else a `<meta charset>` in its
//! first 1024 bytes, else as UTF-8; bytes with no `charset` are UTF-8; undecodable bytes become
//! U+FFFD, as in Java. A document without the source field is left unchanged; a file that
//! cannot be read, or a source value of the wrong type, fails the document. A relative file
//! path is relative to the working directory.
//!
//! Differences from Lucille: `html` and `outerHtml` are the HTML as parsed, without jsoup's
//! pretty-printing (indentation and line breaks); jsoup-only selector extensions
//! (`:contains(text)`, `:has()` in older engines, `:eq(n)`, `:matches(regex)`) are not
//! available, and `abs:` attribute prefixes are not resolved.

use std::collections::HashSet;

use encoding_rs::Encoding;
use scraper::{ElementRef, Html, Node, Selector};
use serde_json::{Map, Value};

use super::{Stage, StageDescriptor, StageFailure, StageResult};
use crate::config::{ComponentConfig, ConfigError, ConfigErrors, Options, Spec};
use crate::document::{Document, UpdateMode};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "ApplyJSoup",
    spec: ApplyJSoupOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Selects elements of an HTML page with CSS selectors and writes their text, an attribute,
/// or their HTML to fields.
#[derive(Options)]
#[options(base = Spec::stage())]
struct ApplyJSoupOptions {
    /// A field holding the path of an HTML file (give exactly one of filePathField,
    /// byteArrayField and stringField).
    file_path_field: Option<String>,
    /// A field holding the page as bytes (base64 text).
    byte_array_field: Option<String>,
    /// A field holding the page as text.
    string_field: Option<String>,
    /// The page's encoding for files and bytes, such as ISO-8859-1 (default: a file's
    /// byte-order mark or `<meta charset>`, else UTF-8).
    charset: Option<String>,
    /// Each destination field to `{ selector: "css", type: "text" | "attribute" | "html" |
    /// "outerHtml", attribute: "href" }` (attribute is required for type attribute).
    destination_fields: Map<String, Value>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Input {
    File,
    Bytes,
    Text,
}

enum Extract {
    Text,
    Attribute(String),
    Html,
    OuterHtml,
}

struct Destination {
    field: String,
    selector: Selector,
    extract: Extract,
}

struct ApplyJSoup {
    input: Input,
    field: String,
    charset: Option<&'static Encoding>,
    destinations: Vec<Destination>,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = ApplyJSoupOptions::from_config(config)?;
    let mut errors = Vec::new();
    let sources: Vec<(Input, String)> = [
        (Input::File, o.file_path_field),
        (Input::Bytes, o.byte_array_field),
        (Input::Text, o.string_field),
    ]
    .into_iter()
    .filter_map(|(input, field)| field.map(|f| (input, f)))
    .collect();
    let source = match sources.as_slice() {
        [(input, field)] => Some((*input, field.clone())),
        _ => {
            errors.push(config.error(
                "filePathField",
                "give exactly one of \"filePathField\", \"byteArrayField\" or \"stringField\"",
            ));
            None
        }
    };
    let charset = match &o.charset {
        None => None,
        Some(label) => {
            let encoding = Encoding::for_label(label.trim().as_bytes());
            if encoding.is_none() {
                errors.push(config.error("charset", format!("unknown character set {label:?}")));
            }
            encoding
        }
    };
    let destinations = destinations(config, &o.destination_fields).unwrap_or_else(|e| {
        errors.push(e);
        Vec::new()
    });
    let (Some((input, field)), true) = (source, errors.is_empty()) else {
        return Err(errors.into());
    };
    Ok(Box::new(ApplyJSoup {
        input,
        field,
        charset,
        destinations,
    }))
}

/// The `destinationFields` entries, their selectors parsed.
fn destinations(
    config: &ComponentConfig,
    map: &Map<String, Value>,
) -> Result<Vec<Destination>, ConfigError> {
    if map.is_empty() {
        return Err(config.error("destinationFields", "needs at least one destination"));
    }
    let mut destinations = Vec::new();
    for (field, spec) in map {
        let err = |m: String| config.error("destinationFields", format!("{field:?}: {m}"));
        let Value::Object(spec) = spec else {
            return Err(err(
                "must be an object with \"selector\" and \"type\"".into()
            ));
        };
        let allowed: HashSet<&str> = ["selector", "type", "attribute"].into();
        if let Some(k) = spec.keys().find(|k| !allowed.contains(k.as_str())) {
            return Err(err(format!(
                "unknown key {k:?} (expected selector, type, attribute)"
            )));
        }
        let text = |k: &str| match spec.get(k) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(err(format!("{k:?} must be a string"))),
        };
        let selector_text = text("selector")?.ok_or_else(|| err("needs a \"selector\"".into()))?;
        let selector = Selector::parse(&selector_text)
            .map_err(|e| err(format!("invalid CSS selector {selector_text:?}: {e}")))?;
        let kind = text("type")?.ok_or_else(|| err("needs a \"type\"".into()))?;
        let extract = match kind.as_str() {
            "text" => Extract::Text,
            "html" => Extract::Html,
            "outerHtml" => Extract::OuterHtml,
            "attribute" => Extract::Attribute(
                text("attribute")?
                    .ok_or_else(|| err("type \"attribute\" needs an \"attribute\" name".into()))?,
            ),
            other => {
                return Err(err(format!(
                    "type must be text, attribute, html or outerHtml, found {other:?}"
                )))
            }
        };
        destinations.push(Destination {
            field: field.clone(),
            selector,
            extract,
        });
    }
    Ok(destinations)
}

/// Elements jsoup's `text()` also treats as word boundaries, besides the block elements text
/// extraction breaks lines on (`lucille_extract::BLOCK_ELEMENTS`).
const JSOUP_MORE_BLOCKS: &[&str] = &[
    "body", "caption", "center", "details", "dir", "fieldset", "head", "hgroup", "html", "menu",
    "summary", "tbody", "td", "tfoot", "th", "thead", "title",
];

fn is_block(name: &str) -> bool {
    lucille_extract::BLOCK_ELEMENTS.contains(&name) || JSOUP_MORE_BLOCKS.contains(&name)
}

/// Accumulates text with jsoup's whitespace rules.
struct TextBuilder {
    out: String,
    pending_space: bool,
}

impl TextBuilder {
    fn space(&mut self) {
        self.pending_space = true;
    }
    fn push_normalised(&mut self, text: &str) {
        for c in text.chars() {
            if c.is_whitespace() {
                self.pending_space = true;
            } else {
                self.push_char(c);
            }
        }
    }
    fn push_char(&mut self, c: char) {
        if self.pending_space && !self.out.is_empty() {
            self.out.push(' ');
        }
        self.pending_space = false;
        self.out.push(c);
    }
    fn push_raw(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        if self.pending_space && !self.out.is_empty() {
            self.out.push(' ');
        }
        self.pending_space = false;
        self.out.push_str(text);
    }
}

fn collect_text(el: ElementRef<'_>, pre: bool, acc: &mut TextBuilder) {
    for child in el.children() {
        match child.value() {
            Node::Text(t) if pre => acc.push_raw(t),
            Node::Text(t) => acc.push_normalised(t),
            Node::Element(e) => {
                let name = e.name();
                if matches!(name, "script" | "style" | "template" | "noscript") {
                    continue;
                }
                let block = is_block(name);
                if block {
                    acc.space();
                }
                if let Some(ce) = ElementRef::wrap(child) {
                    collect_text(ce, pre || name == "pre" || name == "textarea", acc);
                }
                if block {
                    acc.space();
                }
            }
            _ => {}
        }
    }
}

/// The element's text as jsoup's `Element.text()`: whitespace collapsed and trimmed.
pub(crate) fn element_text(el: ElementRef<'_>) -> String {
    let mut acc = TextBuilder {
        out: String::new(),
        pending_space: false,
    };
    collect_text(el, el.value().name() == "pre", &mut acc);
    acc.out
}

impl ApplyJSoup {
    fn page(&self, doc: &Document) -> Result<Option<String>, StageFailure> {
        let id = doc.id();
        let field = &self.field;
        match self.input {
            Input::Text => match doc.get_first(field) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(StageFailure::msg(format!(
                    "field {field:?} of document {id:?} must hold HTML text"
                ))),
            },
            Input::Bytes => {
                let Some(bytes) = doc.get_bytes(field)? else {
                    return Ok(None);
                };
                let enc = self.charset.unwrap_or(encoding_rs::UTF_8);
                Ok(Some(enc.decode(&bytes).0.into_owned()))
            }
            Input::File => {
                let Some(path) = doc.get_string(field)? else {
                    return Ok(None);
                };
                let bytes = std::fs::read(&path).map_err(|e| {
                    StageFailure::msg(format!(
                        "cannot read the HTML file {path:?} named by field {field:?} of document {id:?}: {e}"
                    ))
                })?;
                let enc = self
                    .charset
                    .or_else(|| Encoding::for_bom(&bytes).map(|(e, _)| e))
                    .or_else(|| lucille_extract::sniff_meta_charset(&bytes))
                    .unwrap_or(encoding_rs::UTF_8);
                Ok(Some(enc.decode(&bytes).0.into_owned()))
            }
        }
    }
}

impl Stage for ApplyJSoup {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        if !doc.has(&self.field) {
            return Ok(None);
        }
        let Some(page) = self.page(doc)? else {
            return Ok(None);
        };
        let html = Html::parse_document(&page);
        let mut results = Vec::with_capacity(self.destinations.len());
        for d in &self.destinations {
            let selected = html.select(&d.selector);
            let values: Vec<String> = match &d.extract {
                Extract::Text => selected
                    .map(element_text)
                    .filter(|t| !t.is_empty())
                    .collect(),
                Extract::Attribute(a) => selected
                    .filter_map(|e| e.value().attr(a).map(str::to_string))
                    .collect(),
                Extract::Html => selected.map(|e| e.inner_html()).collect(),
                Extract::OuterHtml => selected.map(|e| e.html()).collect(),
            };
            results.push(values);
        }
        for (d, values) in self.destinations.iter().zip(results) {
            doc.update(&d.field, UpdateMode::Overwrite, values)?;
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::stage::testing::{build_err, build_stage, process, process_err};
    use serde_json::json;

    const CSS_HTML: &str = "\n<html>\n  <body>\n    <h1 class=\"class\">content 1</h1>\n    <h2 name=\"name\">content 2</h2>\n    <h3 id=\"id\">content 3</h3>\n    <a href=\"google.com\">link</a> <a>no href</a>\n  </body>\n  <footer>\n    <div>garbage</div>\n  </footer>\n</html>";

    fn css_destinations() -> serde_json::Value {
        json!({"destination1": {"type": "text", "selector": ".class"},
               "destination2": {"type": "text", "selector": "[name=name]"},
               "destination3": {"type": "text", "selector": "#id"},
               "links": {"type": "attribute", "selector": "a", "attribute": "href"}})
    }

    fn temp_file(name: &str, bytes: &[u8]) -> String {
        let dir = std::env::temp_dir().join(format!("lucille-jsoup-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        path.to_string_lossy().into_owned()
    }

    #[test]
    fn css_selectors_from_a_file() {
        let path = temp_file("css.html", CSS_HTML.as_bytes());
        let mut s = build_stage(json!({"class": "ApplyJSoup", "filePathField": "path",
            "destinationFields": css_destinations()}));
        let out = process(
            &mut s,
            json!({"id": "d", "path": path, "destination1": "old"}),
        );
        assert_eq!(out.get("destination1"), Some(&json!("content 1")));
        assert_eq!(out.get("destination2"), Some(&json!("content 2")));
        assert_eq!(out.get("destination3"), Some(&json!("content 3")));
        assert_eq!(
            out.get("links"),
            Some(&json!("google.com")),
            "only elements with the attribute"
        );
        let err = process_err(&mut s, json!({"id": "d", "path": "/no/such/file.html"}));
        assert!(
            err.contains("cannot read") && err.contains("/no/such/file.html"),
            "{err}"
        );
        let out = process(&mut s, json!({"id": "d"}));
        assert_eq!(out.field_count(), 0, "no source field: unchanged");
    }

    #[test]
    fn bytes_with_charsets() {
        use base64::Engine;
        let enc = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
        let mut s = build_stage(json!({"class": "ApplyJSoup", "byteArrayField": "bytes",
            "destinationFields": css_destinations()}));
        let out = process(
            &mut s,
            json!({"id": "d", "bytes": enc(CSS_HTML.as_bytes())}),
        );
        assert_eq!(out.get("destination2"), Some(&json!("content 2")));

        let latin1 = b"<p class=\"class\">caf\xe9</p>";
        let mut s = build_stage(json!({"class": "ApplyJSoup", "byteArrayField": "bytes",
            "charset": "ISO-8859-1", "destinationFields": css_destinations()}));
        let out = process(&mut s, json!({"id": "d", "bytes": enc(latin1)}));
        assert_eq!(out.get("destination1"), Some(&json!("café")));

        // A file names its charset in a meta tag.
        let page = b"<html><head><meta charset=\"windows-1252\"></head><body><p class=\"class\">\x93hi\x94</p></body></html>";
        let path = temp_file("meta.html", page);
        let mut s = build_stage(json!({"class": "ApplyJSoup", "filePathField": "path",
            "destinationFields": css_destinations()}));
        let out = process(&mut s, json!({"id": "d", "path": path}));
        assert_eq!(out.get("destination1"), Some(&json!("\u{201c}hi\u{201d}")));
    }

    #[test]
    fn text_html_and_outer_html() {
        let mut s = build_stage(json!({"class": "ApplyJSoup", "stringField": "string",
            "destinationFields": {
                "texts": {"type": "text", "selector": "div"},
                "inner": {"type": "html", "selector": "div"},
                "outer": {"type": "outerHtml", "selector": "div"},
                "none": {"type": "text", "selector": "table"},
                "whole": {"type": "text", "selector": "body"}}}));
        let html = "<html><div>foo</div><div>bar  <b>baz</b>\n qux</div><div> </div><p>a</p><p>b<br>c</p></html>";
        let out = process(&mut s, json!({"id": "d", "string": html}));
        assert_eq!(out.get("texts"), Some(&json!(["foo", "bar baz qux"])));
        assert_eq!(
            out.get("inner"),
            Some(&json!(["foo", "bar  <b>baz</b>\n qux", " "]))
        );
        assert_eq!(
            out.get("outer"),
            Some(&json!([
                "<div>foo</div>",
                "<div>bar  <b>baz</b>\n qux</div>",
                "<div> </div>"
            ]))
        );
        assert!(!out.has("none"));
        assert_eq!(out.get("whole"), Some(&json!("foo bar baz qux a b c")));
        assert_eq!(out.get("string"), Some(&json!(html)));
        let err = process_err(&mut s, json!({"id": "d", "string": 5}));
        assert!(err.contains("HTML text"), "{err}");
    }

    #[test]
    fn table_cells_and_other_jsoup_blocks_separate_words() {
        // td / th / caption are block elements to jsoup's text() but not line breaks to text
        // extraction: they must still keep words apart here.
        let mut s = build_stage(json!({"class": "ApplyJSoup", "stringField": "string",
            "destinationFields": {"whole": {"type": "text", "selector": "table"}}}));
        let html = "<table><caption>Cap</caption><tr><th>h1</th><th>h2</th></tr>\
                    <tr><td>a</td><td>b</td></tr></table>";
        let out = process(&mut s, json!({"id": "d", "string": html}));
        assert_eq!(out.get("whole"), Some(&json!("Cap h1 h2 a b")));
    }

    #[test]
    fn bad_configs() {
        let dest = json!({"destination": {"type": "text", "selector": "h1"}});
        assert!(
            build_err(json!({"class": "ApplyJSoup", "filePathField": "path"}))
                .contains("destinationFields")
        );
        for sources in [
            json!({"filePathField": "p", "byteArrayField": "b"}),
            json!({"filePathField": "p", "stringField": "s"}),
            json!({"stringField": "s", "byteArrayField": "b"}),
            json!({}),
            json!({"filePathField": "p", "stringField": "s", "byteArrayField": "b"}),
        ] {
            let mut cfg = sources.clone();
            cfg["class"] = json!("ApplyJSoup");
            cfg["destinationFields"] = dest.clone();
            assert!(build_err(cfg).contains("exactly one"), "{sources}");
        }
        for (bad, expect) in [
            (
                json!({"d": {"selector": ".class", "attribute": "href", "random": "x"}}),
                "random",
            ),
            (
                json!({"d": {"type": "attribute", "selector": ".class"}}),
                "attribute",
            ),
            (
                json!({"d": {"type": "attribute", "attribute": "href"}}),
                "selector",
            ),
            (json!({"d": {"selector": "h1"}}), "type"),
            (
                json!({"d": {"type": "words", "selector": "h1"}}),
                "type must be",
            ),
            (
                json!({"d": {"type": "text", "selector": "h1[["}}),
                "invalid CSS selector",
            ),
            (json!({"d": 5}), "must be an object"),
            (json!({"d": ["one", "two"]}), "must be an object"),
            (json!({}), "at least one"),
        ] {
            let err = build_err(json!({"class": "ApplyJSoup", "stringField": "s",
                "destinationFields": bad}));
            assert!(
                err.contains("destinationFields") && err.contains(expect),
                "{err}"
            );
        }
        assert!(build_err(json!({"class": "ApplyJSoup", "stringField": "s",
            "charset": "no-such-charset", "destinationFields": dest}))
        .contains("charset"));
    }
}
