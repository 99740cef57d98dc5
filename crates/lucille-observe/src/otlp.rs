//! The trace exporter: spans from `lucille_core::trace` sent to an OpenTelemetry collector
//! over OTLP/HTTP in protobuf, from a thread of their own. The buffer between the pipeline and
//! the exporter is bounded: a span that does not fit is dropped and counted
//! (`lucille_traces_dropped_total`), and so is a batch the collector refuses or cannot take
//! (down, 5xx, too slow); nothing here ever blocks or fails a run.

use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender};
use lucille_core::runner::TracingSettings;
use lucille_core::trace::SpanData;
use lucille_http::{Auth, HttpClient, RetryPolicy};
use prost::Message;

/// Spans waiting for export; more are dropped.
const BUFFER: usize = 8192;
/// Spans per export request.
const BATCH: usize = 512;
/// How long a span waits for its batch to fill.
const LINGER: Duration = Duration::from_millis(500);
/// Limit on one export request.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);

/// OTLP's protobuf messages, the fields the exporter sends (opentelemetry-proto's
/// `collector/trace/v1`, `trace/v1`, `common/v1`, `resource/v1`). Declared here with prost's
/// derive: the crate that generates them all builds them for tonic's gRPC stack, which an
/// HTTP exporter does not use.
mod proto {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ExportTraceServiceRequest {
        #[prost(message, repeated, tag = "1")]
        pub resource_spans: Vec<ResourceSpans>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ResourceSpans {
        #[prost(message, optional, tag = "1")]
        pub resource: Option<Resource>,
        #[prost(message, repeated, tag = "2")]
        pub scope_spans: Vec<ScopeSpans>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Resource {
        #[prost(message, repeated, tag = "1")]
        pub attributes: Vec<KeyValue>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ScopeSpans {
        #[prost(message, optional, tag = "1")]
        pub scope: Option<InstrumentationScope>,
        #[prost(message, repeated, tag = "2")]
        pub spans: Vec<Span>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct InstrumentationScope {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(string, tag = "2")]
        pub version: String,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Span {
        #[prost(bytes = "vec", tag = "1")]
        pub trace_id: Vec<u8>,
        #[prost(bytes = "vec", tag = "2")]
        pub span_id: Vec<u8>,
        #[prost(bytes = "vec", tag = "4")]
        pub parent_span_id: Vec<u8>,
        #[prost(string, tag = "5")]
        pub name: String,
        /// SPAN_KIND_INTERNAL.
        #[prost(int32, tag = "6")]
        pub kind: i32,
        #[prost(fixed64, tag = "7")]
        pub start_time_unix_nano: u64,
        #[prost(fixed64, tag = "8")]
        pub end_time_unix_nano: u64,
        #[prost(message, repeated, tag = "9")]
        pub attributes: Vec<KeyValue>,
        #[prost(message, optional, tag = "15")]
        pub status: Option<Status>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Status {
        #[prost(string, tag = "2")]
        pub message: String,
        /// 0 unset, 1 ok, 2 error.
        #[prost(int32, tag = "3")]
        pub code: i32,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct KeyValue {
        #[prost(string, tag = "1")]
        pub key: String,
        #[prost(message, optional, tag = "2")]
        pub value: Option<AnyValue>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct AnyValue {
        #[prost(oneof = "Value", tags = "1, 3")]
        pub value: Option<Value>,
    }
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Value {
        #[prost(string, tag = "1")]
        StringValue(String),
        #[prost(int64, tag = "3")]
        IntValue(i64),
    }
}

fn text(key: &str, value: &str) -> proto::KeyValue {
    proto::KeyValue {
        key: key.to_string(),
        value: Some(proto::AnyValue {
            value: Some(proto::Value::StringValue(value.to_string())),
        }),
    }
}

fn nanos(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// The export request of a batch of spans from the service `service`.
fn request(service: &str, spans: &[SpanData]) -> proto::ExportTraceServiceRequest {
    let spans = spans
        .iter()
        .map(|s| proto::Span {
            trace_id: s.trace_id.to_vec(),
            span_id: s.span_id.to_vec(),
            parent_span_id: s.parent.map(|p| p.to_vec()).unwrap_or_default(),
            name: s.name.to_string(),
            kind: 1,
            start_time_unix_nano: nanos(s.start),
            end_time_unix_nano: nanos(s.end),
            attributes: s.attributes.iter().map(|(k, v)| text(k, v)).collect(),
            status: s.error.as_ref().map(|e| proto::Status {
                message: e.clone(),
                code: 2,
            }),
        })
        .collect();
    proto::ExportTraceServiceRequest {
        resource_spans: vec![proto::ResourceSpans {
            resource: Some(proto::Resource {
                attributes: vec![
                    text("service.name", service),
                    text("service.version", env!("CARGO_PKG_VERSION")),
                    proto::KeyValue {
                        key: "process.pid".into(),
                        value: Some(proto::AnyValue {
                            value: Some(proto::Value::IntValue(i64::from(std::process::id()))),
                        }),
                    },
                ],
            }),
            scope_spans: vec![proto::ScopeSpans {
                scope: Some(proto::InstrumentationScope {
                    name: "lucille".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                }),
                spans,
            }],
        }],
    }
}

/// Asks the exporter to send what it holds, and answers when it did.
type FlushRequest = Sender<()>;

struct Exporter {
    flush: Sender<FlushRequest>,
}

static EXPORTER: OnceLock<Exporter> = OnceLock::new();

/// Starts the process's exporter (once: a process traces to one collector; a later call with
/// other settings logs that they are not used).
pub fn start(settings: &TracingSettings) {
    let mut started = false;
    EXPORTER.get_or_init(|| {
        started = true;
        let (spans_tx, spans) = bounded(BUFFER);
        let (flush, flushes) = bounded::<FlushRequest>(16);
        let ratio = settings.sample_ratio;
        let settings = settings.clone();
        let spawned = std::thread::Builder::new()
            .name("lucille-otlp".into())
            .spawn(move || export_loop(&settings, &spans, &flushes));
        match spawned {
            Ok(_) => {
                lucille_core::trace::install(spans_tx, ratio);
            }
            Err(e) => tracing::error!("cannot start the trace exporter: {e}; nothing is traced"),
        }
        Exporter { flush }
    });
    if started {
        tracing::info!(
            "tracing {:.0}% of documents to {}",
            settings.sample_ratio * 100.0,
            settings.endpoint
        );
    }
}

/// Sends every span made so far, waiting at most `timeout` (at the end of a run, before the
/// process may exit).
pub fn flush(timeout: Duration) {
    let Some(e) = EXPORTER.get() else { return };
    let (done, wait) = bounded(1);
    if e.flush.try_send(done).is_ok() {
        let _ = wait.recv_timeout(timeout);
    }
}

fn export_loop(
    settings: &TracingSettings,
    spans: &Receiver<SpanData>,
    flushes: &Receiver<FlushRequest>,
) {
    let client = HttpClient::new("OTLP", RetryPolicy::default(), None, false, Auth::None)
        .with_timeout(EXPORT_TIMEOUT);
    let mut batch: Vec<SpanData> = Vec::with_capacity(BATCH);
    let mut first_at = Instant::now();
    let mut warned: Option<Instant> = None;
    loop {
        let mut asked: Vec<FlushRequest> = flushes.try_iter().collect();
        if !asked.is_empty() {
            // Everything made before the request is in the buffer: take it all.
            batch.extend(spans.try_iter());
        }
        match spans.recv_timeout(Duration::from_millis(50)) {
            Ok(span) => {
                if batch.is_empty() {
                    first_at = Instant::now();
                }
                batch.push(span);
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                asked.extend(flushes.try_iter());
                if batch.is_empty() && asked.is_empty() {
                    return;
                }
            }
        }
        if batch.len() >= BATCH
            || (!batch.is_empty() && first_at.elapsed() >= LINGER)
            || !asked.is_empty()
        {
            for chunk in batch.chunks(BATCH) {
                export(&client, settings, chunk, &mut warned);
            }
            batch.clear();
        }
        for done in asked {
            let _ = done.send(());
        }
    }
}

fn export(
    client: &HttpClient,
    settings: &TracingSettings,
    spans: &[SpanData],
    warned: &mut Option<Instant>,
) {
    let body = request(&settings.service_name, spans).encode_to_vec();
    let failure = match client.post_bytes(
        &settings.endpoint,
        "application/x-protobuf",
        &body,
        &settings.headers,
    ) {
        Ok(r) if r.ok() => None,
        Ok(r) => Some(format!(
            "HTTP {}: {}",
            r.status,
            lucille_http::snippet(&r.body)
        )),
        Err(e) => Some(e.to_string()),
    };
    if let Some(why) = failure {
        lucille_core::metrics::global().traces_dropped(spans.len() as u64);
        // Once a minute at most: a collector that is down must not flood the log.
        if warned.is_none_or(|w| w.elapsed() >= Duration::from_secs(60)) {
            *warned = Some(Instant::now());
            tracing::warn!(
                "trace export to {} failed ({why}); {} spans dropped (lucille_traces_dropped_total counts them)",
                settings.endpoint,
                spans.len()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_encodes_with_its_ids_parent_attributes_and_error_status() {
        let span = SpanData::new("stage", [7; 16], [8; 8], Some([9; 8]), SystemTime::now())
            .attr("lucille.stage", "copy")
            .failed(Some("boom"));
        let bytes = request("svc", &[span]).encode_to_vec();
        let back = proto::ExportTraceServiceRequest::decode(bytes.as_slice()).expect("decodes");
        let rs = &back.resource_spans[0];
        let s = &rs.scope_spans[0].spans[0];
        assert_eq!(
            (s.trace_id.as_slice(), s.span_id.as_slice()),
            (&[7u8; 16][..], &[8u8; 8][..])
        );
        assert_eq!(s.parent_span_id, vec![9u8; 8]);
        assert_eq!(s.name, "stage");
        assert!(s.end_time_unix_nano >= s.start_time_unix_nano && s.start_time_unix_nano > 0);
        assert_eq!(
            s.status.as_ref().map(|st| (st.code, st.message.as_str())),
            Some((2, "boom"))
        );
        assert!(s.attributes.contains(&text("lucille.stage", "copy")));
        assert!(s.attributes.contains(&text("lucille.error", "boom")));
        assert!(rs
            .resource
            .as_ref()
            .is_some_and(|r| r.attributes.contains(&text("service.name", "svc"))));
    }
}
