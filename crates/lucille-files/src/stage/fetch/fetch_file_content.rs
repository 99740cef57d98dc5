//! FetchFileContent: reads the file named by a field into another field.
//!
//! Keys (Lucille's): `filePathField` (default `file_path`; documents without it are left
//! alone), `fileContentField` (default `file_content`; overwritten). The bytes are stored as
//! base64 text, Lucille's form of `byte[]` (`Document::get_bytes`). A relative path resolves
//! against the working directory; `file://` URIs are read too. A file that cannot be read
//! fails the document with the path and the reason, as Lucille's StageException does.
//!
//! A path may also be an `s3://bucket/key`, `gs://bucket/key` or Azure blob URL, read with the
//! stage's `s3` / `gcp` / `azure` block (Lucille's keys, as on the FileConnector; `files.rs`).

use super::files::{with_cloud_blocks, Files};
use crate::config::{ComponentConfig, ConfigError, ConfigErrors, Options, Spec};
use crate::document::Document;
use crate::stage::{Stage, StageDescriptor, StageFailure, StageResult};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "FetchFileContent",
    spec: FetchFileContentOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Reads the file (local, or an s3:// / gs:// / Azure blob URL) named by a field into another
/// field, as base64 bytes.
#[derive(Options)]
#[options(base = Spec::stage(), extend = with_cloud_blocks)]
struct FetchFileContentOptions {
    /// The field holding the file's path or URL; a document without it is left alone.
    #[option(default = "file_path")]
    file_path_field: String,
    /// The field that gets the file's bytes (base64), overwritten.
    #[option(default = "file_content")]
    file_content_field: String,
}

struct FetchFileContent {
    path_field: String,
    content_field: String,
    files: Files,
}

/// Checks a field name read from `key`: not empty, not reserved.
pub(crate) fn check_field(
    config: &ComponentConfig,
    key: &str,
    value: &str,
) -> Result<(), ConfigError> {
    if value.is_empty() || crate::document::is_reserved(value) {
        return Err(config.error(key, format!("{value:?} cannot be used: reserved or empty")));
    }
    Ok(())
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = FetchFileContentOptions::from_config(config)?;
    let mut errors: Vec<ConfigError> = [
        check_field(config, "filePathField", &o.file_path_field),
        check_field(config, "fileContentField", &o.file_content_field),
    ]
    .into_iter()
    .filter_map(Result::err)
    .collect();
    let files = Files::new(config, &mut errors);
    if !errors.is_empty() {
        return Err(errors.into());
    }
    Ok(Box::new(FetchFileContent {
        path_field: o.file_path_field,
        content_field: o.file_content_field,
        files,
    }))
}

impl Stage for FetchFileContent {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        let Some(value) = doc.get_string(&self.path_field)? else {
            return Ok(None);
        };
        let bytes = self
            .files
            .read(&value)
            .map_err(|e| StageFailure::msg(format!("{e} (from {})", self.path_field)))?;
        doc.set_bytes(&self.content_field, &bytes)?;
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::stage::testing::temp_file;
    use crate::stage::testing::{build_err, build_stage, process, process_err};

    #[test]
    fn reads_files_into_the_content_field() {
        let hello = temp_file("hello.txt", b"Hello, world!\n");
        let goodbye = temp_file("goodbye.bin", &[0, 159, 146, 150, 255]);
        let (hello, goodbye) = (hello.to_str().unwrap(), goodbye.to_str().unwrap());
        let mut s = build_stage(json!({"class": "FetchFileContent"}));
        let out = process(&mut s, json!({"id": "h", "file_path": hello}));
        assert_eq!(
            out.get_bytes("file_content").unwrap(),
            Some(b"Hello, world!\n".to_vec())
        );
        assert_eq!(
            out.get("file_content"),
            Some(&json!("SGVsbG8sIHdvcmxkIQo="))
        );
        let out = process(&mut s, json!({"id": "g", "file_path": goodbye}));
        assert_eq!(
            out.get_bytes("file_content").unwrap(),
            Some(vec![0, 159, 146, 150, 255])
        );
        // Overwrites what was there; file:// URIs are local files too.
        let out = process(
            &mut s,
            json!({"id": "o", "file_path": format!("file://{hello}"), "file_content": "AQID"}),
        );
        assert_eq!(
            out.get_bytes("file_content").unwrap(),
            Some(b"Hello, world!\n".to_vec())
        );
    }

    #[test]
    fn alternate_fields() {
        let hello = temp_file("hello.txt", b"hi");
        let hello = hello.to_str().unwrap();
        let mut s = build_stage(json!({"class": "FetchFileContent", "filePathField": "source"}));
        let out = process(&mut s, json!({"id": "a", "source": hello}));
        assert_eq!(out.get_bytes("file_content").unwrap(), Some(b"hi".to_vec()));
        let out = process(&mut s, json!({"id": "b", "file_path": hello}));
        assert!(!out.has("file_content"));
        let mut s =
            build_stage(json!({"class": "FetchFileContent", "fileContentField": "contents"}));
        let out = process(&mut s, json!({"id": "c", "file_path": hello}));
        assert_eq!(out.get_bytes("contents").unwrap(), Some(b"hi".to_vec()));
        assert!(!out.has("file_content"));
    }

    #[test]
    fn missing_files_and_cloud_paths_fail() {
        let mut s = build_stage(json!({"class": "FetchFileContent"}));
        let err = process_err(
            &mut s,
            json!({"id": "m", "file_path": "/no/such/dir/missing.txt"}),
        );
        assert!(err.contains("missing.txt"), "{err}");
        let err = process_err(
            &mut s,
            json!({"id": "s", "file_path": "s3://bucket/hello.txt"}),
        );
        assert!(
            err.contains("s3://bucket/hello.txt") && err.contains("no s3 block"),
            "{err}"
        );
        let err = process_err(&mut s, json!({"id": "f", "file_path": "ftp://host/x.txt"}));
        assert!(err.contains("ftp://"), "{err}");
        // The cloud blocks are checked as the FileConnector's are.
        let err = build_err(json!({"class": "FetchFileContent", "s3": {"accessKeyId": "a"}}));
        assert!(err.contains("s3.secretAccessKey"), "{err}");
        let err = build_err(json!({"class": "FetchFileContent", "azure": {}}));
        assert!(
            err.contains("azure") && err.contains("connectionString"),
            "{err}"
        );
        assert!(
            build_err(json!({"class": "FetchFileContent", "fileContentField": "id"}))
                .contains("fileContentField")
        );
    }
}
