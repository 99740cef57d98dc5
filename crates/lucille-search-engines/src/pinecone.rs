//! Pinecone's REST API as the Pinecone components use it (the indexer backend and the
//! EmitDocsToDeleteByPrefix stage): the index's data-plane host from the control plane, its
//! error texts, and listing ids by prefix.

use serde_json::Value;

use crate::config::{ComponentConfig, ConfigError, Kind, OptionValue};
use crate::http::{self, HttpClient, HttpError};

/// The control plane Lucille's Java client asks.
pub const CONTROL_PLANE: &str = "https://api.pinecone.io";
/// The namespace Lucille writes to without `namespaces`.
pub const DEFAULT_NAMESPACE: &str = "default";

/// A checked base URL from a host name (https assumed) or a full URL.
pub(crate) fn host_url(
    config: &ComponentConfig,
    key: &str,
    value: &str,
) -> Result<String, ConfigError> {
    let full = if value.contains("://") {
        value.to_string()
    } else {
        format!("https://{value}")
    };
    match http::parse_url(&full) {
        Ok(b) if b.credentials.is_some() => {
            Err(config.error(key, "must not carry credentials (the key goes in apiKey)"))
        }
        Ok(b) => Ok(b.url),
        Err(e) => Err(config.error(key, e.to_string())),
    }
}

/// An option holding a host name (https assumed) or a base URL, checked as it is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostUrl(pub(crate) String);

impl OptionValue for HostUrl {
    fn kind() -> Kind {
        Kind::String
    }

    fn read(config: &ComponentConfig, key: &str) -> Result<Option<Self>, ConfigError> {
        match config.string(key)? {
            None => Ok(None),
            Some(v) => host_url(config, key, &v).map(|u| Some(HostUrl(u))),
        }
    }
}

/// Pinecone's error text (`{"message": ...}` or `{"error": {"message": ...}}`), else the body.
pub(crate) fn message(body: &str) -> String {
    let v: Option<Value> = serde_json::from_str(body).ok();
    v.as_ref()
        .and_then(|v| {
            v.get("message")
                .or_else(|| v.get("error").and_then(|e| e.get("message")))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_else(|| http::snippet(body))
}

/// Why the control plane or a listing gave no usable answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PineconeError {
    /// Refused, timed out, or a retried status once the retries ran out.
    #[error(transparent)]
    Http(#[from] HttpError),
    /// An error status, with Pinecone's text ([`message`]).
    #[error("Pinecone cannot {doing}: HTTP {status}: {message}")]
    Status {
        doing: String,
        status: u16,
        message: String,
    },
    /// A success status whose body is no JSON.
    #[error("unreadable Pinecone {what}: {source}")]
    Unreadable {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    /// The index exists but cannot take requests yet (or any more).
    #[error(
        "Pinecone index {index:?} is not usable: its state is {state} (wait until it is \
         Ready, or name another index)"
    )]
    NotUsable { index: String, state: String },
    /// The control plane's description names no data-plane host.
    #[error(
        "Pinecone's description of index {index:?} has no host (set host to the index's \
         data-plane URL)"
    )]
    NoHost { index: String },
    /// A listing page whose `vectors` is not a list ([`http::snippet`] of it).
    #[error("Pinecone list response: \"vectors\" is not a list: {0}")]
    VectorsNotAList(String),
    /// A listing entry without an `id` ([`http::snippet`] of it).
    #[error("Pinecone list response: an entry without an id: {0}")]
    EntryWithoutId(String),
    /// The server kept answering with a next page.
    #[error(
        "Pinecone kept paging the ids with prefix {prefix:?} in namespace {namespace:?} \
         after {MAX_PAGES} pages"
    )]
    EndlessPaging { prefix: String, namespace: String },
}

/// `GET url` as JSON: an error status is "Pinecone cannot {doing}: HTTP status: message",
/// a body that is no JSON "unreadable Pinecone {what}: ...".
fn get_json(
    client: &HttpClient,
    url: &str,
    doing: &str,
    what: &'static str,
) -> Result<Value, PineconeError> {
    let reply = client.send("GET", url, "application/json", None)?;
    if !reply.ok() {
        return Err(PineconeError::Status {
            doing: doing.to_string(),
            status: reply.status,
            message: message(&reply.body),
        });
    }
    serde_json::from_str(&reply.body).map_err(|source| PineconeError::Unreadable { what, source })
}

/// What the control plane says of an index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IndexInfo {
    /// The data-plane base URL.
    pub host: String,
    pub dimension: Option<usize>,
}

/// Asks the control plane (`GET {control_plane}/indexes/{index}`) for the index's host, and
/// checks it is usable (as Lucille's `PineconeUtils.isClientStable`).
pub(crate) fn describe_index(
    client: &HttpClient,
    control_plane: &str,
    index: &str,
) -> Result<IndexInfo, PineconeError> {
    let url = format!("{control_plane}/indexes/{}", http::encode(index));
    let v = get_json(
        client,
        &url,
        &format!("describe index {index:?}"),
        "index description",
    )?;
    let state = v
        .pointer("/status/state")
        .and_then(Value::as_str)
        .unwrap_or("");
    if ["Initializing", "InitializationFailed", "Terminating"]
        .iter()
        .any(|s| s.eq_ignore_ascii_case(state))
    {
        return Err(PineconeError::NotUsable {
            index: index.to_string(),
            state: state.to_string(),
        });
    }
    let host = v
        .get("host")
        .and_then(Value::as_str)
        .ok_or_else(|| PineconeError::NoHost {
            index: index.to_string(),
        })?;
    let host = if host.contains("://") {
        host.trim_end_matches('/').to_string()
    } else {
        format!("https://{}", host.trim_end_matches('/'))
    };
    Ok(IndexInfo {
        host,
        dimension: v
            .get("dimension")
            .and_then(Value::as_u64)
            .map(|d| d as usize),
    })
}

/// Most pages one listing follows: a server whose pagination never ends is an error, not a
/// stage that never returns.
const MAX_PAGES: usize = 100_000;

/// Every id in `namespace` that starts with `prefix` (`GET {host}/vectors/list`, following
/// `pagination.next`; Pinecone serverless pages 100 ids by default).
pub(crate) fn list_ids(
    client: &HttpClient,
    host: &str,
    namespace: &str,
    prefix: &str,
) -> Result<Vec<String>, PineconeError> {
    let mut ids = Vec::new();
    let mut token: Option<String> = None;
    let doing = format!("list ids with prefix {prefix:?} in namespace {namespace:?}");
    for _ in 0..MAX_PAGES {
        let mut url = format!(
            "{host}/vectors/list?namespace={}&prefix={}",
            http::encode(namespace),
            http::encode(prefix)
        );
        if let Some(t) = &token {
            url.push_str(&format!("&paginationToken={}", http::encode(t)));
        }
        let v = get_json(client, &url, &doing, "list response")?;
        let vectors = match v.get("vectors") {
            None | Some(Value::Null) => &[][..],
            Some(Value::Array(a)) => a.as_slice(),
            Some(other) => {
                return Err(PineconeError::VectorsNotAList(http::snippet(
                    &other.to_string(),
                )))
            }
        };
        for item in vectors {
            match item.get("id").and_then(Value::as_str) {
                Some(id) => ids.push(id.to_string()),
                None => {
                    return Err(PineconeError::EntryWithoutId(http::snippet(
                        &item.to_string(),
                    )))
                }
            }
        }
        token = v
            .pointer("/pagination/next")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .map(str::to_string);
        if token.is_none() {
            return Ok(ids);
        }
    }
    Err(PineconeError::EndlessPaging {
        prefix: prefix.to_string(),
        namespace: namespace.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::PineconeError;

    #[test]
    fn errors_name_the_index_and_say_what_to_do() {
        let e = PineconeError::NotUsable {
            index: "idx".into(),
            state: "Initializing".into(),
        };
        assert_eq!(
            e.to_string(),
            "Pinecone index \"idx\" is not usable: its state is Initializing (wait until it is \
             Ready, or name another index)"
        );
        let e = PineconeError::NoHost {
            index: "idx".into(),
        };
        assert_eq!(
            e.to_string(),
            "Pinecone's description of index \"idx\" has no host (set host to the index's \
             data-plane URL)"
        );
        let e = PineconeError::Status {
            doing: "describe index \"idx\"".into(),
            status: 404,
            message: "Resource idx not found".into(),
        };
        assert_eq!(
            e.to_string(),
            "Pinecone cannot describe index \"idx\": HTTP 404: Resource idx not found"
        );
    }
}
