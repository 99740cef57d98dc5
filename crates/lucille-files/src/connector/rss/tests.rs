use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};

use super::*;
use crate::runner::{run, test_history, RunMode, RunOptions, RunResult};

fn data_dir() -> PathBuf {
    crate::test_service::repo_path("tests/data/rss")
}

fn run_rss(connector: Value, base: &Path) -> RunResult {
    let mut c = connector;
    c["name"] = json!("feed");
    c["class"] = json!("RSSConnector");
    let config = json!({"connectors": [c]});
    let opts = RunOptions {
        mode: RunMode::Test,
        ..Default::default()
    };
    run(&config, Some(base), &opts).unwrap()
}

fn docs(r: &RunResult) -> Vec<Value> {
    assert!(r.ok, "{}", r.summary);
    test_history(r)
        .0
        .into_iter()
        .map(|d| {
            let mut v = d.into_value();
            if let Value::Object(m) = &mut v {
                m.shift_remove("run_id");
            }
            v
        })
        .collect()
}

#[test]
fn rss_items_become_documents_with_lucilles_fields() {
    let r = run_rss(json!({"rssURL": "news.rss.xml"}), &data_dir());
    let mut got = docs(&r);
    // Without guid or link, the id is the MD5 of the item's fields: stable across runs.
    let third_id = got[2]["id"].take();
    assert_eq!(
        got,
        vec![
            json!({"id": "amu042125",
                   "author": "desk@news.example.com (Market Desk)",
                   "comments": "https://news.example.com/amu042125#comments",
                   "content": "<p>All indices are lower by 3%+.</p>",
                   "description": "The Dow is <b>down</b> more than 1,000 points.",
                   "guid": "amu042125",
                   "link": "https://news.example.com/amu042125",
                   "title": "Afternoon Market Update \u{2013} April 21, 2025",
                   "categories": ["Markets", "Stocks & Bonds"],
                   "enclosures": [{"type": "audio/mpeg", "url": "https://news.example.com/amu.mp3", "length": 123456}],
                   "isPermaLink": false,
                   "pubDate": "2025-04-21T20:00:00Z"}),
            json!({"id": "https://news.example.com/uber-news042125",
                   "author": "Jane Roe",
                   "link": "https://news.example.com/uber-news042125",
                   "title": "BREAKING: UBER SUED BY FTC",
                   "pubDate": "2025-04-21T14:30:00Z"}),
            json!({"id": null,
                   "description": "No link, no guid, no date.",
                   "title": "Leading Economic Indicators"}),
        ]
    );
    let third = third_id.as_str().unwrap().to_string();
    assert!(
        third.len() == 32 && third.bytes().all(|b| b.is_ascii_hexdigit()),
        "{third}"
    );
    let again = run_rss(json!({"rssURL": "news.rss.xml"}), &data_dir());
    assert_eq!(
        docs(&again)[2]["id"],
        json!(third),
        "ids must be stable across runs"
    );
}

#[test]
fn atom_entries_are_read_too() {
    let r = run_rss(
        json!({"rssURL": format!("file://{}", data_dir().join("blog.atom.xml").display()),
               "docIdPrefix": "blog-"}),
        Path::new("/"),
    );
    assert_eq!(
        docs(&r),
        vec![
            json!({"id": "blog-urn:uuid:1225c695-cfb8-4ebb-aaaa-80da344efa6a",
                   "author": "Ada",
                   "content": "<p>Full text</p>",
                   "description": "Parsing feeds as they stream.",
                   "guid": "urn:uuid:1225c695-cfb8-4ebb-aaaa-80da344efa6a",
                   "link": "https://blog.example.com/posts/1",
                   "title": "Rust <3 XML",
                   "categories": ["rust", "xml"],
                   "pubDate": "2025-04-30T06:15:00Z"}),
            json!({"id": "blog-tag:blog.example.com,2025:2",
                   "guid": "tag:blog.example.com,2025:2",
                   "link": "https://blog.example.com/posts/2",
                   "title": "Second post",
                   "pubDate": "2025-05-01T10:00:00Z"}),
        ]
    );
}

#[test]
fn random_ids_without_guids_and_the_pub_date_cutoff() {
    let r = run_rss(
        json!({"rssURL": "news.rss.xml", "useGuidForDocID": false}),
        &data_dir(),
    );
    let got = docs(&r);
    assert_eq!(got.len(), 3);
    assert!(got
        .iter()
        .all(|d| uuid::Uuid::parse_str(d["id"].as_str().unwrap()).is_ok()));

    // A fresh item (dated now) and an undated one pass a one-day cutoff; 2025's items do not.
    let dir = temp_dir("cutoff");
    let now = Utc::now().to_rfc2822();
    std::fs::write(
        dir.join("feed.xml"),
        format!(
            "<rss><channel><item><guid>new</guid><pubDate>{now}</pubDate></item>\
             <item><guid>old</guid><pubDate>Mon, 21 Apr 2025 16:00:00 GMT</pubDate></item>\
             <item><guid>undated</guid></item></channel></rss>"
        ),
    )
    .unwrap();
    let r = run_rss(json!({"rssURL": "feed.xml", "pubDateCutoff": "1d"}), &dir);
    let ids: Vec<Value> = docs(&r).iter().map(|d| d["id"].clone()).collect();
    assert_eq!(ids, [json!("new"), json!("undated")]);
}

fn temp_dir(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "lucille-rss-{name}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn malformed_feeds_are_clear_errors() {
    let r = run_rss(json!({"rssURL": "malformed.xml"}), &data_dir());
    assert!(!r.ok);
    assert!(
        r.summary.contains("malformed feed") && r.summary.contains("malformed.xml at byte"),
        "{}",
        r.summary
    );
    assert!(r.summary.contains("</description>"), "{}", r.summary);
    let r = run_rss(json!({"rssURL": "not-a-feed.html"}), &data_dir());
    assert!(
        r.summary
            .contains("not an RSS or Atom feed: the root element is <html>"),
        "{}",
        r.summary
    );
    let r = run_rss(json!({"rssURL": "missing.xml"}), &data_dir());
    assert!(
        r.summary.contains("cannot read the feed") && r.summary.contains("missing.xml"),
        "{}",
        r.summary
    );
}

#[test]
fn config_errors_are_reported_together() {
    let config = json!({"connectors": [{"name": "feed", "class": "RSSConnector",
        "rssURL": "ftp://example.com/feed", "runDuration": "10 parsecs", "pubDateCutoff": true}]});
    let errors = match crate::runner::plan(&config, None) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("accepted a bad config"),
    };
    assert!(
        errors.contains("must be an http(s) URL or a file path"),
        "{errors}"
    );
    assert!(errors.contains("\"10 parsecs\""), "{errors}");
    assert!(
        errors.contains("pubDateCutoff: must be a duration"),
        "{errors}"
    );
    assert!(errors.contains("must both be set"), "{errors}");
}

/// Serves `feeds[n]` for the n-th request (the last one after that) on 127.0.0.1, or
/// a 404 for any path other than /feed.xml.
fn serve(feeds: Vec<String>) -> (String, Arc<AtomicUsize>) {
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let port = server.server_addr().to_ip().unwrap().port();
    let requests = Arc::new(AtomicUsize::new(0));
    let counter = requests.clone();
    std::thread::spawn(move || {
        for request in server.incoming_requests() {
            if request.url() != "/feed.xml" {
                let _ =
                    request.respond(tiny_http::Response::from_string("no").with_status_code(404));
                continue;
            }
            let n = counter.fetch_add(1, Ordering::SeqCst);
            let body = feeds[n.min(feeds.len() - 1)].clone();
            let _ = request.respond(tiny_http::Response::from_string(body));
        }
    });
    (format!("http://127.0.0.1:{port}"), requests)
}

fn feed(guids: &[&str]) -> String {
    let items: String = guids
        .iter()
        .map(|g| format!("<item><title>t {g}</title><guid>{g}</guid></item>"))
        .collect();
    format!("<?xml version=\"1.0\"?><rss version=\"2.0\"><channel>{items}</channel></rss>")
}

#[test]
fn feeds_are_read_over_http() {
    let (base, _) = serve(vec![feed(&["a", "b"])]);
    let r = run_rss(
        json!({"rssURL": format!("{base}/feed.xml")}),
        Path::new("/"),
    );
    let ids: Vec<Value> = docs(&r).iter().map(|d| d["id"].clone()).collect();
    assert_eq!(ids, [json!("a"), json!("b")]);

    let r = run_rss(
        json!({"rssURL": format!("{base}/gone.xml")}),
        Path::new("/"),
    );
    assert!(!r.ok);
    assert!(
        r.summary.contains("gone.xml") && r.summary.contains("404"),
        "{}",
        r.summary
    );
}

#[test]
fn polling_publishes_only_items_new_since_the_last_refresh() {
    let (base, requests) = serve(vec![
        feed(&["a", "b", "c"]),
        feed(&["a", "b", "c", "d"]),
        feed(&["b", "c", "d"]),
    ]);
    let r = run_rss(
        json!({"rssURL": format!("{base}/feed.xml"), "runDuration": "1s",
               "refreshIncrement": "20ms"}),
        Path::new("/"),
    );
    let ids: Vec<Value> = docs(&r).iter().map(|d| d["id"].clone()).collect();
    // The expectation follows from how many refreshes happened, not from timing: "d" is new
    // on the second fetch; the third (and later) brings nothing new.
    let expected: &[&str] = match requests.load(Ordering::SeqCst) {
        0 => panic!("the feed was never fetched"),
        1 => &["a", "b", "c"],
        _ => &["a", "b", "c", "d"],
    };
    assert_eq!(ids, expected.iter().map(|i| json!(i)).collect::<Vec<_>>());
}

#[test]
fn a_stopping_run_ends_the_polling() {
    let (base, requests) = serve(vec![feed(&["a"]), feed(&["a", "b"])]);
    let opts = RunOptions {
        mode: RunMode::Test,
        ..Default::default()
    };
    let stop = opts.stop.clone();
    std::thread::spawn(move || {
        // After the third fetch began, the second one's new item has been published.
        while requests.load(Ordering::SeqCst) < 3 {
            std::thread::sleep(Duration::from_millis(5));
        }
        stop.store(true, Ordering::SeqCst);
    });
    // An hour of polling: the run only ends because the stop flag ends the wait.
    let config = json!({"connectors": [{"name": "feed", "class": "RSSConnector",
        "rssURL": format!("{base}/feed.xml"), "runDuration": "1h", "refreshIncrement": "20ms"}]});
    let r = run(&config, None, &opts).unwrap();
    let ids: Vec<String> = test_history(&r)
        .0
        .iter()
        .map(|d| d.id().to_string())
        .collect();
    assert_eq!(ids, ["a", "b"]);
}

#[test]
fn an_item_over_max_document_bytes_fails_and_the_feed_goes_on() {
    let all = run_rss(json!({"rssURL": "news.rss.xml"}), &data_dir());
    let items = docs(&all);
    let sizes: Vec<usize> = items.iter().map(|d| d.to_string().len()).collect();
    let (smallest, largest) = (*sizes.iter().min().unwrap(), *sizes.iter().max().unwrap());
    assert!(
        smallest < largest,
        "the test feed needs items of different sizes"
    );
    // A limit below the largest item: it FAILs with the feed and its id; the rest publish.
    let limit = largest - 1;
    let r = run_rss(
        json!({"rssURL": "news.rss.xml", "maxDocumentBytes": limit}),
        &data_dir(),
    );
    let c = &r.connectors[0];
    let big = sizes.iter().filter(|&&n| n > limit).count() as u64;
    assert!(big >= 1);
    assert_eq!(
        (c.published, c.failed),
        (items.len() as u64, big),
        "{}",
        r.summary
    );
    let (_, events) = test_history(&r);
    let fail = events
        .iter()
        .find(|e| e.kind == crate::accounting::EventType::Fail)
        .unwrap();
    let message = fail.message.as_deref().unwrap_or_default();
    assert!(
        message.contains("news.rss.xml: item ")
            && message.contains(&format!("larger than maxDocumentBytes ({limit})")),
        "{message}"
    );
}

#[test]
fn an_item_far_over_max_document_bytes_is_not_gathered_whole() {
    // Item 2 has 3 MB of text in many pieces (text, CDATA, entities), then its guid; the limit
    // is 1000 bytes. What it gathered is dropped as soon as it passes the limit, the rest is
    // read without keeping it, and it FAILs at its byte; items 1 and 3 publish.
    let piece = "some words &amp; more <![CDATA[raw <b>text</b>]]> ";
    let big = piece.repeat(3_000_000 / piece.len());
    let feed = format!(
        "<rss><channel><item><guid>g1</guid><title>one</title></item>\
         <item><title>two</title><description>{big}</description><content:encoded>{big}</content:encoded><guid>g2</guid></item>\
         <item><guid>g3</guid><title>three</title></item></channel></rss>"
    );
    let at = feed.find("<item><title>two").unwrap();
    let mut seen = Vec::new();
    let count = parse_feed(feed.as_bytes(), "big.xml", Some(1000), &mut |it| {
        // Nothing of the big item is kept but its guid, read after the limit was passed.
        let kept = Value::Object(it.fields()).to_string().len();
        seen.push((it.guid.clone(), it.too_big, kept));
        Ok(())
    })
    .unwrap();
    assert_eq!(count, 3);
    assert_eq!(seen[0].0.as_deref(), Some("g1"));
    assert_eq!(seen[0].1, None);
    assert_eq!(seen[1].1, Some(at as u64), "{:?}", seen[1]);
    assert_eq!(seen[1].0.as_deref(), Some("g2"));
    assert!(seen[1].2 < 100, "{:?}", seen[1]);
    assert_eq!((seen[2].0.as_deref(), seen[2].1), (Some("g3"), None));

    // Through a run: the item FAILs with the feed and its byte; the others publish.
    let dir = std::env::temp_dir().join(format!("lucille-rss-big-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("big.xml"), &feed).unwrap();
    let r = run_rss(json!({"rssURL": "big.xml", "maxDocumentBytes": 1000}), &dir);
    std::fs::remove_dir_all(&dir).unwrap();
    let c = &r.connectors[0];
    assert_eq!(
        (c.published, c.succeeded, c.failed),
        (3, 2, 1),
        "{}",
        r.summary
    );
    let (_, events) = test_history(&r);
    let fail = events
        .iter()
        .find(|e| e.kind == crate::accounting::EventType::Fail)
        .unwrap();
    let message = fail.message.as_deref().unwrap_or_default();
    assert!(
        message.contains(&format!(
            "big.xml: the item at byte {at}: the record is larger than maxDocumentBytes (1000)"
        )),
        "{message}"
    );
}
