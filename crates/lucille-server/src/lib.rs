//! The HTTP server of every long-running Lucille-rs process: the metrics and health
//! endpoints (`lucille-observe`) and the service's API and console are routes served here.
//! A [`Server`] binds its address before it returns (so a port in use is an error the caller
//! reports before any work starts), serves its routes with axum on a single-threaded tokio
//! runtime in a thread of its own (the pipeline's threads never run a request), and stops
//! when dropped: it stops accepting, lets requests in progress end, and joins its thread.

use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::thread::JoinHandle;

pub use axum;

/// Why a server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot resolve {host}:{port}: {source}")]
    Resolve {
        host: String,
        port: u16,
        source: std::io::Error,
    },
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: String,
        source: std::io::Error,
    },
    #[error("cannot start the {name} server: {source}")]
    Start {
        name: String,
        source: std::io::Error,
    },
}

/// A running server; dropping it stops it.
pub struct Server {
    addr: SocketAddr,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Binds `host:port` (port 0: one the system picks) and serves `routes` there; `name`
    /// names the thread and the log lines.
    pub fn start(
        name: &str,
        host: &str,
        port: u16,
        routes: axum::Router,
    ) -> Result<Server, ServerError> {
        let addrs: Vec<SocketAddr> = (host, port)
            .to_socket_addrs()
            .map_err(|source| ServerError::Resolve {
                host: host.to_string(),
                port,
                source,
            })?
            .collect();
        let listener = TcpListener::bind(&addrs[..]).map_err(|source| ServerError::Bind {
            addr: format!("{host}:{port}"),
            source,
        })?;
        let start_err = |source| ServerError::Start {
            name: name.to_string(),
            source,
        };
        let addr = listener.local_addr().map_err(start_err)?;
        listener.set_nonblocking(true).map_err(start_err)?;
        // Timers too: a route may wait (the service's progress streams poll their run).
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(start_err)?;
        let (shutdown, stopped) = tokio::sync::oneshot::channel::<()>();
        let label = name.to_string();
        let thread = std::thread::Builder::new()
            .name(format!("lucille-{name}-http"))
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(listener) {
                        Ok(l) => l,
                        Err(e) => {
                            tracing::error!("the {label} server cannot listen: {e}");
                            return;
                        }
                    };
                    let served = axum::serve(listener, routes)
                        .with_graceful_shutdown(async {
                            let _ = stopped.await;
                        })
                        .await;
                    if let Err(e) = served {
                        tracing::error!("the {label} server stopped: {e}");
                    }
                });
            })
            .map_err(start_err)?;
        Ok(Server {
            addr,
            shutdown: Some(shutdown),
            thread: Some(thread),
        })
    }

    /// The address it listens on (with the port the system picked for port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(s) = self.shutdown.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::get;

    fn get_text(url: &str) -> Result<String, ureq::Error> {
        ureq::get(url).call()?.body_mut().read_to_string()
    }

    #[test]
    fn serves_its_routes_on_a_picked_port_until_dropped() {
        let routes = axum::Router::new().route("/hello", get(|| async { "hi" }));
        let server = Server::start("test", "127.0.0.1", 0, routes).expect("starts");
        let url = format!("http://{}/hello", server.addr());
        assert_ne!(server.addr().port(), 0);
        assert_eq!(get_text(&url).expect("answers"), "hi");
        drop(server);
        assert!(get_text(&url).is_err(), "stopped when dropped");
    }

    #[test]
    fn a_port_in_use_is_an_error_naming_the_address() {
        let first = Server::start("test", "127.0.0.1", 0, axum::Router::new()).expect("starts");
        let port = first.addr().port();
        let second = Server::start("test", "127.0.0.1", port, axum::Router::new());
        let message = second.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            message.starts_with(&format!("cannot listen on 127.0.0.1:{port}")),
            "{message}"
        );
    }
}
