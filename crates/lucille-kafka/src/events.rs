//! Events on a run's event topic: Lucille's event JSON (`documentId`, `runId`, `type`,
//! `message`, and our `origin`), one object per message as Lucille writes them, or an array of
//! them: workers and indexers send a unit of work's events (an indexer's batch, a worker's
//! block) as one message per run, so the broker carries a message per batch, not per document.
//! Both forms are read. Written and read with serde's derive, never through a
//! `serde_json::Value` per event (that was half of the runner's CPU spent reading events).

use std::borrow::Cow;
use std::sync::Arc;

use serde::de::{Deserializer as _, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

use lucille_core::event::{Event, EventType, Origin};

/// The size an event message is kept under (a broker refuses messages past its
/// `message.max.bytes`, 1 MB by default on Apache Kafka): a unit of work's events go in as
/// many messages as that takes.
pub const EVENT_MESSAGE_BYTES: usize = 256 * 1024;

#[derive(Serialize)]
struct EventOut<'a> {
    #[serde(rename = "documentId")]
    document_id: &'a str,
    #[serde(rename = "runId")]
    run_id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    origin: Option<String>,
}

impl<'a> EventOut<'a> {
    fn of(e: &'a Event) -> Self {
        EventOut {
            document_id: &e.doc_id,
            run_id: &e.run_id,
            kind: e.kind.as_str(),
            message: e.message.as_deref(),
            origin: e.origin.map(|o| o.to_string()),
        }
    }
}

/// An event as read: every field optional, so a missing one is an error of its own.
#[derive(Deserialize)]
struct EventIn<'a> {
    #[serde(rename = "documentId", borrow, default)]
    document_id: Option<Cow<'a, str>>,
    #[serde(rename = "runId", borrow, default)]
    run_id: Option<Cow<'a, str>>,
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(default)]
    message: Option<String>,
    #[serde(borrow, default)]
    origin: Option<Cow<'a, str>>,
}

/// An event as Lucille writes it on the event topic.
pub fn event_json(e: &Event) -> String {
    // Strings and an optional string: serialising cannot fail.
    serde_json::to_string(&EventOut::of(e)).unwrap_or_default()
}

/// Several events in one message: a JSON array of Lucille's event objects.
pub fn events_json<'a>(events: impl IntoIterator<Item = &'a Event>) -> String {
    let all: Vec<EventOut<'a>> = events.into_iter().map(EventOut::of).collect();
    serde_json::to_string(&all).unwrap_or_default()
}

/// Events of one run as messages of [`events_json`]'s form, each under
/// [`EVENT_MESSAGE_BYTES`] (an event larger than that alone), in order.
pub fn event_messages(events: &[Event]) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::from("[");
    for e in events {
        let one = event_json(e);
        if current.len() > 1 && current.len() + one.len() + 2 > EVENT_MESSAGE_BYTES {
            current.push(']');
            out.push(std::mem::replace(&mut current, String::from("[")));
        }
        if current.len() > 1 {
            current.push(',');
        }
        current.push_str(&one);
    }
    if current.len() > 1 {
        current.push(']');
        out.push(current);
    }
    out
}

/// Events grouped by run, each run's in their order (a worker's block or an indexer's batch
/// may hold documents of several runs; each run has its own event topic).
pub fn by_run(events: Vec<Event>) -> Vec<(Arc<str>, Vec<Event>)> {
    let mut runs: Vec<(Arc<str>, Vec<Event>)> = Vec::new();
    for e in events {
        match runs.iter_mut().find(|(r, _)| *r == e.run_id) {
            Some((_, v)) => v.push(e),
            None => runs.push((e.run_id.clone(), vec![e])),
        }
    }
    runs
}

/// Why a message on an event topic is not an event.
#[derive(Debug, thiserror::Error)]
pub enum BadEvent {
    #[error("not JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("not an event object or an array of them")]
    NotAnEvent,
    #[error("no documentId")]
    NoDocumentId,
    #[error("unknown event type {0:?}")]
    UnknownType(Option<String>),
}

/// An event as Lucille writes it on an event topic; `run_id` is the run reading it (an
/// event without a `runId` belongs to it).
pub fn event_from_json(bytes: &[u8], run_id: &Arc<str>) -> Result<Event, BadEvent> {
    let v: EventIn<'_> = serde_json::from_slice(bytes)?;
    event_from_in(v, run_id)
}

/// The events of one message of an event topic: one event object (Lucille's form) or an array
/// of them ([`events_json`]); each element that is not an event is an error of its own.
pub fn events_from_json(bytes: &[u8], run_id: &Arc<str>) -> Vec<Result<Event, BadEvent>> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let read = de.deserialize_any(Events(run_id)).and_then(|events| {
        de.end()?;
        Ok(events)
    });
    read.unwrap_or_else(|e| vec![Err(BadEvent::Json(e))])
}

/// Reads an event object or an array of them.
struct Events<'r>(&'r Arc<str>);

impl<'de> Visitor<'de> for Events<'_> {
    type Value = Vec<Result<Event, BadEvent>>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an event object or an array of them")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(64));
        while let Some(item) = seq.next_element::<Element<'de>>()? {
            out.push(match item {
                Element::Event(e) => event_from_in(e, self.0),
                Element::Other => Err(BadEvent::NotAnEvent),
            });
        }
        Ok(out)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        let e = EventIn::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
        Ok(vec![event_from_in(e, self.0)])
    }
}

/// An array element: an event object, or anything else (an error of its own).
enum Element<'a> {
    Event(EventIn<'a>),
    Other,
}

impl<'de> Deserialize<'de> for Element<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ElementVisitor;

        impl<'de> Visitor<'de> for ElementVisitor {
            type Value = Element<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an event object")
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                EventIn::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(Element::Event)
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Element::Other)
            }

            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Element::Other)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Element::Other)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Element::Other)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Element::Other)
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(Element::Other)
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Element::Other)
            }
        }

        d.deserialize_any(ElementVisitor)
    }
}

fn event_from_in(v: EventIn<'_>, run_id: &Arc<str>) -> Result<Event, BadEvent> {
    let id = v.document_id.ok_or(BadEvent::NoDocumentId)?;
    let kind = match v.kind.as_deref() {
        Some("CREATE") => EventType::Create,
        Some("FINISH") => EventType::Finish,
        Some("FAIL") => EventType::Fail,
        Some("DROP") => EventType::Drop,
        other => return Err(BadEvent::UnknownType(other.map(str::to_string))),
    };
    let run = match v.run_id.as_deref() {
        Some(r) if r == &**run_id => run_id.clone(),
        Some(r) => Arc::from(r),
        None => run_id.clone(),
    };
    let mut e = Event::new(id.into_owned(), run, kind);
    e.message = v.message;
    e.origin = v.origin.as_deref().and_then(Origin::parse);
    Ok(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_round_trip_as_lucille_json() {
        let run: Arc<str> = Arc::from("r1");
        let e = Event::new("d1", run.clone(), EventType::Fail).with_message("bad");
        let text = event_json(&e);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["documentId"], "d1");
        assert_eq!(v["runId"], "r1");
        assert_eq!(v["type"], "FAIL");
        assert_eq!(v["message"], "bad");
        assert!(v.get("origin").is_none(), "{text}");
        let back = event_from_json(text.as_bytes(), &run).unwrap();
        assert_eq!(back, e);
        let mut replayable = e.clone();
        replayable.origin = Some(Origin {
            partition: 2,
            offset: 41,
            ordinal: 3,
        });
        let text = event_json(&replayable);
        assert!(text.contains(r#""origin":"2:41:3""#), "{text}");
        assert_eq!(event_from_json(text.as_bytes(), &run).unwrap(), replayable);
        assert!(event_from_json(br#"{"documentId":"x","type":"NOPE"}"#, &run).is_err());
        // An event with no run belongs to the run reading it; another run's keeps its own.
        let none = event_from_json(br#"{"documentId":"x","type":"DROP"}"#, &run).unwrap();
        assert_eq!(&*none.run_id, "r1");
        let other =
            event_from_json(br#"{"documentId":"x","type":"DROP","runId":"r2"}"#, &run).unwrap();
        assert_eq!(&*other.run_id, "r2");
    }

    #[test]
    fn a_batch_of_events_is_one_array_and_lucille_s_single_events_still_read() {
        let run: Arc<str> = Arc::from("r1");
        let a = Event::new("a", run.clone(), EventType::Finish);
        let b = Event::new("b", run.clone(), EventType::Fail).with_message("no \"quote\"");
        let text = events_json([&a, &b]);
        assert!(text.starts_with('['), "{text}");
        let back: Vec<Event> = events_from_json(text.as_bytes(), &run)
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert_eq!(back, vec![a.clone(), b]);
        let one = events_from_json(event_json(&a).as_bytes(), &run);
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].as_ref().unwrap(), &a);
        // A bad element is an error of its own; the others are read.
        let mixed = events_from_json(
            br#"[{"documentId":"x","type":"FINISH"}, 3, {}, [1], {"documentId":"y","type":"?"}]"#,
            &run,
        );
        assert_eq!(mixed.len(), 5);
        assert!(mixed[0].is_ok());
        assert!(matches!(mixed[1], Err(BadEvent::NotAnEvent)));
        assert!(matches!(mixed[2], Err(BadEvent::NoDocumentId)));
        assert!(matches!(mixed[3], Err(BadEvent::NotAnEvent)));
        assert!(matches!(mixed[4], Err(BadEvent::UnknownType(_))));
        for bad in [&b"{oops"[..], b"3", b"[1, 2", b"{} trailing"] {
            let got = events_from_json(bad, &run);
            assert!(
                matches!(got.as_slice(), [Err(BadEvent::Json(_))]),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn event_messages_stay_under_the_size_and_keep_every_event_in_order() {
        let run: Arc<str> = Arc::from("r1");
        let long = "x".repeat(EVENT_MESSAGE_BYTES / 3);
        let events: Vec<Event> = (0..7)
            .map(|i| Event::new(format!("d{i}"), run.clone(), EventType::Fail).with_message(&long))
            .collect();
        let messages = event_messages(&events);
        assert_eq!(messages.len(), 4, "two events a message, the last alone");
        assert!(messages.iter().all(|m| m.len() <= EVENT_MESSAGE_BYTES));
        let back: Vec<Event> = messages
            .iter()
            .flat_map(|m| events_from_json(m.as_bytes(), &run))
            .map(Result::unwrap)
            .collect();
        assert_eq!(back, events);
        let huge = Event::new("big", run.clone(), EventType::Fail)
            .with_message("y".repeat(EVENT_MESSAGE_BYTES * 2));
        assert_eq!(event_messages(std::slice::from_ref(&huge)).len(), 1);
        assert!(event_messages(&[]).is_empty());
    }

    #[test]
    fn events_are_grouped_by_run_in_order() {
        let (a, b): (Arc<str>, Arc<str>) = (Arc::from("a"), Arc::from("b"));
        let e = |id: &str, r: &Arc<str>| Event::new(id, r.clone(), EventType::Finish);
        let runs = by_run(vec![e("1", &a), e("2", &b), e("3", &a)]);
        let ids: Vec<(String, Vec<String>)> = runs
            .iter()
            .map(|(r, v)| (r.to_string(), v.iter().map(|e| e.doc_id.clone()).collect()))
            .collect();
        assert_eq!(
            ids,
            vec![
                ("a".into(), vec!["1".into(), "3".into()]),
                ("b".into(), vec!["2".into()])
            ]
        );
    }
}
