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

/// Parses a document into its root element.
pub(crate) fn parse(bytes: &[u8]) -> Result<Element, String> {
    let mut reader = Reader::from_reader(bytes);
    let mut stack: Vec<Element> = vec![Element::default()];
    let mut buf = Vec::new();
    loop {
        let event = reader
            .read_event_into(&mut buf)
            .map_err(|e| e.to_string())?;
        match event {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let mut el = Element {
                    name: String::from_utf8_lossy(e.name().as_ref()).into_owned(),
                    ..Element::default()
                };
                for a in e.attributes() {
                    let a = a.map_err(|e| e.to_string())?;
                    let value = a
                        .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                        .map_err(|e| e.to_string())?
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
                let el = stack.pop().ok_or("unbalanced end tag")?;
                let parent = stack.last_mut().ok_or("unbalanced end tag")?;
                parent.children.push(Node::Element(el));
            }
            Event::Text(ref t) => {
                let text = t.xml10_content().map_err(|e| e.to_string())?;
                if let Some(top) = stack.last_mut() {
                    top.children.push(Node::Text(text.into_owned()));
                }
            }
            Event::CData(ref c) => {
                let text = c.decode().map_err(|e| e.to_string())?;
                if let Some(top) = stack.last_mut() {
                    top.children.push(Node::Text(text.into_owned()));
                }
            }
            Event::GeneralRef(ref g) => {
                let text = entity(g).ok_or("unknown entity")?;
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
        return Err("unclosed element".into());
    }
    let document = stack.pop().unwrap_or_default();
    let root = document.elements().next().cloned();
    root.ok_or_else(|| "no root element".to_string())
}
