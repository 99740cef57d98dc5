//! `GET /api/runs/{id}/events`: a run's progress as Server-Sent Events: a `progress` event
//! (data: the RUN object) whenever it changes, looked at five times a second, then one `end`
//! event with the final RUN when it has ended (at once for a run that already has). The stream
//! also ends when the service stops.

use std::convert::Infallible;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::{self, Stream};
use lucille_server::axum::extract::{Path, State};
use lucille_server::axum::http::StatusCode;
use lucille_server::axum::response::sse::{Event, KeepAlive, Sse};
use lucille_server::axum::response::{IntoResponse, Response};

use super::{error, store_error, App};

const POLL: Duration = Duration::from_millis(200);

pub async fn stream(State(app): State<Arc<App>>, Path(id): Path<String>) -> Response {
    match app.executor.view(&id) {
        Ok(Some(_)) => {}
        Ok(None) => return error(StatusCode::NOT_FOUND, &format!("no run {id}")),
        Err(e) => return store_error(&e),
    }
    Sse::new(events(app, id))
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// Where a stream is: the last data sent, and whether it has ended.
struct Cursor {
    app: Arc<App>,
    id: String,
    last: Option<String>,
    first: bool,
    done: bool,
}

fn events(app: Arc<App>, id: String) -> impl Stream<Item = Result<Event, Infallible>> {
    let start = Cursor {
        app,
        id,
        last: None,
        first: true,
        done: false,
    };
    stream::unfold(start, |mut c| async move {
        loop {
            if c.done {
                return None;
            }
            if !c.first {
                tokio::time::sleep(POLL).await;
            }
            c.first = false;
            let view = match c.app.executor.view(&c.id) {
                Ok(Some(v)) => v,
                Ok(None) | Err(_) => return None,
            };
            let data = view.to_json().to_string();
            if view.state.is_final() {
                c.done = true;
                return Some((Ok(Event::default().event("end").data(data)), c));
            }
            if c.app.stopping.load(Ordering::SeqCst) {
                return None;
            }
            if c.last.as_deref() != Some(data.as_str()) {
                c.last = Some(data.clone());
                return Some((Ok(Event::default().event("progress").data(data)), c));
            }
        }
    })
}
