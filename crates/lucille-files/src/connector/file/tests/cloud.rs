//! The FileConnector on object stores: S3 against a real S3-API server (moto, started by
//! scripts/services/s3.sh, which exports LUCILLE_TEST_S3_ENDPOINT; skipped without it unless
//! LUCILLE_REQUIRE_SERVICES=1), and the Azure / GCS configuration, URL and credential handling
//! (no emulator installs here).

use object_store::aws::AmazonS3Builder;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};

use super::*;

fn s3_endpoint() -> Option<String> {
    crate::test_service::test_service("LUCILLE_TEST_S3_ENDPOINT", "source scripts/services/s3.sh")
}

/// A fresh bucket on the test server, written with the same crate the connector reads with.
struct Bucket {
    name: String,
    endpoint: String,
    store: object_store::aws::AmazonS3,
    rt: tokio::runtime::Runtime,
}

impl Bucket {
    fn new(tag: &str) -> Option<Bucket> {
        let endpoint = s3_endpoint()?;
        // No dashes: object_store quotes them in GCS bucket names, which the S3 server keeps.
        let name = format!(
            "lucille{tag}{}",
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        );
        ureq::put(&format!("{endpoint}/{name}"))
            .send_empty()
            .unwrap();
        let store = AmazonS3Builder::new()
            .with_endpoint(&endpoint)
            .with_allow_http(true)
            .with_bucket_name(&name)
            .with_region("us-east-1")
            .with_access_key_id("test")
            .with_secret_access_key("test")
            .build()
            .unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        Some(Bucket {
            name,
            endpoint,
            store,
            rt,
        })
    }

    fn put(&self, key: &str, bytes: &[u8]) {
        let path = ObjectPath::parse(key).unwrap();
        self.rt
            .block_on(self.store.put(&path, bytes.to_vec().into()))
            .unwrap();
    }

    fn keys(&self) -> Vec<String> {
        use futures::TryStreamExt;
        let mut keys: Vec<String> = self
            .rt
            .block_on(self.store.list(None).try_collect::<Vec<_>>())
            .unwrap()
            .into_iter()
            .map(|m| m.location.to_string())
            .collect();
        keys.sort();
        keys
    }

    /// The connector's `s3` block for this server.
    fn block(&self, page: usize) -> Value {
        json!({"accessKeyId": "test", "secretAccessKey": "test-secret-key", "region": "us-east-1",
               "endpoint": self.endpoint, "maxNumOfPages": page})
    }
}

fn paths_of(c: &FileConnector) -> Vec<String> {
    c.list_files()
        .unwrap()
        .iter()
        .map(|e| e.path().to_string())
        .collect()
}

#[test]
fn s3_listing_pages_through_a_prefix_with_includes_and_excludes() {
    let Some(b) = Bucket::new("list") else { return };
    for k in [
        "data/a.csv",
        "data/b.jsonl",
        "data/c.txt",
        "data/sub/d.txt",
        "data/sub/e.log",
        "data/f g.txt",
        "data/sub/deeper/h.txt",
        "data2/not-in-prefix.txt",
        "other/x.txt",
    ] {
        b.put(k, b"x");
    }
    let base = format!("s3://{}/", b.name);
    // Two objects per list request: four pages for the seven objects under data/.
    let c = connector(
        json!({"paths": [format!("{base}data/")], "s3": b.block(2)}),
        None,
    )
    .unwrap();
    let want: Vec<String> = [
        "data/a.csv",
        "data/b.jsonl",
        "data/c.txt",
        "data/f%20g.txt",
        "data/sub/d.txt",
        "data/sub/deeper/h.txt",
        "data/sub/e.log",
    ]
    .iter()
    .map(|k| format!("{base}{k}"))
    .collect();
    assert_eq!(paths_of(&c), want);

    // A raw prefix, as Lucille's: "data" also takes data2/.
    let c = connector(
        json!({"paths": [format!("{base}data")], "s3": b.block(3)}),
        None,
    )
    .unwrap();
    assert_eq!(paths_of(&c).len(), 8);

    let c = connector(
        json!({"paths": [format!("{base}data/")], "s3": b.block(1000),
               "filterOptions": {"includes": [".*/sub/.*"], "excludes": [".*\\.log"]}}),
        None,
    )
    .unwrap();
    assert_eq!(
        paths_of(&c),
        [
            format!("{base}data/sub/d.txt"),
            format!("{base}data/sub/deeper/h.txt")
        ]
    );

    // Two roots in one bucket share its store; the whole bucket lists everything once.
    let c = connector(
        json!({"paths": [format!("{base}other/"), base.clone(), format!("{base}data/sub/")],
               "s3": b.block(4)}),
        None,
    )
    .unwrap();
    assert_eq!(paths_of(&c).len(), 9);
}

#[test]
fn s3_objects_go_through_handlers_extraction_archives_and_whole_file_documents() {
    let Some(b) = Bucket::new("read") else { return };
    b.put(
        "in/books.csv",
        &std::fs::read(data_dir().join("books.csv")).unwrap(),
    );
    b.put(
        "in/items.jsonl",
        b"{\"id\":\"j1\",\"t\":1}\n{\"id\":\"j2\",\"t\":2}\n",
    );
    b.put("in/notes.txt", "plain text é".as_bytes());
    b.put(
        "in/more.jsonl.gz",
        &std::fs::read(data_dir().join("more.jsonl.gz")).unwrap(),
    );
    b.put(
        "in/bundle.zip",
        &std::fs::read(data_dir().join("bundle.zip")).unwrap(),
    );
    let base = format!("s3://{}/", b.name);
    let c = connector(
        json!({"paths": [format!("{base}in/")], "s3": b.block(2),
               "fileHandlers": {"csv": {"idField": "id"}, "jsonl": {"idField": "id"}}}),
        None,
    )
    .unwrap();
    let out = run_files(&c);
    // The same FAILs as on disk: books.csv's short row, more.jsonl.gz's bad line.
    let failed: Vec<&str> = out.failures.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(
        failed,
        [
            format!("{base}in/books.csv:line4"),
            format!("{base}in/more.jsonl.gz:line3")
        ],
        "{:?}",
        out.failures
    );
    let ids = out.ids();
    for id in ["b1", "b2", "j1", "j2"] {
        assert!(ids.contains(&id), "{id} in {ids:?}");
    }
    // The gzip's records and the archive's entries are read as on disk.
    let local = connector(
        json!({"paths": [data_dir().join("more.jsonl.gz"), data_dir().join("bundle.zip")],
               "fileHandlers": {"csv": {"idField": "id"}, "jsonl": {"idField": "id"}}}),
        None,
    )
    .unwrap();
    let local_out = run_files(&local);
    for d in &local_out.docs {
        if !d.field_names().any(|f| f == FILE_PATH) {
            assert!(ids.contains(&d.id()), "{} from the gzip/zip on S3", d.id());
        }
    }
    let notes = out
        .docs
        .iter()
        .find(|d| d.get_string(FILE_NAME).ok().flatten().as_deref() == Some("notes.txt"))
        .expect("notes.txt as a whole-file document");
    let path = format!("{base}in/notes.txt");
    assert_eq!(
        notes.get_string(FILE_PATH).unwrap().as_deref(),
        Some(path.as_str())
    );
    assert_eq!(notes.id(), md5_hex(&path));
    assert_eq!(
        notes.get_string(CONTENT).unwrap().as_deref(),
        Some("plain text é")
    );
    assert_eq!(notes.get_i64(SIZE).unwrap(), Some(13));
    assert!(notes.has(MODIFIED));
    // Entries of the zip are named archive!entry, as on disk.
    assert!(out.docs.iter().any(|d| d
        .get_string(FILE_PATH)
        .ok()
        .flatten()
        .is_some_and(|p| p.starts_with(&format!("{base}in/bundle.zip!")))));
}

fn docx() -> Vec<u8> {
    use std::io::Write;
    let mut buf = std::io::Cursor::new(Vec::new());
    {
        let mut z = zip::ZipWriter::new(&mut buf);
        let opts = zip::write::SimpleFileOptions::default();
        for (name, body) in [
            ("[Content_Types].xml", "<Types/>"),
            ("word/document.xml", "<w:document xmlns:w='w'><w:body><w:p><w:r><w:t>Stored in a bucket</w:t></w:r></w:p></w:body></w:document>"),
        ] {
            z.start_file(name, opts).unwrap();
            z.write_all(body.as_bytes()).unwrap();
        }
        z.finish().unwrap();
    }
    buf.into_inner()
}

#[test]
fn s3_binary_documents_are_extracted_and_unreadable_ones_fail_alone() {
    let Some(b) = Bucket::new("docs") else { return };
    b.put("docs/report.docx", &docx());
    b.put(
        "docs/junk.pdf",
        b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer <<>>\n%%EOF",
    );
    let base = format!("s3://{}/", b.name);
    let c = connector(
        json!({"paths": [format!("{base}docs/")], "s3": b.block(1),
               "fileHandlers": {"documents": {}}}),
        None,
    )
    .unwrap();
    let out = run_files(&c);
    assert_eq!(out.docs.len(), 1);
    let d = &out.docs[0];
    assert_eq!(
        d.get_string("text").unwrap().as_deref().map(str::trim),
        Some("Stored in a bucket")
    );
    assert_eq!(d.id(), md5_hex(&format!("{base}docs/report.docx")));
    assert_eq!(out.failures.len(), 1);
    assert!(out.failures[0].1.contains("junk.pdf"), "{:?}", out.failures);
}

#[test]
fn s3_modified_cutoff_keeps_recent_objects() {
    let Some(b) = Bucket::new("cutoff") else {
        return;
    };
    b.put("a.txt", b"a");
    let base = format!("s3://{}/", b.name);
    let c = connector(
        json!({"paths": [base.clone()], "s3": b.block(10),
               "filterOptions": {"lastModifiedCutoff": "1h"}}),
        None,
    )
    .unwrap();
    assert_eq!(paths_of(&c), [format!("{base}a.txt")]);
    // A zero-length cutoff (only objects modified from now on) excludes it.
    let c = connector(
        json!({"paths": [base.clone()], "s3": b.block(10), "modifiedCutoff": 0}),
        None,
    )
    .unwrap();
    assert!(paths_of(&c).is_empty());
}

#[test]
fn s3_move_after_processing_and_to_error_folder_stay_in_the_bucket() {
    let Some(b) = Bucket::new("move") else { return };
    b.put("in/good.jsonl", b"{\"id\":\"g1\"}\n");
    b.put("in/bad.xml", b"<catalog><book><isbn>1</isbn></book><book>");
    let base = format!("s3://{}/", b.name);
    let c = connector(
        json!({"paths": [format!("{base}in/")], "s3": b.block(5),
               "fileHandlers": {"jsonl": {"idField": "id"},
                                "xml": {"xmlRootPath": "/catalog/book", "idField": "isbn"}},
               "fileOptions": {"moveToAfterProcessing": format!("{base}done/"),
                               "moveToErrorFolder": format!("{base}error")}}),
        None,
    )
    .unwrap();
    let (p, _m) = publisher();
    c.read_all(&c.list_files().unwrap(), &p).unwrap();
    assert_eq!(b.keys(), ["done/in/good.jsonl", "error/in/bad.xml"]);

    // A move target outside the roots' bucket is a config error.
    let e = config_error(json!({"paths": [format!("{base}in/")], "s3": b.block(5),
               "fileOptions": {"moveToAfterProcessing": "done"}}));
    assert!(e.to_string().contains("moveToAfterProcessing"), "{e}");
    let e = config_error(json!({"paths": [format!("{base}in/")], "s3": b.block(5),
               "fileOptions": {"moveToErrorFolder": "s3://another-bucket/x/"}}));
    assert!(e.to_string().contains("moveToErrorFolder"), "{e}");
}

#[test]
fn s3_missing_bucket_and_unreachable_endpoint_fail_at_the_start() {
    let Some(endpoint) = s3_endpoint() else {
        return;
    };
    let block = json!({"accessKeyId": "test", "secretAccessKey": "do-not-show-this-secret",
                       "endpoint": endpoint});
    let c = connector(
        json!({"paths": ["s3://lucille-no-such-bucket-x1/data/"], "s3": block}),
        None,
    )
    .unwrap();
    let e = c.list_files().unwrap_err().to_string();
    assert!(e.contains("s3://lucille-no-such-bucket-x1/data/"), "{e}");
    assert!(e.contains("NoSuchBucket") || e.contains("404"), "{e}");
    assert!(!e.contains("do-not-show-this-secret"), "{e}");

    // Nothing listens on port 9: refused, retried a few times, then an error (never a hang).
    let c = connector(
        json!({"paths": ["s3://bucket/"],
               "s3": {"accessKeyId": "a", "secretAccessKey": "do-not-show-this-secret",
                      "endpoint": "http://127.0.0.1:9"}}),
        None,
    )
    .unwrap();
    let e = c.list_files().unwrap_err().to_string();
    assert!(e.starts_with("cannot list s3://bucket/"), "{e}");
    assert!(!e.contains("do-not-show-this-secret"), "{e}");
}

fn config_error(config: Value) -> String {
    match connector(config, None) {
        Ok(_) => panic!("accepted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn cloud_blocks_are_validated_with_lucilles_keys() {
    let e = config_error(json!({"paths": ["s3://b/x"]}));
    assert!(e.contains("s3 block, which is missing"), "{e}");
    let e = config_error(json!({"paths": ["s3://b/x"], "s3": {"accessKeyId": "AKIA"}}));
    assert!(e.contains("connectors[0].s3.secretAccessKey"), "{e}");
    let e = config_error(json!({"paths": ["s3://b/x"], "s3": {"maxNumOfPages": 0}}));
    assert!(e.contains("maxNumOfPages"), "{e}");
    let e = config_error(json!({"paths": ["s3://b/x"], "s3": {"secretKey": "x"}}));
    assert!(e.contains("secretKey"), "{e}");
    let e = config_error(json!({"paths": ["gs://b/x"], "gcp": {}}));
    assert!(e.contains("pathToServiceKey"), "{e}");
    let e = config_error(
        json!({"paths": ["gs://b/x"], "gcp": {"pathToServiceKey": "/no/such/key.json"}}),
    );
    assert!(
        e.contains("cannot read the service key /no/such/key.json"),
        "{e}"
    );
    let e = config_error(json!({"paths": ["https://acct.blob.core.windows.net/c/p"],
                                "azure": {"accountName": "acct"}}));
    assert!(
        e.contains("needs connectionString, or accountName and accountKey"),
        "{e}"
    );
    let e = config_error(json!({"paths": ["https://acct.blob.core.windows.net/c/p"],
                                "azure": {"connectionString": "AccountName=acct;AccountKey=c2VjcmV0c2VjcmV0;Foo=1"}}));
    assert!(e.contains("unknown connection string key \"foo\""), "{e}");
    assert!(!e.contains("c2VjcmV0c2VjcmV0"), "{e}");
    let e = config_error(json!({"paths": ["https://other.blob.core.windows.net/c/p"],
                                "azure": {"accountName": "acct", "accountKey": "a2V5"}}));
    assert!(
        e.contains("account \"acct\"") && e.contains("\"other\""),
        "{e}"
    );
    let e = config_error(json!({"paths": ["https://example.com/c/p"]}));
    assert!(e.contains("Azure blob URL"), "{e}");
    let e = config_error(json!({"paths": ["ftp://host/x"]}));
    assert!(e.contains("unsupported scheme"), "{e}");
}

#[test]
fn azure_and_gcs_stores_build_from_lucilles_credentials_without_network() {
    let c = connector(
        json!({"paths": ["https://acct.blob.core.windows.net/cont/pre/"],
               "azure": {"accountName": "acct", "accountKey": "a2V5a2V5a2V5", "maxNumOfPages": 7}}),
        None,
    )
    .unwrap();
    let root = &c.settings.roots[0];
    assert_eq!(root.location, "pre/");
    assert!(root
        .storage
        .owns("https://acct.blob.core.windows.net/cont/pre/x.txt"));
    assert!(!root
        .storage
        .owns("https://acct.blob.core.windows.net/other/x.txt"));
    // Azurite's connection string: its BlobEndpoint, any account in the URL.
    connector(
        json!({"paths": ["https://devstoreaccount1.blob.core.windows.net/cont/"],
               "azure": {"connectionString": "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;"}}),
        None,
    )
    .unwrap();
    let dir = TempDir::new("gcs");
    let key = dir.0.join("key.json");
    std::fs::write(
        &key,
        r#"{"gcs_base_url": "http://127.0.0.1:9", "disable_oauth": true, "client_email": "", "private_key": "", "private_key_id": ""}"#,
    )
    .unwrap();
    let c = connector(
        json!({"paths": ["gs://bucket/pre"], "gcp": {"pathToServiceKey": key, "maxNumOfPages": 3}}),
        None,
    )
    .unwrap();
    assert!(c.settings.roots[0].storage.owns("gs://bucket/pre/a"));
    // An unreachable GCS endpoint is an error at the start, not a hang.
    let e = c.list_files().unwrap_err().to_string();
    assert!(e.starts_with("cannot list gs://bucket/pre"), "{e}");
}

/// object_store lists GCS through its XML API, which is S3's: with the service key's
/// `gcs_base_url` on the S3 test server (and `disable_oauth`), a `gs://` path's paged listing,
/// URLs and filters run against a real server. (Reads are not: object_store quotes every
/// character of a GCS object path, `/` and `.` included, which GCS decodes and moto does not.)
#[test]
fn gcs_paths_list_in_pages_through_the_xml_api() {
    let Some(b) = Bucket::new("gcs") else { return };
    for i in 0..5 {
        b.put(
            &format!("g/rows-{i}.jsonl"),
            format!("{{\"id\":\"g{i}\"}}\n").as_bytes(),
        );
    }
    b.put("g/readme.txt", b"gcs text");
    b.put("other.txt", b"outside the prefix");
    let dir = TempDir::new("gcs-key");
    let key = dir.0.join("key.json");
    std::fs::write(
        &key,
        json!({"gcs_base_url": b.endpoint, "disable_oauth": true, "client_email": "", "private_key": "", "private_key_id": ""})
            .to_string(),
    )
    .unwrap();
    let base = format!("gs://{}/", b.name);
    let c = connector(
        json!({"paths": [format!("{base}g/")], "gcp": {"pathToServiceKey": key, "maxNumOfPages": 2},
               "excludes": [".*readme.*"]}),
        None,
    )
    .unwrap();
    let want: Vec<String> = (0..5).map(|i| format!("{base}g/rows-{i}.jsonl")).collect();
    assert_eq!(paths_of(&c), want);
}

/// A stand-in for Azure Blob storage (no Azurite here: it is an npm package): List Blobs
/// (`restype=container&comp=list`, `prefix`, `maxresults`, `marker` / `NextMarker`) and Get /
/// Head Blob, with the real XML and header shapes. Records each request's path and query and
/// whether it was signed.
struct FakeAzure {
    endpoint: String,
    requests: Arc<Mutex<Vec<(String, bool)>>>,
    server: Arc<tiny_http::Server>,
}

impl FakeAzure {
    fn start(blobs: Vec<(&'static str, Vec<u8>)>) -> FakeAzure {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").unwrap());
        let port = server.server_addr().to_ip().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (s, log) = (server.clone(), requests.clone());
        std::thread::spawn(move || {
            for req in s.incoming_requests() {
                let url = req.url().to_string();
                let signed = req.headers().iter().any(|h| {
                    h.field.equiv("Authorization") && h.value.as_str().starts_with("SharedKey ")
                });
                log.lock().push((url.clone(), signed));
                let (path, query) = url.split_once('?').unwrap_or((url.as_str(), ""));
                let param = |k: &str| {
                    query.split('&').find_map(|kv| {
                        kv.split_once('=')
                            .filter(|(key, _)| *key == k)
                            .map(|(_, v)| storage::cloud_config::percent_decode(v))
                    })
                };
                let date = "Wed, 02 Dec 2026 10:00:00 GMT";
                let response = if path == "/devstoreaccount1/cont"
                    && param("comp").as_deref() == Some("list")
                {
                    let prefix = param("prefix").unwrap_or_default();
                    let max: usize = param("maxresults")
                        .and_then(|m| m.parse().ok())
                        .unwrap_or(5000);
                    let start: usize = param("marker").and_then(|m| m.parse().ok()).unwrap_or(0);
                    let matching: Vec<_> = blobs
                        .iter()
                        .filter(|(k, _)| k.starts_with(&prefix))
                        .collect();
                    let page: Vec<_> = matching.iter().skip(start).take(max).collect();
                    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"utf-8\"?><EnumerationResults ServiceEndpoint=\"x\" ContainerName=\"cont\"><Blobs>");
                    for (k, v) in &page {
                        xml.push_str(&format!("<Blob><Name>{k}</Name><Properties><Last-Modified>{date}</Last-Modified><Etag>0x{:X}</Etag><Content-Length>{}</Content-Length><Content-Type>application/octet-stream</Content-Type></Properties></Blob>", v.len() * 7919, v.len()));
                    }
                    xml.push_str("</Blobs>");
                    if start + page.len() < matching.len() {
                        xml.push_str(&format!("<NextMarker>{}</NextMarker>", start + page.len()));
                    } else {
                        xml.push_str("<NextMarker />");
                    }
                    xml.push_str("</EnumerationResults>");
                    tiny_http::Response::from_data(xml.into_bytes())
                } else if let Some((_, body)) =
                    path.strip_prefix("/devstoreaccount1/cont/").and_then(|k| {
                        blobs
                            .iter()
                            .find(|(key, _)| *key == storage::cloud_config::percent_decode(k))
                    })
                {
                    let mut r = tiny_http::Response::from_data(body.clone());
                    for (h, v) in [
                        ("Last-Modified", date.to_string()),
                        ("ETag", format!("0x{:X}", body.len() * 7919)),
                    ] {
                        r.add_header(tiny_http::Header::from_bytes(h, v).unwrap());
                    }
                    r
                } else {
                    tiny_http::Response::from_data(
                        b"<?xml version=\"1.0\"?><Error><Code>BlobNotFound</Code></Error>".to_vec(),
                    )
                    .with_status_code(404)
                };
                let _ = req.respond(response);
            }
        });
        FakeAzure {
            endpoint: format!("http://127.0.0.1:{port}/devstoreaccount1"),
            requests,
            server,
        }
    }
}

impl Drop for FakeAzure {
    fn drop(&mut self) {
        self.server.unblock();
    }
}

#[test]
fn azure_paths_list_pages_and_read_blobs_with_a_signed_connection_string() {
    let az = FakeAzure::start(vec![
        (
            "pre/a.jsonl",
            b"{\"id\":\"z1\"}\n{\"id\":\"z2\"}\n".to_vec(),
        ),
        ("pre/b.txt", b"azure text".to_vec()),
        ("pre/sub/c.txt", b"deeper".to_vec()),
        ("other/d.txt", b"not listed".to_vec()),
    ]);
    let key = "c2VjcmV0LWF6dXJlLWtleS1ub3QtdG8tYmUtc2hvd24=";
    let conn = format!(
        "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={key};BlobEndpoint={}/;",
        az.endpoint
    );
    let base = "https://devstoreaccount1.blob.core.windows.net/cont/";
    let c = connector(
        json!({"paths": [format!("{base}pre/")], "azure": {"connectionString": conn, "maxNumOfPages": 2},
               "fileHandlers": {"jsonl": {"idField": "id"}}}),
        None,
    )
    .unwrap();
    assert_eq!(
        paths_of(&c),
        [
            format!("{base}pre/a.jsonl"),
            format!("{base}pre/b.txt"),
            format!("{base}pre/sub/c.txt")
        ]
    );
    let listing = az.requests.lock().clone();
    let out = run_files(&c);
    assert!(out.failures.is_empty(), "{:?}", out.failures);
    let b = out
        .docs
        .iter()
        .find(|d| d.id() == md5_hex(&format!("{base}pre/b.txt")))
        .expect("b.txt");
    assert_eq!(
        b.get_string(CONTENT).unwrap().as_deref(),
        Some("azure text")
    );
    assert_eq!(
        b.get_string(MODIFIED).unwrap().as_deref().map(|m| &m[..10]),
        Some("2026-12-02")
    );
    assert!(out.ids().contains(&"z1") && out.ids().contains(&"z2"));
    let requests = az.requests.lock().clone();
    let lists: Vec<&String> = listing
        .iter()
        .map(|(u, _)| u)
        .filter(|u| u.contains("comp=list"))
        .collect();
    // Three blobs at two per page: two list requests, the second from the first's marker.
    assert_eq!(lists.len(), 2, "{requests:?}");
    assert!(lists
        .iter()
        .all(|u| u.contains("maxresults=2") && u.contains("prefix=pre%2F")));
    assert!(lists[1].contains("marker=2"), "{lists:?}");
    assert!(requests.iter().all(|(_, signed)| *signed), "{requests:?}");

    // A missing container (or any listing error) fails at the start, without the key.
    let c = connector(
        json!({"paths": ["https://devstoreaccount1.blob.core.windows.net/nocontainer/"],
               "azure": {"connectionString": conn}}),
        None,
    )
    .unwrap();
    let e = c.list_files().unwrap_err().to_string();
    assert!(
        e.starts_with("cannot list https://devstoreaccount1.blob.core.windows.net/nocontainer/"),
        "{e}"
    );
    assert!(!e.contains(key), "{e}");
}
