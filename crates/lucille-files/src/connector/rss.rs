//! RSSConnector (Lucille's `connector.RSSConnector`): one document per item of an RSS 2.0 /
//! RSS 1.0 feed or entry of an Atom feed, read with quick-xml as it streams in (nothing is
//! collected first), from an http(s) URL or a local file (`rssURL`; a relative path is read
//! from the config file's folder).
//!
//! Keys as Lucille's: `rssURL`, `useGuidForDocID` (default true), `pubDateCutoff` (only items
//! published within this duration; items without a date are kept), `runDuration` +
//! `refreshIncrement` (poll the feed until `runDuration` has passed, publishing only items not
//! seen in the previous refresh). Durations are HOCON's: `500ms`, `30s`, `5m`, `1h`, `2d`, or a
//! number of milliseconds.
//!
//! Fields as Lucille's: `title`, `link`, `description`, `content`, `author`, `comments`,
//! `categories` (always a list), `enclosures` (list of `{type, url, length}`), `guid`,
//! `isPermaLink`, `pubDate` (ISO-8601 UTC, e.g. `2025-04-21T20:00:00Z`). Atom maps `summary` to
//! `description`, `id` to `guid`, `published` / `updated` to `pubDate`, the alternate `link`'s
//! href, `author/name` and `category/@term`.
//!
//! Ids: the guid (Lucille). Differing from Lucille, `docIdPrefix` applies, and an item without a
//! guid gets its link, else the MD5 of its content, instead of a random UUID, so re-runs give the
//! same ids; `useGuidForDocID: false` gives random UUIDs as Lucille does.

use std::collections::HashSet;
use std::io::BufRead;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, SecondsFormat, Utc};
use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;
use serde_json::{json, Map, Value};

use super::{record_connector_spec, Common, Connector, ConnectorDescriptor, ConnectorError};
use crate::accounting::Publisher;
use crate::config::{Checked, ComponentConfig, ConfigErrors, Options};
use crate::document::ids::md5_hex;
use crate::document::Document;

pub const DESCRIPTOR: ConnectorDescriptor = ConnectorDescriptor {
    name: "RSSConnector",
    aliases: &[],
    spec: RssOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Publishes one document per item of an RSS 2.0 / RSS 1.0 feed or entry of an Atom feed, read
/// from an http(s) URL or a local file; polls the feed with `runDuration` and
/// `refreshIncrement`.
#[derive(Options)]
#[options(base = record_connector_spec())]
struct RssOptions {
    /// The feed: an http(s) URL, or a local file (file:// or a path; relative to the config
    /// file's folder).
    #[option(key = "rssURL")]
    rss_url: String,
    /// An item's id is its guid (else its link, else the MD5 of its content); false: a random
    /// UUID, as Lucille.
    #[option(key = "useGuidForDocID", default = true)]
    use_guid_for_doc_id: bool,
    /// Only items published within this duration ("30s", "5m", "2d", or milliseconds); items
    /// without a date are kept.
    pub_date_cutoff: Option<Checked<Duration>>,
    /// Poll the feed until this much time has passed (with refreshIncrement).
    run_duration: Option<Checked<Duration>>,
    /// The time between two reads of the feed when polling (with runDuration), more than zero.
    refresh_increment: Option<Checked<Duration>>,
}

#[derive(Debug, Clone)]
enum FeedSource {
    Http(String),
    File(PathBuf),
}

impl std::fmt::Display for FeedSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FeedSource::Http(url) => f.write_str(url),
            FeedSource::File(p) => write!(f, "{}", p.display()),
        }
    }
}

struct RssConnector {
    common: Common,
    source: FeedSource,
    use_guid: bool,
    cutoff: Option<Duration>,
    /// (runDuration, refreshIncrement) when polling.
    polling: Option<(Duration, Duration)>,
}

fn build(config: &ComponentConfig, common: &Common) -> Result<Box<dyn Connector>, ConfigErrors> {
    let o = RssOptions::from_config(config)?;
    let mut problems = Vec::new();
    let url = o.rss_url;
    let lower = url.to_ascii_lowercase();
    let source = if lower.starts_with("http://") || lower.starts_with("https://") {
        let host = url.split_once("://").map_or("", |(_, rest)| rest);
        if host.is_empty() || host.starts_with('/') {
            problems.push(config.error("rssURL", format!("is not a valid URL: {url:?}")));
        }
        FeedSource::Http(url.clone())
    } else if let Some(path) = lower.strip_prefix("file://").map(|_| &url[7..]) {
        FeedSource::File(config.resolve_path(path))
    } else if url.contains("://") {
        problems.push(config.error(
            "rssURL",
            format!("must be an http(s) URL or a file path, found {url:?}"),
        ));
        FeedSource::File(PathBuf::new())
    } else if url.trim().is_empty() {
        problems.push(config.error("rssURL", "must not be empty"));
        FeedSource::File(PathBuf::new())
    } else {
        FeedSource::File(config.resolve_path(&url))
    };
    let given = (o.run_duration.is_some(), o.refresh_increment.is_some());
    let mut duration = |d: Option<Checked<Duration>>| match d {
        Some(Checked(Ok(d))) => Some(d),
        Some(Checked(Err(e))) => {
            problems.push(e);
            None
        }
        None => None,
    };
    let cutoff = duration(o.pub_date_cutoff);
    let run_duration = duration(o.run_duration);
    let refresh = duration(o.refresh_increment);
    if given.0 != given.1 {
        problems.push(config.error(
            if given.0 {
                "refreshIncrement"
            } else {
                "runDuration"
            },
            "runDuration and refreshIncrement must both be set to poll the feed",
        ));
    }
    if refresh.is_some_and(|r| r.is_zero()) {
        problems.push(config.error("refreshIncrement", "must be more than zero"));
    }
    if !problems.is_empty() {
        return Err(problems.into());
    }
    Ok(Box::new(RssConnector {
        common: common.clone(),
        source,
        use_guid: o.use_guid_for_doc_id,
        cutoff,
        polling: run_duration.zip(refresh),
    }))
}

/// One feed item, as read.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Item {
    pub title: Option<String>,
    pub link: Option<String>,
    pub description: Option<String>,
    pub content: Option<String>,
    pub author: Option<String>,
    pub comments: Option<String>,
    pub categories: Vec<String>,
    pub enclosures: Vec<Value>,
    pub guid: Option<String>,
    pub is_perma_link: Option<bool>,
    /// The date as written, and its priority (pubDate / published over updated).
    pub pub_date: Option<String>,
    date_rank: u8,
    /// Bytes of text and attributes gathered for this item so far.
    gathered: u64,
    /// Set once `gathered` passed `maxDocumentBytes`: the item's byte position in the feed. Its
    /// content was then dropped (guid, link and date kept) and the rest is read without keeping
    /// it.
    pub too_big: Option<u64>,
}

impl Item {
    /// The item's fields (Lucille's names), without an id.
    fn fields(&self) -> Map<String, Value> {
        let mut m = Map::new();
        let mut put = |k: &str, v: &Option<String>| {
            if let Some(v) = v {
                m.insert(k.to_string(), Value::String(v.clone()));
            }
        };
        put("author", &self.author);
        put("comments", &self.comments);
        put("content", &self.content);
        put("description", &self.description);
        put("guid", &self.guid);
        put("link", &self.link);
        put("title", &self.title);
        if !self.categories.is_empty() {
            m.insert("categories".into(), json!(self.categories));
        }
        if !self.enclosures.is_empty() {
            m.insert("enclosures".into(), Value::Array(self.enclosures.clone()));
        }
        if let Some(p) = self.is_perma_link {
            m.insert("isPermaLink".into(), Value::Bool(p));
        }
        if let Some(date) = self.published() {
            m.insert(
                "pubDate".into(),
                Value::String(date.to_rfc3339_opts(SecondsFormat::AutoSi, true)),
            );
        }
        m
    }

    pub(crate) fn published(&self) -> Option<DateTime<Utc>> {
        let text = self.pub_date.as_deref()?;
        let parsed = DateTime::parse_from_rfc2822(text)
            .or_else(|_| DateTime::parse_from_rfc3339(text))
            .map(|d| d.with_timezone(&Utc));
        match parsed {
            Ok(d) => Some(d),
            Err(_) => {
                tracing::warn!("RSSConnector: cannot read the date {text:?}; pubDate left out");
                None
            }
        }
    }
}

/// Where a feed cannot be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FeedError {
    #[error("cannot read the feed {source_name}: {message}")]
    Read {
        source_name: String,
        message: String,
    },
    #[error("malformed feed {source_name} at byte {position}: {message}")]
    Malformed {
        source_name: String,
        position: u64,
        message: String,
    },
    #[error(transparent)]
    Publish(#[from] ConnectorError),
}

/// The item fields read from element text.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Field {
    Title,
    Link,
    Description,
    Content,
    Author,
    Comments,
    Category,
    Guid,
    Date(u8),
}

fn attr(e: &BytesStart<'_>, name: &str) -> Option<String> {
    let a = e.try_get_attribute(name).ok().flatten()?;
    a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
        .ok()
        .map(|v| v.into_owned())
}

/// Streams the items of a feed to `on_item`; returns how many there were.
pub(crate) fn parse_feed<R: BufRead>(
    input: R,
    source_name: &str,
    max_bytes: Option<u64>,
    on_item: &mut dyn FnMut(Item) -> Result<(), ConnectorError>,
) -> Result<u64, FeedError> {
    let mut reader = Reader::from_reader(input);
    let mut buf = Vec::new();
    let mut depth = 0usize;
    let mut root_seen = false;
    // (depth of <item>/<entry>, the item)
    let mut item: Option<(usize, Item)> = None;
    let mut capture: Option<Capture> = None;
    // Atom's <author><name>: (depth of <name>, its text).
    let mut author_name: Option<(usize, String)> = None;
    let mut count = 0u64;
    // Where the open item started (byte of its start tag's end), for an oversized item's FAIL.
    let mut item_start = 0u64;
    let malformed = |reader: &Reader<R>, message: String| FeedError::Malformed {
        source_name: source_name.to_string(),
        position: reader.error_position(),
        message,
    };
    loop {
        let event = reader
            .read_event_into(&mut buf)
            .map_err(|e| malformed(&reader, e.to_string()))?;
        match event {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let empty = matches!(event, Event::Empty(_));
                let name = String::from_utf8_lossy(e.name().as_ref()).into_owned();
                if !root_seen {
                    root_seen = true;
                    let local = String::from_utf8_lossy(e.local_name().as_ref()).into_owned();
                    if !matches!(local.as_str(), "rss" | "RDF" | "feed") {
                        return Err(FeedError::Malformed {
                            source_name: source_name.to_string(),
                            position: reader.buffer_position(),
                            message: format!(
                                "not an RSS or Atom feed: the root element is <{name}>"
                            ),
                        });
                    }
                }
                if !empty {
                    depth += 1;
                }
                let element_depth = if empty { depth + 1 } else { depth };
                if let (Some((_, it)), Some(max)) = (&mut item, max_bytes) {
                    // Attributes count toward the item's size as its text does.
                    let n = e.attributes_raw().len() as u64;
                    gather(it, &mut capture, &mut author_name, n, max);
                }
                match &mut item {
                    None if name == "item" || name == "entry" => {
                        if empty {
                            count += 1;
                            on_item(Item::default())?;
                        } else {
                            item = Some((element_depth, Item::default()));
                            item_start =
                                reader.buffer_position().saturating_sub(e.len() as u64 + 2);
                        }
                    }
                    // Past the limit: nothing more of this item is kept but its guid or link
                    // (for its FAIL's id), themselves bounded.
                    Some((item_depth, it)) if it.too_big.is_some() => {
                        let field = match name.as_str() {
                            "guid" | "id" => Some(Field::Guid),
                            "link" if attr(e, "href").is_none() => Some(Field::Link),
                            _ => None,
                        };
                        if let (Some(field), None, false, true) =
                            (field, &capture, empty, element_depth == *item_depth + 1)
                        {
                            capture = Some(Capture {
                                field,
                                depth: element_depth,
                                text: String::new(),
                                frozen: false,
                            });
                        }
                    }
                    Some((item_depth, it)) if capture.is_none() => {
                        let child = element_depth == *item_depth + 1;
                        let field = if child {
                            match name.as_str() {
                                "title" => Some(Field::Title),
                                "link" => match attr(e, "href") {
                                    // Atom: the alternate link (rel absent or "alternate").
                                    Some(href) => {
                                        let rel = attr(e, "rel");
                                        if it.link.is_none()
                                            && rel.as_deref().is_none_or(|r| r == "alternate")
                                        {
                                            it.link = Some(href);
                                        }
                                        None
                                    }
                                    None => Some(Field::Link),
                                },
                                "description" | "summary" => Some(Field::Description),
                                "content:encoded" | "content" => Some(Field::Content),
                                "comments" => Some(Field::Comments),
                                "guid" => {
                                    if let Some(p) = attr(e, "isPermaLink") {
                                        it.is_perma_link = Some(p.trim() == "true");
                                    }
                                    Some(Field::Guid)
                                }
                                "id" => Some(Field::Guid),
                                "pubDate" | "published" | "dc:date" => Some(Field::Date(2)),
                                "updated" => Some(Field::Date(1)),
                                "dc:creator" => Some(Field::Author),
                                "author" => Some(Field::Author),
                                "category" => match attr(e, "term") {
                                    Some(term) => {
                                        it.categories.push(term);
                                        None
                                    }
                                    None => Some(Field::Category),
                                },
                                "enclosure" => {
                                    let mut enc = Map::new();
                                    if let Some(t) = attr(e, "type") {
                                        enc.insert("type".into(), Value::String(t));
                                    }
                                    if let Some(u) = attr(e, "url") {
                                        enc.insert("url".into(), Value::String(u));
                                    }
                                    if let Some(len) =
                                        attr(e, "length").and_then(|l| l.trim().parse::<i64>().ok())
                                    {
                                        enc.insert("length".into(), Value::from(len));
                                    }
                                    it.enclosures.push(Value::Object(enc));
                                    None
                                }
                                _ => None,
                            }
                        } else {
                            None
                        };
                        if let (Some(field), false) = (field, empty) {
                            capture = Some(Capture {
                                field,
                                depth: element_depth,
                                text: String::new(),
                                frozen: false,
                            });
                        }
                    }
                    Some(_) => {
                        // Atom's <author> holds <name> (and <email>, <uri>): keep the name.
                        if let Some(c) = &capture {
                            if c.field == Field::Author
                                && name == "name"
                                && element_depth == c.depth + 1
                                && !empty
                            {
                                author_name = Some((element_depth, String::new()));
                            }
                        }
                    }
                    None => {}
                }
            }
            Event::Text(ref t) => {
                if let Some(text) = text_sink(&mut capture, &mut author_name) {
                    let s = t
                        .xml10_content()
                        .map_err(|e| malformed(&reader, e.to_string()))?;
                    text.push_str(&s);
                    if let (Some((_, it)), Some(max)) = (&mut item, max_bytes) {
                        gather(it, &mut capture, &mut author_name, s.len() as u64, max);
                    }
                }
            }
            Event::CData(ref c) => {
                if let Some(text) = text_sink(&mut capture, &mut author_name) {
                    let s = c
                        .xml10_content()
                        .map_err(|e| malformed(&reader, e.to_string()))?;
                    text.push_str(&s);
                    if let (Some((_, it)), Some(max)) = (&mut item, max_bytes) {
                        gather(it, &mut capture, &mut author_name, s.len() as u64, max);
                    }
                }
            }
            Event::GeneralRef(ref r) => {
                if let Some(text) = text_sink(&mut capture, &mut author_name) {
                    let resolved = match r.resolve_char_ref() {
                        Ok(Some(c)) => c.to_string(),
                        Ok(None) => {
                            let name = r.decode().map_err(|e| malformed(&reader, e.to_string()))?;
                            match name.as_ref() {
                                "amp" => "&".into(),
                                "lt" => "<".into(),
                                "gt" => ">".into(),
                                "quot" => "\"".into(),
                                "apos" => "'".into(),
                                other => format!("&{other};"),
                            }
                        }
                        Err(e) => return Err(malformed(&reader, e.to_string())),
                    };
                    text.push_str(&resolved);
                }
            }
            Event::End(_) => {
                if let Some((_, name)) = author_name.take_if(|(at, _)| *at == depth) {
                    if let Some(c) = &mut capture {
                        c.text = name;
                        c.frozen = true;
                    }
                }
                if let Some(c) = capture.take_if(|c| c.depth == depth) {
                    if let Some((_, it)) = &mut item {
                        store(it, c.field, c.text);
                    }
                }
                if item.as_ref().is_some_and(|(d, _)| *d == depth) {
                    if let Some((_, mut it)) = item.take() {
                        count += 1;
                        if it.too_big.is_some() {
                            it.too_big = Some(item_start);
                        }
                        on_item(it)?;
                    }
                }
                depth = depth.saturating_sub(1);
            }
            Event::Eof => {
                if !root_seen {
                    return Err(malformed(
                        &reader,
                        "no XML elements (empty or not XML)".into(),
                    ));
                }
                if depth > 0 {
                    return Err(malformed(&reader, "the feed ends inside an element".into()));
                }
                return Ok(count);
            }
            _ => {}
        }
        buf.clear();
    }
}

/// Counts `n` more bytes toward the open item; past `max`, drops what it gathered (its guid,
/// link and date kept, for its FAIL) and what is being collected, so the rest of it is read
/// without being kept.
fn gather(
    it: &mut Item,
    capture: &mut Option<Capture>,
    author_name: &mut Option<(usize, String)>,
    n: u64,
    max: u64,
) {
    it.gathered += n;
    if it.too_big.is_some() {
        // Only a guid or link is still collected: bounded too.
        if capture.as_ref().is_some_and(|c| c.text.len() as u64 > max) {
            *capture = None;
        }
        return;
    }
    if it.gathered > max {
        *it = Item {
            guid: it.guid.take(),
            link: it.link.take(),
            pub_date: it.pub_date.take(),
            date_rank: it.date_rank,
            gathered: it.gathered,
            too_big: Some(0),
            ..Item::default()
        };
        *capture = None;
        *author_name = None;
    }
}

/// The element of an item whose text is being collected.
struct Capture {
    field: Field,
    depth: usize,
    text: String,
    /// Set once an Atom author's <name> gave the text.
    frozen: bool,
}

/// Where text read now belongs, if anywhere.
fn text_sink<'a>(
    capture: &'a mut Option<Capture>,
    author_name: &'a mut Option<(usize, String)>,
) -> Option<&'a mut String> {
    if let Some((_, name)) = author_name {
        return Some(name);
    }
    match capture {
        Some(c) if !c.frozen => Some(&mut c.text),
        _ => None,
    }
}

fn store(it: &mut Item, field: Field, text: String) {
    let text = text.trim().to_string();
    if text.is_empty() {
        return;
    }
    match field {
        Field::Title => it.title = Some(text),
        Field::Link => it.link = Some(text),
        Field::Description => it.description = Some(text),
        Field::Content => it.content = Some(text),
        Field::Author => it.author = Some(text),
        Field::Comments => it.comments = Some(text),
        Field::Category => it.categories.push(text),
        Field::Guid => it.guid = Some(text),
        Field::Date(rank) => {
            if rank > it.date_rank {
                it.pub_date = Some(text);
                it.date_rank = rank;
            }
        }
    }
}

impl RssConnector {
    fn document(
        &self,
        item: &Item,
        fields: Map<String, Value>,
    ) -> Result<Document, ConnectorError> {
        let source_id = if self.use_guid {
            item.guid
                .clone()
                .or_else(|| item.link.clone())
                .unwrap_or_else(|| md5_hex(&Value::Object(fields.clone()).to_string()))
        } else {
            uuid::Uuid::new_v4().to_string()
        };
        let mut data = fields;
        data.insert("id".into(), Value::String(self.common.doc_id(&source_id)));
        Document::from_map(data).map_err(|e| ConnectorError::new(e.to_string()))
    }

    /// Reads the feed once, handing each item to `on_item`.
    fn read_feed(
        &self,
        on_item: &mut dyn FnMut(Item) -> Result<(), ConnectorError>,
    ) -> Result<u64, FeedError> {
        let name = self.source.to_string();
        let read_error = |message: String| FeedError::Read {
            source_name: name.clone(),
            message,
        };
        match &self.source {
            FeedSource::File(path) => {
                let file = std::fs::File::open(path).map_err(|e| read_error(e.to_string()))?;
                parse_feed(
                    std::io::BufReader::new(file),
                    &name,
                    self.common.max_document_bytes,
                    on_item,
                )
            }
            FeedSource::Http(url) => {
                let agent: ureq::Agent = ureq::Agent::config_builder()
                    .timeout_global(Some(Duration::from_secs(60)))
                    .build()
                    .into();
                let response = agent
                    .get(url)
                    .header("User-Agent", "lucille-rs RSSConnector")
                    .call()
                    .map_err(|e| read_error(e.to_string()))?;
                let body = std::io::BufReader::new(response.into_body().into_reader());
                parse_feed(body, &name, self.common.max_document_bytes, on_item)
            }
        }
    }
}

impl Connector for RssConnector {
    fn execute(&mut self, publisher: &Arc<Publisher>) -> Result<(), ConnectorError> {
        let started = Instant::now();
        let mut seen_last: HashSet<String> = HashSet::new();
        loop {
            let cutoff = self.cutoff.and_then(|d| {
                chrono::Duration::from_std(d)
                    .ok()
                    .and_then(|d| Utc::now().checked_sub_signed(d))
            });
            let mut seen_now: HashSet<String> = HashSet::new();
            let mut published = 0u64;
            let result = self.read_feed(&mut |item| {
                let fields = item.fields();
                // An item is "the same" when all its fields are (Lucille compares items).
                let identity = md5_hex(&Value::Object(fields.clone()).to_string());
                let fresh = seen_now.insert(identity.clone()) && !seen_last.contains(&identity);
                let too_old = match (cutoff, item.published()) {
                    (Some(c), Some(d)) => d < c,
                    _ => false,
                };
                if let (Some(at), true) = (item.too_big, fresh && !too_old) {
                    let key = item
                        .guid
                        .clone()
                        .or_else(|| item.link.clone())
                        .unwrap_or_else(|| format!("{}#byte{at}", self.source));
                    publisher.publish_failed(
                        &self.common.doc_id(&key),
                        &format!(
                            "{}: the item at byte {at}: the record is larger than \
                             maxDocumentBytes ({}); the rest of it was read without keeping it",
                            self.source,
                            self.common.max_document_bytes.unwrap_or_default()
                        ),
                    )?;
                    published += 1;
                } else if fresh && !too_old {
                    let doc = self.document(&item, fields)?;
                    match self.common.oversize(&doc) {
                        None => publisher.publish(doc)?,
                        Some(size) => publisher.publish_failed(
                            doc.id(),
                            &format!(
                                "{}: item {}: the record is larger than maxDocumentBytes \
                                 ({}): {size} bytes as JSON",
                                self.source,
                                doc.id(),
                                self.common.max_document_bytes.unwrap_or_default()
                            ),
                        )?,
                    }
                    published += 1;
                }
                Ok(())
            });
            result.map_err(|e| match e {
                FeedError::Publish(e) => e,
                other => {
                    ConnectorError::new(format!("RSSConnector {:?}: {other}", self.common.name))
                }
            })?;
            tracing::info!(
                "RSSConnector {:?}: published {published} new item(s) from {}",
                self.common.name,
                self.source
            );
            let Some((run, refresh)) = self.polling else {
                return Ok(());
            };
            if started.elapsed() >= run {
                return Ok(());
            }
            // One failed or empty fetch must not make every item look new next time.
            if !seen_now.is_empty() {
                seen_last = seen_now;
            }
            // Sleep in slices so a stopping run (Ctrl-C) does not wait out the increment.
            let wake = Instant::now() + refresh;
            while Instant::now() < wake {
                if publisher.is_stopping() {
                    return Ok(());
                }
                std::thread::sleep(
                    wake.saturating_duration_since(Instant::now())
                        .min(Duration::from_millis(100)),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests;
