//! `/api/indexes`: the embedded indexes the service's runs wrote, and a search page over one.
//! Only an index the service lists is reachable, by its name; a request never names a path.

use std::sync::Arc;

use lucille_server::axum::extract::{Path, Query, State};
use lucille_server::axum::http::StatusCode;
#[cfg(feature = "tantivy")]
use lucille_server::axum::response::IntoResponse;
use lucille_server::axum::response::Response;
#[cfg(feature = "tantivy")]
use serde_json::{json, Value};

#[cfg(feature = "tantivy")]
use super::{blocking, json_response, store_error};
use super::{error, App};

/// Hits on a page when `limit` is not given, and the most a page holds.
#[cfg(feature = "tantivy")]
const DEFAULT_LIMIT: usize = 10;
#[cfg(feature = "tantivy")]
const MAX_LIMIT: usize = 100;

/// `GET /api/indexes`: `{"indexes": [{"name", "runId", "documents", "path"}]}`, the most
/// recently written first; an index whose folder is gone (or holds no index yet) is left out.
#[cfg(feature = "tantivy")]
pub async fn list(State(app): State<Arc<App>>) -> Response {
    let rows = match app.executor.indexes() {
        Ok(rows) => rows,
        Err(e) => return store_error(&e),
    };
    let listed = blocking(move || {
        rows.into_iter()
            .filter_map(|row| {
                let documents =
                    lucille_tantivy::indexer::tantivy::document_count(&row.path).ok()?;
                Some(json!({
                    "name": row.name,
                    "runId": row.run_id,
                    "documents": documents,
                    "path": row.path.to_string_lossy(),
                }))
            })
            .collect::<Vec<Value>>()
    })
    .await;
    match listed {
        Ok(indexes) => json_response(StatusCode::OK, &json!({ "indexes": indexes })),
        Err(r) => r.into_response(),
    }
}

/// `GET /api/indexes/{name}/search?q=&limit=&offset=&facet=`: a page of hits (stored fields
/// and snippets), the match count and a field's value counts; a query the index cannot run is
/// `400 {"error", "position"}` (the character where its syntax breaks, else null).
#[cfg(feature = "tantivy")]
pub async fn search(
    State(app): State<Arc<App>>,
    Path(name): Path<String>,
    Query(params): Query<Vec<(String, String)>>,
) -> Response {
    use lucille_tantivy::indexer::tantivy::{search_page, QueryError, SearchError};

    let request = match SearchParams::read(&params) {
        Ok(r) => r,
        Err(message) => return error(StatusCode::BAD_REQUEST, &message),
    };
    let row = match app.executor.indexes() {
        Ok(rows) => rows.into_iter().find(|r| r.name == name),
        Err(e) => return store_error(&e),
    };
    let Some(row) = row else {
        return error(
            StatusCode::NOT_FOUND,
            &format!("no index {name:?}: GET /api/indexes lists the ones the runs wrote"),
        );
    };
    let facet = request.facet.clone();
    let page = blocking(move || {
        search_page(
            &row.path,
            &request.q,
            request.limit,
            request.offset,
            true,
            request.facet.as_deref(),
        )
    })
    .await;
    let page = match page {
        Ok(Ok(page)) => page,
        Ok(Err(SearchError::Query { reason, .. })) => {
            let position = match reason {
                QueryError::Syntax { position } => Some(position),
                _ => None,
            };
            return json_response(
                StatusCode::BAD_REQUEST,
                &json!({ "error": reason.to_string(), "position": position }),
            );
        }
        Ok(Err(e @ SearchError::Missing(_))) => {
            return error(StatusCode::NOT_FOUND, &e.to_string())
        }
        Ok(Err(e)) => {
            tracing::error!("{e}");
            return error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string());
        }
        Err(r) => return r.into_response(),
    };
    let hits: Vec<Value> = page
        .hits
        .into_iter()
        .map(|mut hit| {
            let id = hit.doc.remove("id").unwrap_or(Value::Null);
            json!({
                "id": id,
                "score": hit.score,
                "fields": hit.doc,
                "snippets": hit.snippets.unwrap_or_default(),
            })
        })
        .collect();
    let mut facets = serde_json::Map::new();
    if let Some(field) = facet {
        let counts: Vec<Value> = page
            .facets
            .into_iter()
            .map(|(value, count)| json!({ "value": value, "count": count }))
            .collect();
        facets.insert(field, Value::Array(counts));
    }
    json_response(
        StatusCode::OK,
        &json!({ "total": page.total, "hits": hits, "facets": facets }),
    )
}

/// A search request's query string.
#[cfg(feature = "tantivy")]
#[derive(Debug, PartialEq)]
struct SearchParams {
    q: String,
    limit: usize,
    offset: usize,
    facet: Option<String>,
}

#[cfg(feature = "tantivy")]
impl SearchParams {
    fn read(params: &[(String, String)]) -> Result<SearchParams, String> {
        let mut p = SearchParams {
            q: String::new(),
            limit: DEFAULT_LIMIT,
            offset: 0,
            facet: None,
        };
        let number = |k: &str, v: &str| {
            v.parse::<usize>()
                .map_err(|_| format!("{k} must be a whole number, not {v:?}"))
        };
        for (k, v) in params {
            match k.as_str() {
                "q" => p.q = v.clone(),
                "limit" => p.limit = number(k, v)?.clamp(1, MAX_LIMIT),
                "offset" => p.offset = number(k, v)?,
                "facet" => p.facet = Some(v.trim().to_string()).filter(|f| !f.is_empty()),
                other => {
                    return Err(format!(
                        "unknown parameter {other:?}: the search takes q, limit, offset and facet"
                    ))
                }
            }
        }
        Ok(p)
    }
}

/// Without the embedded index in this build: 501.
#[cfg(not(feature = "tantivy"))]
pub async fn list(State(_): State<Arc<App>>) -> Response {
    not_built()
}

#[cfg(not(feature = "tantivy"))]
pub async fn search(
    State(_): State<Arc<App>>,
    Path(_): Path<String>,
    Query(_): Query<Vec<(String, String)>>,
) -> Response {
    not_built()
}

#[cfg(not(feature = "tantivy"))]
fn not_built() -> Response {
    error(
        StatusCode::NOT_IMPLEMENTED,
        "this build of lucille has no embedded index (the `tantivy` feature)",
    )
}

#[cfg(all(test, feature = "tantivy"))]
mod tests {
    use super::*;

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_search_reads_its_parameters_and_refuses_unknown_ones() {
        let p = SearchParams::read(&pairs(&[
            ("q", "title:rust AND body"),
            ("limit", "500"),
            ("offset", "20"),
            ("facet", "kind"),
        ]))
        .unwrap();
        assert_eq!(
            p,
            SearchParams {
                q: "title:rust AND body".into(),
                limit: MAX_LIMIT,
                offset: 20,
                facet: Some("kind".into()),
            }
        );
        let defaults = SearchParams::read(&[]).unwrap();
        assert_eq!((defaults.limit, defaults.offset), (DEFAULT_LIMIT, 0));
        assert_eq!(
            SearchParams::read(&pairs(&[("limit", "ten")])).unwrap_err(),
            "limit must be a whole number, not \"ten\""
        );
        assert!(SearchParams::read(&pairs(&[("path", "/etc")]))
            .unwrap_err()
            .contains("unknown parameter \"path\""));
    }
}
