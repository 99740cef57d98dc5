//! Test support: small local HTTP servers that stand in for the services the HTTP client talks
//! to (search engines, model servers, web pages): `Mock` (tiny_http, a handler per request)
//! and `FaultServer` (raw TCP: answers, hangs or goes down as its handler decides).

use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::Value;

/// A request as the mock saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    /// Path and query.
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Seen {
    pub fn path(&self) -> &str {
        self.url.split('?').next().unwrap_or("")
    }
    pub fn query(&self) -> &str {
        self.url.split_once('?').map_or("", |(_, q)| q)
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

pub type Handler = Box<dyn FnMut(&Seen) -> (u16, String) + Send>;

/// A running mock server; stops when dropped.
pub struct Mock {
    pub url: String,
    pub log: Arc<Mutex<Vec<Seen>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// A port nothing listens on (yet).
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

impl Mock {
    pub fn start(handler: Handler) -> Mock {
        Self::start_on(0, handler)
    }

    pub fn start_on(port: u16, mut handler: Handler) -> Mock {
        let server = tiny_http::Server::http(("127.0.0.1", port)).unwrap();
        let port = server.server_addr().to_ip().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let log = Arc::new(Mutex::new(Vec::new()));
        let (s2, l2) = (stop.clone(), log.clone());
        let thread = std::thread::spawn(move || {
            while !s2.load(Ordering::SeqCst) {
                let Ok(Some(mut req)) = server.recv_timeout(Duration::from_millis(20)) else {
                    continue;
                };
                let mut body = String::new();
                let _ = req.as_reader().read_to_string(&mut body);
                let seen = Seen {
                    method: req.method().to_string(),
                    url: req.url().to_string(),
                    headers: req
                        .headers()
                        .iter()
                        .map(|h| (h.field.to_string(), h.value.to_string()))
                        .collect(),
                    body,
                };
                let (status, text) = handler(&seen);
                l2.lock().push(seen);
                let header =
                    tiny_http::Header::from_bytes("Content-Type", "application/json").unwrap();
                let _ = req.respond(
                    tiny_http::Response::from_string(text)
                        .with_status_code(status)
                        .with_header(header),
                );
            }
        });
        Mock {
            url: format!("http://127.0.0.1:{port}"),
            log,
            stop,
            thread: Some(thread),
        }
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.log.lock().clone()
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

pub fn obj(v: Value) -> serde_json::Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}

/// What the fault-injecting server does with one request.
pub enum Fault {
    /// Answer with a status, extra headers and a JSON body.
    Answer(u16, Vec<(&'static str, String)>, String),
    /// Read the request and never answer (the connection stays open until the server stops).
    Hang,
    /// Close the connection without answering, then stop listening for `Duration`
    /// (`Duration::MAX`: for good): the server went down mid-run.
    GoDown(Duration),
}

pub type FaultHandler = Box<dyn FnMut(&Seen) -> Fault + Send>;

/// A raw-TCP HTTP/1.1 server (one request per connection, `Connection: close`) that can
/// answer, hang without answering, or go down and come back, as its handler decides.
/// `log` holds every request it read, with when it was read.
pub struct FaultServer {
    pub url: String,
    pub log: Arc<Mutex<Vec<(std::time::Instant, Seen)>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl FaultServer {
    /// Starts on `port` (0: any) after `delay` (the server is down at start until then).
    pub fn start(port: u16, delay: Duration, mut handler: FaultHandler) -> FaultServer {
        // Bound here when up at start, so the port is ours before the caller uses it.
        let mut first = (delay.is_zero()).then(|| {
            let l = TcpListener::bind(("127.0.0.1", port)).unwrap();
            l.set_nonblocking(true).unwrap();
            l
        });
        let port = match &first {
            Some(l) => l.local_addr().unwrap().port(),
            None if port == 0 => free_port(),
            None => port,
        };
        let stop = Arc::new(AtomicBool::new(false));
        let log = Arc::new(Mutex::new(Vec::new()));
        let (s2, l2) = (stop.clone(), log.clone());
        let thread = std::thread::spawn(move || {
            let mut held = Vec::new();
            let mut up_at = std::time::Instant::now() + delay;
            let mut listener: Option<TcpListener> = first.take();
            while !s2.load(Ordering::SeqCst) {
                if listener.is_none() {
                    if std::time::Instant::now() < up_at {
                        std::thread::sleep(Duration::from_millis(5));
                        continue;
                    }
                    let Ok(l) = TcpListener::bind(("127.0.0.1", port)) else {
                        std::thread::sleep(Duration::from_millis(5));
                        continue;
                    };
                    let _ = l.set_nonblocking(true);
                    listener = Some(l);
                }
                let Some(l) = &listener else { continue };
                let mut stream = match l.accept() {
                    Ok((s, _)) => s,
                    Err(_) => {
                        std::thread::sleep(Duration::from_millis(2));
                        continue;
                    }
                };
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let Some(seen) = read_request(&mut stream) else {
                    continue;
                };
                let fault = handler(&seen);
                l2.lock().push((std::time::Instant::now(), seen));
                match fault {
                    Fault::Answer(status, headers, body) => {
                        use std::io::Write;
                        let mut head = format!(
                            "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
                            body.len()
                        );
                        for (k, v) in headers {
                            head.push_str(&format!("{k}: {v}\r\n"));
                        }
                        head.push_str("\r\n");
                        let _ = stream.write_all(head.as_bytes());
                        let _ = stream.write_all(body.as_bytes());
                        let _ = stream.flush();
                    }
                    Fault::Hang => held.push(stream),
                    Fault::GoDown(d) => {
                        let _ = stream.shutdown(std::net::Shutdown::Both);
                        drop(stream);
                        listener = None;
                        up_at = std::time::Instant::now()
                            .checked_add(d)
                            .unwrap_or(std::time::Instant::now() + Duration::from_secs(86400));
                    }
                }
            }
        });
        FaultServer {
            url: format!("http://127.0.0.1:{port}"),
            log,
            stop,
            thread: Some(thread),
        }
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.log.lock().iter().map(|(_, s)| s.clone()).collect()
    }
}

impl Drop for FaultServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Reads one HTTP/1.1 request (headers, then `Content-Length` bytes of body).
fn read_request(stream: &mut std::net::TcpStream) -> Option<Seen> {
    use std::io::Read;
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    let end = loop {
        if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&data[..end]).to_string();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let (method, url) = (first.next()?.to_string(), first.next()?.to_string());
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = data[end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&buf[..n]);
    }
    Some(Seen {
        method,
        url,
        headers,
        body: String::from_utf8_lossy(&body).to_string(),
    })
}
