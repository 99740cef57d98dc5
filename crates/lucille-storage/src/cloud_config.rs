//! The FileConnector's cloud blocks and object-store URLs, with Lucille's keys:
//!
//! ```hocon
//! s3    { accessKeyId, secretAccessKey, region, maxNumOfPages, endpoint }
//! azure { connectionString | accountName + accountKey, maxNumOfPages }
//! gcp   { pathToServiceKey, maxNumOfPages }
//! ```
//!
//! `s3.accessKeyId` and `s3.secretAccessKey` come together or not at all (then the default AWS
//! chain: `AWS_*` variables, web identity, instance metadata). `maxNumOfPages` is, as in
//! Lucille, the number of objects asked for per list request (default 1000 here, 100 in
//! Lucille). `s3.endpoint` is an extension (an S3-compatible server such as MinIO or moto;
//! `http://` allowed, path-style requests). An Azure `connectionString` may carry `AccountName`
//! with `AccountKey`, `SharedAccessSignature`, `BlobEndpoint` (Azurite) or
//! `UseDevelopmentStorage=true`. A GCS service key may carry `gcs_base_url` and
//! `disable_oauth` (a local GCS-compatible server).
//!
//! URLs: `s3://bucket/prefix`, `gs://bucket/prefix`,
//! `https://ACCOUNT.blob.core.windows.net/container/prefix`, percent-encoded as in Lucille; the
//! prefix is a raw key prefix (`s3://b/data` also lists `data2/x`; write `s3://b/data/` for
//! the folder).

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use lucille_core::config::{ComponentConfig, ConfigError, Kind as KeyKind, Spec};

/// Objects asked for per list request when `maxNumOfPages` is not given.
pub const DEFAULT_PAGE_SIZE: usize = 1000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    S3 = 0,
    Gcs = 1,
    Azure = 2,
}

impl StoreKind {
    /// The connector block that configures this store.
    pub fn block(self) -> &'static str {
        match self {
            StoreKind::S3 => "s3",
            StoreKind::Gcs => "gcp",
            StoreKind::Azure => "azure",
        }
    }
}

/// A parsed object-store path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectUrl {
    pub kind: StoreKind,
    /// The Azure storage account (from the host); `None` for S3 and GCS.
    pub account: Option<String>,
    /// The bucket (S3, GCS) or container (Azure).
    pub bucket: String,
    /// The key prefix, percent-decoded.
    pub prefix: String,
}

impl ObjectUrl {
    /// The URL of the bucket / container, ending in `/`: an object's `file_path` is this
    /// followed by its (percent-encoded) key.
    pub fn base(&self) -> String {
        match self.kind {
            StoreKind::S3 => format!("s3://{}/", self.bucket),
            StoreKind::Gcs => format!("gs://{}/", self.bucket),
            StoreKind::Azure => format!(
                "https://{}.blob.core.windows.net/{}/",
                self.account.as_deref().unwrap_or_default(),
                self.bucket
            ),
        }
    }
}

/// Decodes `%XX` escapes (invalid ones are kept as written).
pub fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

/// Quotes a key as Java's `new URI(scheme, authority, path, null)` does (Lucille's
/// `file_path`, and so its ids): ASCII characters outside unreserved, sub-delims, `:`, `@` and
/// `/` become `%XX` (`%` itself too); other Unicode characters stay as they are.
pub fn percent_encode_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for c in key.chars() {
        let keep = (!c.is_ascii() && !c.is_control() && !c.is_whitespace())
            || c.is_ascii_alphanumeric()
            || "-._~!$&'()*+,;=:@/".contains(c);
        if keep {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

/// Why a path is a URL no object store reads ([`parse_url`]); `url` is the path as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("{url:?}: the {scheme}:// path names no bucket")]
    NoBucket { url: String, scheme: String },
    #[error(
        "{url:?}: an https:// path must be an Azure blob URL (https://ACCOUNT.blob.core.windows.net/container/prefix)"
    )]
    NotAzure { url: String },
    #[error("{url:?}: expected https://ACCOUNT.blob.core.windows.net/container/prefix")]
    BadAzure { url: String },
    /// A `file://` URL: `local` is the local path to give instead.
    #[error("{url:?}: give a local path without file:// (e.g. {local:?})")]
    FileScheme { url: String, local: String },
    #[error(
        "{url:?}: unsupported scheme {scheme:?}; paths are local paths, s3://bucket/prefix, gs://bucket/prefix or https://ACCOUNT.blob.core.windows.net/container/prefix"
    )]
    UnsupportedScheme { url: String, scheme: String },
}

/// `Ok(None)` for a local path; `Err` for a URL this connector cannot read.
pub fn parse_url(p: &str) -> Result<Option<ObjectUrl>, UrlError> {
    let Some((scheme, rest)) = p.split_once("://") else {
        return Ok(None);
    };
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let bucket_url = |kind: StoreKind| {
        if authority.is_empty() {
            return Err(UrlError::NoBucket {
                url: p.to_string(),
                scheme: scheme.to_string(),
            });
        }
        Ok(Some(ObjectUrl {
            kind,
            account: None,
            bucket: authority.to_string(),
            prefix: percent_decode(path),
        }))
    };
    match scheme.to_ascii_lowercase().as_str() {
        "s3" => bucket_url(StoreKind::S3),
        "gs" => bucket_url(StoreKind::Gcs),
        "https" => {
            let host = authority.to_ascii_lowercase();
            let Some(account) = host.strip_suffix(".blob.core.windows.net") else {
                return Err(UrlError::NotAzure { url: p.to_string() });
            };
            let (container, prefix) = path.split_once('/').unwrap_or((path, ""));
            if account.is_empty() || account.contains('.') || container.is_empty() {
                return Err(UrlError::BadAzure { url: p.to_string() });
            }
            Ok(Some(ObjectUrl {
                kind: StoreKind::Azure,
                account: Some(account.to_string()),
                bucket: container.to_string(),
                prefix: percent_decode(prefix),
            }))
        }
        "file" => Err(UrlError::FileScheme {
            url: p.to_string(),
            local: percent_decode(rest),
        }),
        other => Err(UrlError::UnsupportedScheme {
            url: p.to_string(),
            scheme: other.to_string(),
        }),
    }
}

fn s3_spec() -> Spec {
    Spec::new()
        .optional("accessKeyId", KeyKind::String)
        .optional("secretAccessKey", KeyKind::String)
        .optional("region", KeyKind::String)
        .optional("maxNumOfPages", KeyKind::Integer)
        .optional("endpoint", KeyKind::String)
}

fn azure_spec() -> Spec {
    Spec::new()
        .optional("connectionString", KeyKind::String)
        .optional("accountName", KeyKind::String)
        .optional("accountKey", KeyKind::String)
        .optional("maxNumOfPages", KeyKind::Integer)
}

fn gcp_spec() -> Spec {
    Spec::new()
        .required("pathToServiceKey", KeyKind::String)
        .optional("maxNumOfPages", KeyKind::Integer)
}

#[derive(Debug, Clone)]
pub struct S3Options {
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    pub region: Option<String>,
    pub endpoint: Option<String>,
    pub page_size: usize,
}

/// An Azure connection string's parts (`Key=value;...`, keys case-insensitive).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AzureConnection {
    pub account_name: Option<String>,
    pub account_key: Option<String>,
    pub sas: Option<String>,
    pub blob_endpoint: Option<String>,
    pub development: bool,
}

/// Why an Azure connection string cannot be used ([`AzureConnection::parse`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AzureConnectionError {
    /// A part without `=`; `part` is its start (at most 24 characters, it may hold a secret).
    #[error("connection string part {part:?} is not Key=value")]
    NotKeyValue { part: String },
    /// `key` is lower-cased.
    #[error("unknown connection string key {key:?}")]
    UnknownKey { key: String },
    #[error(
        "needs AccountName and AccountKey, SharedAccessSignature, or UseDevelopmentStorage=true"
    )]
    NoCredentials,
}

impl AzureConnection {
    pub fn parse(s: &str) -> Result<Self, AzureConnectionError> {
        let mut c = AzureConnection::default();
        for part in s.split(';').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((k, v)) = part.split_once('=') else {
                return Err(AzureConnectionError::NotKeyValue {
                    part: part.chars().take(24).collect(),
                });
            };
            let v = v.trim().to_string();
            match k.trim().to_ascii_lowercase().as_str() {
                "accountname" => c.account_name = Some(v),
                "accountkey" => c.account_key = Some(v),
                "sharedaccesssignature" => c.sas = Some(v),
                "blobendpoint" => c.blob_endpoint = Some(v.trim_end_matches('/').to_string()),
                "usedevelopmentstorage" => c.development = v.eq_ignore_ascii_case("true"),
                // Parts that choose other services or defaults the URL already gives.
                "defaultendpointsprotocol"
                | "endpointsuffix"
                | "queueendpoint"
                | "tableendpoint"
                | "fileendpoint"
                | "dfsendpoint" => {}
                other => {
                    return Err(AzureConnectionError::UnknownKey {
                        key: other.to_string(),
                    })
                }
            }
        }
        if !c.development
            && c.sas.is_none()
            && (c.account_name.is_none() || c.account_key.is_none())
        {
            return Err(AzureConnectionError::NoCredentials);
        }
        Ok(c)
    }
}

#[derive(Debug, Clone)]
pub struct AzureOptions {
    pub connection: Option<AzureConnection>,
    pub account_name: Option<String>,
    pub account_key: Option<String>,
    pub page_size: usize,
}

#[derive(Debug, Clone)]
pub struct GcpOptions {
    pub service_key: PathBuf,
    /// The key's `gcs_base_url` is plain http (a local test server).
    pub allow_http: bool,
    pub page_size: usize,
}

/// The connector's `s3`, `azure` and `gcp` blocks, validated.
#[derive(Debug, Default)]
pub struct CloudConfig {
    pub s3: Option<S3Options>,
    pub azure: Option<AzureOptions>,
    pub gcp: Option<GcpOptions>,
}

/// Why a GCS service key file cannot be used: it cannot be read, or is not JSON.
#[derive(Debug, thiserror::Error)]
enum ServiceKeyError {
    #[error("{0}")]
    Read(#[from] std::io::Error),
    #[error("{0}")]
    Json(#[from] serde_json::Error),
}

fn read_service_key(path: &std::path::Path) -> Result<Value, ServiceKeyError> {
    let text = std::fs::read_to_string(path)?;
    Ok(serde_json::from_str(&text)?)
}

fn block(
    config: &ComponentConfig,
    key: &str,
    spec: &Spec,
    errors: &mut Vec<ConfigError>,
) -> Option<ComponentConfig> {
    let map = match config.object(key) {
        Ok(m) => m?.clone(),
        Err(e) => {
            errors.push(e);
            return None;
        }
    };
    let path = config.key_path(key);
    let found = spec.validate(&map, &path);
    if !found.is_empty() {
        errors.extend(found);
        return None;
    }
    Some(ComponentConfig::new(map, path).with_paths(config.paths().clone()))
}

fn ok<T>(errors: &mut Vec<ConfigError>, r: Result<Option<T>, ConfigError>) -> Option<T> {
    r.unwrap_or_else(|e| {
        errors.push(e);
        None
    })
}

fn page_size(c: &ComponentConfig, errors: &mut Vec<ConfigError>) -> usize {
    match ok(errors, c.usize("maxNumOfPages")) {
        Some(0) => {
            errors.push(c.error("maxNumOfPages", "must be at least 1"));
            DEFAULT_PAGE_SIZE
        }
        Some(n) => n,
        None => DEFAULT_PAGE_SIZE,
    }
}

impl CloudConfig {
    pub fn from_config(config: &ComponentConfig, errors: &mut Vec<ConfigError>) -> CloudConfig {
        let mut out = CloudConfig::default();
        if let Some(c) = block(config, "s3", &s3_spec(), errors) {
            let access_key_id = ok(errors, c.string("accessKeyId"));
            let secret_access_key = ok(errors, c.string("secretAccessKey"));
            if access_key_id.is_some() != secret_access_key.is_some() {
                errors.push(c.error(
                    if access_key_id.is_some() { "secretAccessKey" } else { "accessKeyId" },
                    "accessKeyId and secretAccessKey are given together, or neither (the default AWS credentials)",
                ));
            }
            let endpoint = ok(errors, c.string("endpoint"));
            if let Some(e) = &endpoint {
                if !(e.starts_with("http://") || e.starts_with("https://")) {
                    errors.push(c.error("endpoint", "must be an http:// or https:// URL"));
                }
            }
            out.s3 = Some(S3Options {
                access_key_id,
                secret_access_key,
                region: ok(errors, c.string("region")),
                endpoint,
                page_size: page_size(&c, errors),
            });
        }
        if let Some(c) = block(config, "azure", &azure_spec(), errors) {
            let connection = ok(errors, c.string("connectionString")).and_then(|s| {
                AzureConnection::parse(&s)
                    .map_err(|e| errors.push(c.error("connectionString", e.to_string())))
                    .ok()
            });
            let account_name = ok(errors, c.string("accountName"));
            let account_key = ok(errors, c.string("accountKey"));
            let has_conn = c.has("connectionString");
            if !has_conn && (account_name.is_none() || account_key.is_none()) {
                errors.push(ConfigError::new(
                    c.path(),
                    "needs connectionString, or accountName and accountKey",
                ));
            }
            if has_conn && (account_name.is_some() || account_key.is_some()) {
                errors.push(c.error(
                    "connectionString",
                    "give connectionString or accountName + accountKey, not both",
                ));
            }
            out.azure = Some(AzureOptions {
                connection,
                account_name,
                account_key,
                page_size: page_size(&c, errors),
            });
        }
        if let Some(c) = block(config, "gcp", &gcp_spec(), errors) {
            if let Some(p) = ok(errors, c.string("pathToServiceKey")) {
                let path = c.resolve_path(&p);
                match read_service_key(&path) {
                    Ok(key) => {
                        let allow_http = key
                            .get("gcs_base_url")
                            .and_then(Value::as_str)
                            .is_some_and(|u| u.starts_with("http://"));
                        out.gcp = Some(GcpOptions {
                            service_key: path,
                            allow_http,
                            page_size: page_size(&c, errors),
                        });
                    }
                    Err(e) => errors.push(c.error(
                        "pathToServiceKey",
                        format!("cannot read the service key {}: {e}", path.display()),
                    )),
                }
            }
        }
        out
    }

    /// Logs the blocks no path uses (`used` by [`StoreKind`]): given but without effect.
    pub fn warn_unused(&self, config: &ComponentConfig, used: [bool; 3]) {
        let given = [self.s3.is_some(), self.gcp.is_some(), self.azure.is_some()];
        for (i, kind) in [StoreKind::S3, StoreKind::Gcs, StoreKind::Azure]
            .into_iter()
            .enumerate()
        {
            if given[i] && !used[i] {
                tracing::warn!(
                    "{}: no path in paths is read through it; it has no effect",
                    config.key_path(kind.block())
                );
            }
        }
    }

    /// Whether the block that configures `kind` (`s3`, `gcp`, `azure`) was given.
    pub fn has_block(&self, kind: StoreKind) -> bool {
        match kind {
            StoreKind::S3 => self.s3.is_some(),
            StoreKind::Gcs => self.gcp.is_some(),
            StoreKind::Azure => self.azure.is_some(),
        }
    }
}

/// Client options every store shares: a bounded connect and request time and few retries, so
/// an unreachable endpoint or bad credentials fail the run at its start instead of hanging.
pub fn client_options(allow_http: bool) -> object_store::ClientOptions {
    object_store::ClientOptions::new()
        .with_allow_http(allow_http)
        .with_connect_timeout(Duration::from_secs(5))
        .with_timeout(Duration::from_secs(600))
}

pub fn retry_config() -> object_store::RetryConfig {
    object_store::RetryConfig {
        max_retries: 3,
        retry_timeout: Duration::from_secs(30),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_store_bucket_and_decoded_prefix() {
        let u = parse_url("s3://bucket/folder%20with%20spaces/")
            .unwrap()
            .unwrap();
        assert_eq!(u.kind, StoreKind::S3);
        assert_eq!(u.bucket, "bucket");
        assert_eq!(u.prefix, "folder with spaces/");
        assert_eq!(u.base(), "s3://bucket/");
        let u = parse_url("gs://b").unwrap().unwrap();
        assert_eq!(
            (u.kind, u.bucket.as_str(), u.prefix.as_str()),
            (StoreKind::Gcs, "b", "")
        );
        let u = parse_url("https://acct.blob.core.windows.net/cont/a/b")
            .unwrap()
            .unwrap();
        assert_eq!(u.kind, StoreKind::Azure);
        assert_eq!(u.account.as_deref(), Some("acct"));
        assert_eq!(u.bucket, "cont");
        assert_eq!(u.prefix, "a/b");
        assert_eq!(u.base(), "https://acct.blob.core.windows.net/cont/");
        assert_eq!(parse_url("data/x.csv").unwrap(), None);
        assert_eq!(parse_url("/abs/x").unwrap(), None);
        for bad in [
            "https://example.com/x",
            "https://acct.blob.core.windows.net/",
            "s3:///key",
            "ftp://host/x",
            "file:///tmp/x",
        ] {
            assert!(parse_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn url_errors_keep_their_messages() {
        let msg = |p: &str| parse_url(p).unwrap_err().to_string();
        assert_eq!(
            msg("S3:///key"),
            "\"S3:///key\": the S3:// path names no bucket"
        );
        assert_eq!(
            msg("https://example.com/x"),
            "\"https://example.com/x\": an https:// path must be an Azure blob URL (https://ACCOUNT.blob.core.windows.net/container/prefix)"
        );
        assert_eq!(
            msg("https://acct.blob.core.windows.net/"),
            "\"https://acct.blob.core.windows.net/\": expected https://ACCOUNT.blob.core.windows.net/container/prefix"
        );
        assert_eq!(
            msg("file:///tmp/a%20b"),
            "\"file:///tmp/a%20b\": give a local path without file:// (e.g. \"/tmp/a b\")"
        );
        assert_eq!(
            msg("FTP://host/x"),
            "\"FTP://host/x\": unsupported scheme \"ftp\"; paths are local paths, s3://bucket/prefix, gs://bucket/prefix or https://ACCOUNT.blob.core.windows.net/container/prefix"
        );
    }

    #[test]
    fn keys_are_quoted_as_java_uri_does() {
        assert_eq!(percent_encode_key("a b/c%d.csv"), "a%20b/c%25d.csv");
        assert_eq!(percent_encode_key("dir/é.txt"), "dir/é.txt");
        assert_eq!(percent_encode_key("x[1]#?.json"), "x%5B1%5D%23%3F.json");
        assert_eq!(percent_decode(&percent_encode_key("a b/c%d")), "a b/c%d");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
    }

    #[test]
    fn azure_connection_strings() {
        let c = AzureConnection::parse(
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;EndpointSuffix=core.windows.net",
        )
        .unwrap();
        assert_eq!(c.account_name.as_deref(), Some("acct"));
        assert_eq!(c.account_key.as_deref(), Some("a2V5"));
        let c = AzureConnection::parse(
            "AccountName=devstoreaccount1;AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1/;",
        )
        .unwrap();
        assert_eq!(
            c.blob_endpoint.as_deref(),
            Some("http://127.0.0.1:10000/devstoreaccount1")
        );
        assert!(
            AzureConnection::parse("UseDevelopmentStorage=true")
                .unwrap()
                .development
        );
        assert!(
            AzureConnection::parse("BlobEndpoint=https://x;SharedAccessSignature=sv=1&sig=2")
                .unwrap()
                .sas
                .is_some()
        );
        assert!(AzureConnection::parse("AccountName=a").is_err());
        assert!(AzureConnection::parse("AccountName=a;Bogus=1;AccountKey=k").is_err());
        assert!(AzureConnection::parse("nonsense").is_err());
        let msg = |s: &str| AzureConnection::parse(s).unwrap_err().to_string();
        assert_eq!(
            msg("AccountName=a"),
            "needs AccountName and AccountKey, SharedAccessSignature, or UseDevelopmentStorage=true"
        );
        assert_eq!(
            msg("AccountName=a;Bogus=1;AccountKey=k"),
            "unknown connection string key \"bogus\""
        );
        assert_eq!(
            msg("nonsense-that-is-longer-than-24-characters"),
            "connection string part \"nonsense-that-is-longer-\" is not Key=value"
        );
    }
}
