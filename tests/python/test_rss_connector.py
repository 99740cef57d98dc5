"""RSSConnector through lucille.run: a feed file, a feed over HTTP (a local server), errors."""

import http.server
import pathlib
import threading
from typing import Any


import pytest

import lucille

FEEDS = pathlib.Path(__file__).resolve().parents[1] / "data" / "rss"


def run_feed(url: str, **extra: str) -> lucille.RunResult:
    connector = {"name": "feed", "class": "com.kmwllc.lucille.connector.RSSConnector", "rssURL": url}
    connector.update(extra)
    return lucille.run(config={"connectors": [connector]}, mode="test")


def test_rss_file_items_become_documents() -> None:
    result = run_feed(str(FEEDS / "news.rss.xml"), docIdPrefix="news-")
    assert result.status == "Success", result.summary
    docs = result.documents
    assert [d.id for d in docs][:2] == ["news-amu042125", "news-https://news.example.com/uber-news042125"]
    first = docs[0]
    assert first.get("title") == "Afternoon Market Update \u2013 April 21, 2025"
    assert first.get_list("categories") == ["Markets", "Stocks & Bonds"]
    assert first.get("pubDate") == "2025-04-21T20:00:00Z"
    assert first.get("enclosures") == {"type": "audio/mpeg", "url": "https://news.example.com/amu.mp3", "length": 123456}
    assert first.get("isPermaLink") is False
    assert docs[2].get("description") == "No link, no guid, no date."
    assert not docs[2].has("pubDate")


def test_atom_feed_over_http() -> None:
    body = (FEEDS / "blog.atom.xml").read_bytes()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path != "/atom.xml":
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/atom+xml")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        result = run_feed(f"{base}/atom.xml")
        assert result.status == "Success", result.summary
        assert [(d.id, d.get("author"), d.get("link")) for d in result.documents] == [
            ("urn:uuid:1225c695-cfb8-4ebb-aaaa-80da344efa6a", "Ada", "https://blog.example.com/posts/1"),
            ("tag:blog.example.com,2025:2", None, "https://blog.example.com/posts/2"),
        ]
        missing = run_feed(f"{base}/nothing.xml")
        assert missing.status == "Failure" and "404" in missing.summary
    finally:
        server.shutdown()


def test_malformed_feed_fails_the_connector_with_the_position() -> None:
    result = run_feed(str(FEEDS / "malformed.xml"))
    assert result.status == "Failure"
    assert "malformed feed" in result.summary and "at byte" in result.summary


def test_polling_keys_are_checked_up_front() -> None:
    with pytest.raises(lucille.ConfigError) as e:
        run_feed(str(FEEDS / "news.rss.xml"), runDuration="1h", pubDateCutoff="later")
    assert "refreshIncrement" in str(e.value) and "pubDateCutoff" in str(e.value)
