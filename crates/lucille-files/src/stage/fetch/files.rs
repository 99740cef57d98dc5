//! Where FetchFileContent and ApplyFileHandlers read the file a document names: a local path
//! (or `file://` URI), or an `s3://bucket/key`, `gs://bucket/key` or
//! `https://ACCOUNT.blob.core.windows.net/container/key` object, read through the
//! FileConnector's object storage (`connector::file::storage`) with the stage's own `s3`,
//! `gcp` and `azure` blocks (Lucille's keys, as on the FileConnector). One store per bucket or
//! container, made on first use and kept by the stage instance.

use std::io::Read;

use super::local_path;
use crate::config::{ComponentConfig, ConfigError};
use crate::stage::StageFailure;
use crate::storage::cloud_config::{parse_url, CloudConfig};
use crate::storage::{Listed, Opened, Storage, Stores};

/// A local file (a path, or a `file://` URI) as a stream.
fn local(value: &str) -> Result<Box<dyn Read + Send>, StageFailure> {
    let path = local_path(value)?;
    let file = std::fs::File::open(&path)
        .map_err(|e| StageFailure::msg(format!("cannot read {:?}: {e}", path.display())))?;
    Ok(Box::new(file))
}

/// Adds Lucille's cloud blocks to a stage's spec (read and checked by the storage layer in
/// [`Files::new`]).
pub(crate) use crate::connector::file::with_cloud_blocks;

pub(crate) struct Files {
    cloud: CloudConfig,
    config: ComponentConfig,
    stores: Stores,
}

impl Files {
    /// Reads the stage's `s3` / `gcp` / `azure` blocks (the storage layer's own reading of
    /// them, declared by [`with_cloud_blocks`]); their problems go to `errors`, with the
    /// stage's others, and the stage is built only when there are none.
    pub fn new(config: &ComponentConfig, errors: &mut Vec<ConfigError>) -> Self {
        Files {
            cloud: CloudConfig::from_config(config, errors),
            config: config.clone(),
            stores: Stores::default(),
        }
    }

    /// The bytes of the file `value` names, as a stream.
    pub fn open(&mut self, value: &str) -> Result<Box<dyn Read + Send>, StageFailure> {
        // `file://` URIs and plain paths are local files.
        let url = match parse_url(value) {
            Ok(Some(url)) => url,
            Ok(None) => return local(value),
            Err(_) if value.starts_with("file://") => return local(value),
            // An object-store URL that names no bucket, or a scheme no store serves.
            Err(m) => return Err(StageFailure::msg(format!("cannot read {value}: {m}"))),
        };
        if !self.cloud.has_block(url.kind) {
            let block = url.kind.block();
            return Err(StageFailure::msg(format!(
                "cannot read {value}: the stage has no {block} block (add {block} {{ }} with its \
                 credentials{})",
                if block == "s3" {
                    "; an empty one uses the AWS environment"
                } else {
                    ""
                }
            )));
        }
        let storage = self
            .stores
            .get(&self.cloud, &self.config, &url)
            .map_err(|e| StageFailure::msg(format!("cannot read {value}: {e}")))?;
        let listed = Listed {
            path: value.to_string(),
            locator: url.prefix.clone(),
            listed: None,
            version: None,
        };
        match storage.open(&listed) {
            Ok(Opened::Stream(s)) => Ok(s),
            Ok(Opened::File(f)) => Ok(Box::new(f)),
            Err(e) => Err(StageFailure::msg(format!("cannot read {value}: {e}"))),
        }
    }

    /// The whole file `value` names.
    pub fn read(&mut self, value: &str) -> Result<Vec<u8>, StageFailure> {
        let mut bytes = Vec::new();
        self.open(value)?
            .read_to_end(&mut bytes)
            .map_err(|e| StageFailure::msg(format!("cannot read {value}: {e}")))?;
        Ok(bytes)
    }
}
