//! One S3 bucket, GCS bucket or Azure container through the `object_store` crate. The crate is
//! async; the connector is not: [`CloudRuntime`] is a small tokio runtime (two worker threads,
//! started on first use, shut down with the connector) and every call blocks on it from the
//! connector's own threads. Listing is paginated (`maxNumOfPages` objects per request, as
//! Lucille); reading streams the object chunk by chunk; a zip archive is spooled to an
//! unlinked temporary file (it needs to seek). Secrets (keys, signatures) never appear in the
//! messages: they are replaced by a marker.

use std::io::{self, Read};
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

use bytes::Bytes;
use futures::stream::{BoxStream, StreamExt};
use object_store::list::{PaginatedListOptions, PaginatedListStore};
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};

use super::cloud_config::{
    client_options, percent_decode, percent_encode_key, retry_config, AzureOptions, CloudConfig,
    GcpOptions, ObjectUrl, S3Options, StoreKind,
};
use super::{FileMetadata, Listed, Opened, Storage, StorageError};
use lucille_core::config::{ComponentConfig, ConfigError};

/// The tokio runtime could not be started; kept, and given to every later call.
#[derive(Debug, Clone, thiserror::Error)]
#[error("cannot start the cloud storage runtime: {0}")]
pub struct RuntimeError(#[source] Arc<io::Error>);

/// The tokio runtime the connector's object stores run on.
#[derive(Default)]
pub struct CloudRuntime {
    rt: OnceLock<Result<tokio::runtime::Runtime, RuntimeError>>,
}

impl CloudRuntime {
    fn get(&self) -> io::Result<&tokio::runtime::Runtime> {
        self.rt
            .get_or_init(|| {
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_name("lucille-cloud")
                    .enable_all()
                    .build()
                    .map_err(|e| RuntimeError(Arc::new(e)))
            })
            .as_ref()
            .map_err(|e| io::Error::other(e.clone()))
    }

    /// Runs a future to completion from a thread outside the runtime.
    pub fn block_on<F: std::future::Future>(&self, f: F) -> io::Result<F::Output> {
        Ok(self.get()?.block_on(f))
    }
}

impl Drop for CloudRuntime {
    fn drop(&mut self) {
        // Never block (or panic) when the last owner is dropped inside another runtime.
        if let Some(Ok(rt)) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

pub struct ObjectStorage {
    /// `s3://bucket/`: a listed object's `file_path` is this + its encoded key.
    base: String,
    store: Arc<dyn ObjectStore>,
    lister: Arc<dyn PaginatedListStore>,
    page_size: usize,
    runtime: Arc<CloudRuntime>,
    /// Configured secrets, replaced in every message.
    secrets: Vec<String>,
}

impl ObjectStorage {
    /// A storage over `store` (one built client serves reads and paged listings).
    fn over<T: ObjectStore + PaginatedListStore>(
        url: &ObjectUrl,
        store: T,
        page_size: usize,
        runtime: Arc<CloudRuntime>,
        secrets: Vec<String>,
    ) -> ObjectStorage {
        let store = Arc::new(store);
        ObjectStorage {
            base: url.base(),
            store: store.clone(),
            lister: store,
            page_size,
            runtime,
            secrets,
        }
    }

    pub fn s3(
        url: &ObjectUrl,
        o: &S3Options,
        runtime: Arc<CloudRuntime>,
    ) -> Result<ObjectStorage, object_store::Error> {
        use object_store::aws::AmazonS3Builder;
        // The environment first (AWS_* variables, the default credential chain), then the
        // block's keys over it.
        let mut b = AmazonS3Builder::from_env()
            .with_bucket_name(&url.bucket)
            .with_retry(retry_config());
        let mut allow_http = false;
        if let Some(r) = &o.region {
            b = b.with_region(r);
        }
        if let (Some(id), Some(secret)) = (&o.access_key_id, &o.secret_access_key) {
            b = b.with_access_key_id(id).with_secret_access_key(secret);
        }
        // `s3.endpoint`, else the endpoint the AWS SDKs read from the environment (an
        // S3-compatible server such as MinIO or moto; `from_env` above took it too, but plain
        // HTTP and path-style requests must be allowed here for it).
        let endpoint = o.endpoint.clone().or_else(|| {
            ["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT"]
                .iter()
                .find_map(|k| std::env::var(k).ok().filter(|v| !v.trim().is_empty()))
        });
        if let Some(e) = &endpoint {
            allow_http = e.starts_with("http://");
            b = b
                .with_endpoint(e.trim_end_matches('/'))
                .with_virtual_hosted_style_request(false);
        }
        Ok(ObjectStorage::over(
            url,
            b.with_client_options(client_options(allow_http)).build()?,
            o.page_size,
            runtime,
            o.secret_access_key.iter().cloned().collect(),
        ))
    }

    pub fn gcs(
        url: &ObjectUrl,
        o: &GcpOptions,
        runtime: Arc<CloudRuntime>,
    ) -> Result<ObjectStorage, object_store::Error> {
        use object_store::gcp::GoogleCloudStorageBuilder;
        let b = GoogleCloudStorageBuilder::new()
            .with_bucket_name(&url.bucket)
            .with_service_account_path(o.service_key.to_string_lossy())
            .with_retry(retry_config())
            .with_client_options(client_options(o.allow_http));
        Ok(ObjectStorage::over(
            url,
            b.build()?,
            o.page_size,
            runtime,
            Vec::new(),
        ))
    }

    pub fn azure(
        url: &ObjectUrl,
        o: &AzureOptions,
        runtime: Arc<CloudRuntime>,
    ) -> Result<ObjectStorage, object_store::Error> {
        use object_store::azure::MicrosoftAzureBuilder;
        let mut b = MicrosoftAzureBuilder::new()
            .with_container_name(&url.bucket)
            .with_retry(retry_config());
        let mut secrets = Vec::new();
        let mut allow_http = false;
        let mut account = url.account.clone();
        match &o.connection {
            Some(c) => {
                if c.development {
                    b = b.with_use_emulator(true);
                    allow_http = true;
                }
                if let Some(name) = &c.account_name {
                    account = Some(name.clone());
                }
                if let Some(key) = &c.account_key {
                    b = b.with_access_key(key);
                    secrets.push(key.clone());
                }
                if let Some(sas) = &c.sas {
                    let pairs: Vec<(String, String)> = sas
                        .trim_start_matches('?')
                        .split('&')
                        .filter_map(|kv| kv.split_once('='))
                        .map(|(k, v)| (percent_decode(k), percent_decode(v)))
                        .collect();
                    for (k, v) in &pairs {
                        if k == "sig" {
                            secrets.push(v.clone());
                        }
                    }
                    secrets.push(sas.clone());
                    b = b.with_sas_authorization(pairs);
                }
                if let Some(e) = &c.blob_endpoint {
                    allow_http |= e.starts_with("http://");
                    b = b.with_endpoint(e.clone());
                }
            }
            None => {
                if let Some(name) = &o.account_name {
                    account = Some(name.clone());
                }
                if let Some(key) = &o.account_key {
                    b = b.with_access_key(key);
                    secrets.push(key.clone());
                }
            }
        }
        if let Some(a) = account {
            b = b.with_account(a);
        }
        Ok(ObjectStorage::over(
            url,
            b.with_client_options(client_options(allow_http)).build()?,
            o.page_size,
            runtime,
            secrets,
        ))
    }

    /// A message with every configured secret replaced.
    fn scrub(&self, message: String) -> String {
        self.secrets
            .iter()
            .filter(|s| s.len() >= 4)
            .fold(message, |m, s| m.replace(s.as_str(), "***REDACTED***"))
    }

    fn io_error(&self, e: object_store::Error) -> io::Error {
        let kind = match e {
            object_store::Error::NotFound { .. } => io::ErrorKind::NotFound,
            _ => io::ErrorKind::Other,
        };
        io::Error::new(kind, self.scrub(e.to_string()))
    }

    fn object_path(&self, key: &str) -> io::Result<ObjectPath> {
        ObjectPath::parse(key).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}{key}: not a readable object key: {e}", self.base),
            )
        })
    }

    fn listed(&self, meta: object_store::ObjectMeta) -> Listed {
        let key = meta.location.to_string();
        let modified: SystemTime = meta.last_modified.into();
        Listed {
            path: format!("{}{}", self.base, percent_encode_key(&key)),
            locator: key,
            listed: Some(FileMetadata {
                size: meta.size,
                modified: Some(modified),
                // Object stores keep no creation time (as Lucille: none for S3).
                created: None,
            }),
            version: meta.e_tag.or(meta.version),
        }
    }

    /// Every object under `prefix`. The error is the store's message with the secrets
    /// replaced: its source is not kept, as it may carry them.
    async fn list_all(&self, prefix: &str) -> Result<Vec<object_store::ObjectMeta>, StorageError> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let opts = PaginatedListOptions {
                max_keys: Some(self.page_size),
                page_token: token.take(),
                ..Default::default()
            };
            let prefix = (!prefix.is_empty()).then_some(prefix);
            let page = self
                .lister
                .list_paginated(prefix, opts)
                .await
                .map_err(|e| StorageError::new(self.scrub(e.to_string())))?;
            out.extend(page.result.objects);
            match page.page_token {
                Some(t) if !t.is_empty() => token = Some(t),
                _ => break,
            }
        }
        Ok(out)
    }

    /// The key of a `file_path` this storage owns.
    fn key_of(&self, path: &str) -> Option<String> {
        path.strip_prefix(&self.base).map(percent_decode)
    }
}

/// Reads an object's byte stream from a thread outside the runtime.
struct ObjectReader {
    runtime: Arc<CloudRuntime>,
    stream: BoxStream<'static, object_store::Result<Bytes>>,
    chunk: Bytes,
    secrets: Vec<String>,
}

impl Read for ObjectReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.chunk.is_empty() {
            match self.runtime.block_on(self.stream.next())? {
                None => return Ok(0),
                Some(Ok(b)) => self.chunk = b,
                Some(Err(e)) => {
                    let message = self.secrets.iter().fold(e.to_string(), |m, s| {
                        m.replace(s.as_str(), "***REDACTED***")
                    });
                    return Err(io::Error::other(message));
                }
            }
        }
        let n = buf.len().min(self.chunk.len());
        buf[..n].copy_from_slice(&self.chunk[..n]);
        let _ = self.chunk.split_to(n);
        Ok(n)
    }
}

impl Storage for ObjectStorage {
    fn list(&self, location: &str) -> Result<Vec<Listed>, StorageError> {
        let shown = format!("{}{}", self.base, percent_encode_key(location));
        let objects = self
            .runtime
            .block_on(self.list_all(location))
            .map_err(|e| StorageError::new(e.to_string()))?
            .map_err(|e| StorageError::new(format!("cannot list {shown}: {e}")))?;
        // A "folder/" marker comes back as the object "folder" (the crate drops the trailing
        // slash): an empty object whose key + "/" starts other keys is such a marker.
        let mut keys: Vec<String> = objects.iter().map(|m| m.location.to_string()).collect();
        keys.sort();
        let is_folder = |key: &str| {
            let folder = format!("{key}/");
            let at = keys.partition_point(|k| k.as_str() < folder.as_str());
            keys.get(at).is_some_and(|k| k.starts_with(&folder))
        };
        Ok(objects
            .into_iter()
            .filter(|m| !(m.size == 0 && is_folder(m.location.as_ref())))
            .map(|m| self.listed(m))
            .collect())
    }

    fn metadata(&self, file: &Listed) -> io::Result<FileMetadata> {
        let path = self.object_path(&file.locator)?;
        let meta = self
            .runtime
            .block_on(self.store.head(&path))?
            .map_err(|e| self.io_error(e))?;
        Ok(self.listed(meta).listed.unwrap_or_default())
    }

    fn open(&self, file: &Listed) -> io::Result<Opened> {
        let path = self.object_path(&file.locator)?;
        let result = self
            .runtime
            .block_on(self.store.get(&path))?
            .map_err(|e| self.io_error(e))?;
        Ok(Opened::Stream(Box::new(ObjectReader {
            runtime: self.runtime.clone(),
            stream: result.into_stream(),
            chunk: Bytes::new(),
            secrets: self.secrets.clone(),
        })))
    }

    fn open_seekable(&self, file: &Listed) -> io::Result<std::fs::File> {
        let mut input = match self.open(file)? {
            Opened::File(f) => return Ok(f),
            Opened::Stream(s) => s,
        };
        let dir = std::env::temp_dir();
        let path = dir.join(format!("lucille-object-{}", uuid::Uuid::new_v4()));
        let mut spool = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        // Unlinked at once: the open handle keeps the bytes until it is closed.
        let _ = std::fs::remove_file(&path);
        io::copy(&mut input, &mut spool)?;
        io::Seek::seek(&mut spool, io::SeekFrom::Start(0))?;
        Ok(spool)
    }

    fn exists(&self, path: &str) -> io::Result<bool> {
        let Some(key) = self.key_of(path) else {
            return Ok(true);
        };
        let p = self.object_path(&key)?;
        match self.runtime.block_on(self.store.head(&p))? {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(self.io_error(e)),
        }
    }

    fn owns(&self, path: &str) -> bool {
        path.starts_with(&self.base)
    }

    /// Lucille's move: the object is copied to the folder's prefix followed by its whole key,
    /// then deleted. `folder` is a URL of this bucket / container (checked at config time).
    fn move_into(&self, file: &Listed, folder: &str) -> io::Result<()> {
        let prefix = self.key_of(folder).unwrap_or_default();
        let prefix = match prefix.is_empty() || prefix.ends_with('/') {
            true => prefix,
            false => format!("{prefix}/"),
        };
        let from = self.object_path(&file.locator)?;
        let to = self.object_path(&format!("{prefix}{}", file.locator))?;
        self.runtime
            .block_on(async {
                self.store.copy(&from, &to).await?;
                self.store.delete(&from).await
            })?
            .map_err(|e| self.io_error(e))
    }
}

impl CloudConfig {
    /// The object store for `url`'s bucket / container.
    pub fn store_for(
        &self,
        config: &ComponentConfig,
        url: &ObjectUrl,
        runtime: Arc<CloudRuntime>,
    ) -> Result<ObjectStorage, ConfigError> {
        let missing = || {
            config.error(
                "paths",
                format!(
                    "{} is read through the {} block, which is missing (add {} {{ }} with its credentials)",
                    url.base(),
                    url.kind.block(),
                    url.kind.block()
                ),
            )
        };
        let block_error =
            |e: object_store::Error| config.error(url.kind.block(), format!("{}: {e}", url.base()));
        match url.kind {
            StoreKind::S3 => {
                let o = self.s3.as_ref().ok_or_else(missing)?;
                ObjectStorage::s3(url, o, runtime).map_err(block_error)
            }
            StoreKind::Gcs => {
                let o = self.gcp.as_ref().ok_or_else(missing)?;
                ObjectStorage::gcs(url, o, runtime).map_err(block_error)
            }
            StoreKind::Azure => {
                let o = self.azure.as_ref().ok_or_else(missing)?;
                let conn_account = o
                    .connection
                    .as_ref()
                    .and_then(|c| c.account_name.clone())
                    .or_else(|| o.account_name.clone());
                let endpoint_given = o
                    .connection
                    .as_ref()
                    .is_some_and(|c| c.blob_endpoint.is_some() || c.development);
                if let (Some(a), Some(u)) = (&conn_account, &url.account) {
                    if !endpoint_given && !a.eq_ignore_ascii_case(u) {
                        return Err(config.error(
                            "azure",
                            format!(
                                "the credentials are for account {a:?} but {} is in account {u:?}",
                                url.base()
                            ),
                        ));
                    }
                }
                ObjectStorage::azure(url, o, runtime).map_err(block_error)
            }
        }
    }
}
