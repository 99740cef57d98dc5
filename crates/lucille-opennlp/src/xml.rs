//! A small element tree over quick-xml for the two XML artifacts a model may carry (the
//! feature-generator descriptor, the abbreviation dictionary); both are a few kilobytes.

use quick_xml::events::{BytesRef, Event};
use quick_xml::Reader;

/// An element: its name, attributes, and children (elements and text, in order).
#[derive(Debug, Clone, Default)]
pub(crate) struct Element {
    pub name: String,
    pub attributes: Vec<(String, String)>,
    pub children: Vec<Node>,
}

#[derive(Debug, Clone)]
pub(crate) enum Node {
    Element(Element),
    Text(String),
}

impl Element {
    /// An attribute's value, "" when absent (as DOM's `getAttribute`).
    pub fn attribute(&self, name: &str) -> &str {
        self.attributes
            .iter()
            .find(|(k, _)| k == name)
            .map_or("", |(_, v)| v.as_str())
    }

    pub fn elements(&self) -> impl Iterator<Item = &Element> {
        self.children.iter().filter_map(|c| match c {
            Node::Element(e) => Some(e),
            Node::Text(_) => None,
        })
    }

    /// All the text inside the element.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for c in &self.children {
            match c {
                Node::Text(t) => out.push_str(t),
                Node::Element(e) => out.push_str(&e.text()),
            }
        }
        out
    }
}

fn entity(r: &BytesRef<'_>) -> Option<String> {
    if let Ok(Some(c)) = r.resolve_char_ref() {
        return Some(c.to_string());
    }
    let name = r.decode().ok()?;
    quick_xml::escape::resolve_xml_entity(&name).map(str::to_string)
}

/// Why an XML artifact could not be read into an element tree.
#[derive(Debug, thiserror::Error)]
pub(crate) enum XmlError {
    /// Not well-formed XML, or an attribute, text or entity quick-xml cannot read.
    #[error("{source} (at byte {position})")]
    Read {
        #[source]
        source: quick_xml::Error,
        /// Where the reader stopped.
        position: u64,
    },
    /// An end tag with no element open.
    #[error("unbalanced end tag at byte {0}")]
    UnbalancedEnd(u64),
    /// An `&name;` that is neither a character reference nor one of XML's five entities.
    #[error("unknown entity &{0};")]
    UnknownEntity(String),
    /// The document ends inside an element.
    #[error("unclosed element <{0}>")]
    Unclosed(String),
    /// The document holds no element at all.
    #[error("no root element")]
    NoRoot,
}

/// Parses a document into its root element.
pub(crate) fn parse(bytes: &[u8]) -> Result<Element, XmlError> {
    let mut reader = Reader::from_reader(bytes);
    let mut stack: Vec<Element> = vec![Element::default()];
    let mut buf = Vec::new();
    loop {
        let read = |reader: &Reader<&[u8]>, e: quick_xml::Error| XmlError::Read {
            source: e,
            position: reader.error_position(),
        };
        let event = reader
            .read_event_into(&mut buf)
            .map_err(|e| read(&reader, e))?;
        match event {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let mut el = Element {
                    name: String::from_utf8_lossy(e.name().as_ref()).into_owned(),
                    ..Element::default()
                };
                for a in e.attributes() {
                    let a = a.map_err(|e| read(&reader, e.into()))?;
                    let value = a
                        .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                        .map_err(|e| read(&reader, e))?
                        .into_owned();
                    el.attributes
                        .push((String::from_utf8_lossy(a.key.as_ref()).into_owned(), value));
                }
                if matches!(event, Event::Start(_)) {
                    stack.push(el);
                } else if let Some(parent) = stack.last_mut() {
                    parent.children.push(Node::Element(el));
                }
            }
            Event::End(_) => {
                // The document's own node stays at the bottom of the stack.
                if stack.len() < 2 {
                    return Err(XmlError::UnbalancedEnd(reader.buffer_position()));
                }
                let el = stack.pop().unwrap_or_default();
                if let Some(parent) = stack.last_mut() {
                    parent.children.push(Node::Element(el));
                }
            }
            Event::Text(ref t) => {
                let text = t.xml10_content().map_err(|e| read(&reader, e.into()))?;
                if let Some(top) = stack.last_mut() {
                    top.children.push(Node::Text(text.into_owned()));
                }
            }
            Event::CData(ref c) => {
                let text = c.decode().map_err(|e| read(&reader, e.into()))?;
                if let Some(top) = stack.last_mut() {
                    top.children.push(Node::Text(text.into_owned()));
                }
            }
            Event::GeneralRef(ref g) => {
                let text = entity(g).ok_or_else(|| {
                    XmlError::UnknownEntity(String::from_utf8_lossy(g).into_owned())
                })?;
                if let Some(top) = stack.last_mut() {
                    top.children.push(Node::Text(text));
                }
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    if stack.len() != 1 {
        let open = stack.pop().map(|e| e.name).unwrap_or_default();
        return Err(XmlError::Unclosed(open));
    }
    let document = stack.pop().unwrap_or_default();
    let root = document.elements().next().cloned();
    root.ok_or(XmlError::NoRoot)
}

#[cfg(test)]
mod tests {
    use super::{parse, XmlError};

    #[test]
    fn a_tree_with_attributes_text_and_entities() {
        let root = parse(br#"<d case_sensitive="false"><entry><token>a&amp;b</token></entry></d>"#)
            .unwrap();
        assert_eq!(root.name, "d");
        assert_eq!(root.attribute("case_sensitive"), "false");
        assert_eq!(root.text(), "a&b");
    }

    #[test]
    fn errors_say_what_is_wrong_and_where() {
        let err = |xml: &str| parse(xml.as_bytes()).unwrap_err();
        assert!(matches!(err(""), XmlError::NoRoot));
        assert!(matches!(err("<!-- only a comment -->"), XmlError::NoRoot));
        let e = err("<a><b></b>");
        assert!(matches!(&e, XmlError::Unclosed(name) if name == "a"), "{e}");
        assert_eq!(e.to_string(), "unclosed element <a>");
        let e = err("<a>&nbsp;</a>");
        assert_eq!(e.to_string(), "unknown entity &nbsp;");
        let e = err("<a></b>");
        assert!(matches!(e, XmlError::Read { .. }), "{e}");
        assert!(e.to_string().contains("(at byte "), "{e}");
        let e = err(r#"<a x="1" x="2"/>"#);
        assert!(matches!(e, XmlError::Read { .. }), "{e}");
    }
}
