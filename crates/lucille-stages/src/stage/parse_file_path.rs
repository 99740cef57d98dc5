//! ParseFilePath: splits a file path held in a field into its parts.
//!
//! Keys: `filePathField` (default `file_path`), `fileSep` (`/` or `\`, the separator used in
//! the output; default the platform's, `/` on Unix), `uppercaseExtension` (default true),
//! `includeHierarchy` (default true).
//!
//! Both `/` and `\` are read as separators whatever `fileSep` is. The path is normalised as
//! Lucille (commons-io) does: separators are unified, `.` steps and repeated separators are
//! dropped, `..` steps remove the step before them, and a trailing separator is dropped. A
//! prefix (`C:`, `C:\`, `/`, `\\server\`, `~/`, `~user/`) is kept. The stage writes:
//! - `filename`: the last step (`myfile.xml`);
//! - `folder`: everything before it, without the final separator (`Z:\folder1`), or the
//!   prefix alone (`/` for `/file`);
//! - `path`: the normalised path;
//! - `file_extension`: the text after the last `.` of the file name (empty if none),
//!   uppercased if `uppercaseExtension`;
//! - `file_paths` (if `includeHierarchy`): every ancestor path, shortest first
//!   (`Z:`, `Z:\folder1`).
//!
//! A missing or null field is skipped. A path whose `..` steps climb above its start fails the
//! document (commons-io returns null there).
//!
//! Differences from Lucille: `filename`, `folder`, `path` and `file_extension` are set as single
//! values when absent (Lucille always appends, making one-element lists); `file_paths` is a
//! list. For a path that starts with a separator (`/a/b/c.txt`) the ancestors keep it
//! (`/a`, `/a/b`; Lucille writes `a`, `a/b`).

use super::{Stage, StageDescriptor, StageFailure, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec};
use crate::document::Document;

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "ParseFilePath",
    spec: ParseFilePathOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Splits a file path held in a field into its parts: `filename`, `folder`, `path`,
/// `file_extension` and `file_paths`.
#[derive(Options)]
#[options(base = Spec::stage())]
struct ParseFilePathOptions {
    /// The field holding the path.
    #[option(default = "file_path")]
    file_path_field: String,
    /// The separator used in the output, `/` or `\` (default: the platform's); both are read.
    file_sep: Option<String>,
    /// Uppercase `file_extension`.
    #[option(default = true)]
    uppercase_extension: bool,
    /// Also write every ancestor path to `file_paths`.
    #[option(default = true)]
    include_hierarchy: bool,
}

struct ParseFilePath {
    field: String,
    sep: char,
    uppercase: bool,
    hierarchy: bool,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = ParseFilePathOptions::from_config(config)?;
    let sep = match o.file_sep.as_deref() {
        None => std::path::MAIN_SEPARATOR,
        Some("/") => '/',
        Some("\\") => '\\',
        Some(s) => {
            return Err(config
                .error(
                    "fileSep",
                    format!(
                        "must be \"/\" or \"\\\" (escape it as \"\\\\\" in HOCON), found {s:?}"
                    ),
                )
                .into())
        }
    };
    Ok(Box::new(ParseFilePath {
        field: o.file_path_field,
        sep,
        uppercase: o.uppercase_extension,
        hierarchy: o.include_hierarchy,
    }))
}

fn is_sep(c: char) -> bool {
    c == '/' || c == '\\'
}

/// Length in bytes of the path's prefix, as commons-io's `getPrefixLength` (simplified).
fn prefix_len(path: &str) -> usize {
    let b = path.as_bytes();
    let sep = |i: usize| b.get(i).is_some_and(|c| *c == b'/' || *c == b'\\');
    if b.is_empty() {
        return 0;
    }
    if b[0] == b'~' {
        // ~ or ~user, up to and including the following separator.
        return match path.find(is_sep) {
            Some(i) => i + 1,
            None => path.len(),
        };
    }
    if b.len() >= 2 && b[1] == b':' && b[0].is_ascii_alphabetic() {
        return if sep(2) { 3 } else { 2 };
    }
    if sep(0) && sep(1) {
        // UNC: \\server\ (the server name and its separator are part of the prefix).
        if let Some(i) = path[2..].find(is_sep) {
            if i > 0 {
                return 2 + i + 1;
            }
        }
        return 1;
    }
    if sep(0) {
        return 1;
    }
    0
}

/// Normalises a path with `sep`; `None` if `..` climbs above the start.
pub(crate) fn normalize(path: &str, sep: char) -> Option<(String, usize)> {
    let plen = prefix_len(path);
    let prefix: String = path[..plen]
        .chars()
        .map(|c| if is_sep(c) { sep } else { c })
        .collect();
    let mut steps: Vec<&str> = Vec::new();
    for step in path[plen..].split(is_sep) {
        match step {
            "" | "." => {}
            ".." => {
                steps.pop()?;
            }
            s => steps.push(s),
        }
    }
    let mut out = prefix.clone();
    out.push_str(&steps.join(&sep.to_string()));
    Some((out, prefix.len()))
}

impl Stage for ParseFilePath {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        let Some(raw) = doc.get_string(&self.field)? else {
            return Ok(None);
        };
        let (path, plen) = normalize(&raw, self.sep).ok_or_else(|| {
            StageFailure::msg(format!(
                "field {:?} of document {:?} holds the path {raw:?}, whose \"..\" steps climb above its start",
                self.field,
                doc.id()
            ))
        })?;
        let last_sep = path.rfind(self.sep).filter(|i| *i >= plen);
        let filename = match last_sep {
            Some(i) => &path[i + 1..],
            None => &path[plen..],
        };
        let folder = match last_sep {
            Some(i) if i > 0 => &path[..i],
            _ => &path[..plen],
        };
        let extension = match filename.rfind('.') {
            Some(i) => &filename[i + 1..],
            None => "",
        };
        let extension = if self.uppercase {
            extension.to_uppercase()
        } else {
            extension.to_string()
        };
        doc.set_or_add("filename", filename)?;
        doc.set_or_add("folder", folder)?;
        doc.set_or_add("path", path.as_str())?;
        doc.set_or_add("file_extension", extension)?;
        if self.hierarchy {
            let lead: String = path.chars().take_while(|c| *c == self.sep).collect();
            let steps: Vec<&str> = path.split(self.sep).filter(|s| !s.is_empty()).collect();
            let sep = self.sep.to_string();
            for i in 1..steps.len() {
                doc.add_to_field("file_paths", format!("{lead}{}", steps[..i].join(&sep)))?;
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::normalize;
    use crate::stage::testing::{build_err, build_stage, process, process_err};
    use serde_json::json;

    fn stage(extra: serde_json::Value) -> Box<dyn crate::stage::Stage> {
        let mut cfg = json!({"class": "ParseFilePath"});
        for (k, v) in extra.as_object().unwrap() {
            cfg[k] = v.clone();
        }
        build_stage(cfg)
    }

    #[test]
    fn windows_separator_with_hierarchy() {
        let mut s = stage(json!({"fileSep": "\\"}));
        for input in ["Z:\\folder1\\myfile.csv", "Z:/folder1/myfile.csv"] {
            let out = process(&mut s, json!({"id": "d", "file_path": input}));
            assert_eq!(out.get("filename"), Some(&json!("myfile.csv")));
            assert_eq!(out.get("folder"), Some(&json!("Z:\\folder1")));
            assert_eq!(out.get("path"), Some(&json!("Z:\\folder1\\myfile.csv")));
            assert_eq!(out.get("file_extension"), Some(&json!("CSV")));
            assert_eq!(out.get("file_paths"), Some(&json!(["Z:", "Z:\\folder1"])));
        }
    }

    #[test]
    fn unix_separator_and_normalization() {
        let mut s = stage(json!({"fileSep": "/"}));
        let out = process(
            &mut s,
            json!({"id": "d", "file_path": "Z:\\folder1\\.\\folder2\\..\\folder3\\\\myfile.xml\\"}),
        );
        assert_eq!(
            out.get("path"),
            Some(&json!("Z:/folder1/folder3/myfile.xml"))
        );
        assert_eq!(out.get("folder"), Some(&json!("Z:/folder1/folder3")));
        assert_eq!(out.get("filename"), Some(&json!("myfile.xml")));
        assert_eq!(
            out.get("file_paths"),
            Some(&json!(["Z:", "Z:/folder1", "Z:/folder1/folder3"]))
        );
        let out = process(&mut s, json!({"id": "d", "file_path": "/a/b/c.tar.gz"}));
        assert_eq!(out.get("folder"), Some(&json!("/a/b")));
        assert_eq!(out.get("file_extension"), Some(&json!("GZ")));
        assert_eq!(out.get("file_paths"), Some(&json!(["/a", "/a/b"])));
        let out = process(&mut s, json!({"id": "d", "file_path": "/file"}));
        assert_eq!(out.get("folder"), Some(&json!("/")));
        assert_eq!(out.get("filename"), Some(&json!("file")));
        assert_eq!(out.get("file_extension"), Some(&json!("")));
        assert!(!out.has("file_paths"));
        let out = process(&mut s, json!({"id": "d", "file_path": "notes.txt"}));
        assert_eq!(out.get("folder"), Some(&json!("")));
        assert_eq!(out.get("filename"), Some(&json!("notes.txt")));
    }

    #[test]
    fn prefixes() {
        assert_eq!(
            normalize("\\\\server\\share\\x", '\\').unwrap().0,
            "\\\\server\\share\\x"
        );
        assert_eq!(normalize("~/a/../b", '/').unwrap().0, "~/b");
        assert_eq!(normalize("C:a\\b", '/').unwrap().0, "C:a/b");
        assert!(normalize("a/../../b", '/').is_none());
        assert!(normalize("/..", '/').is_none());
    }

    #[test]
    fn options_and_other_field() {
        let mut s = stage(
            json!({"filePathField": "path_here", "uppercaseExtension": false,
            "includeHierarchy": false, "fileSep": "/"}),
        );
        let out = process(
            &mut s,
            json!({"id": "d", "path_here": "Z:/folder1/myfile.GLaD", "file_path": "C:/bad/secrets.txt"}),
        );
        assert_eq!(out.get("filename"), Some(&json!("myfile.GLaD")));
        assert_eq!(out.get("file_extension"), Some(&json!("GLaD")));
        assert!(!out.has("file_paths"));
        let out = process(
            &mut s,
            json!({"id": "d", "path_here": "a.txt", "filename": "x"}),
        );
        assert_eq!(out.get("filename"), Some(&json!(["x", "a.txt"])), "appends");
    }

    #[test]
    fn missing_and_bad_values() {
        let mut s = stage(json!({"fileSep": "/"}));
        let out = process(&mut s, json!({"id": "d"}));
        assert_eq!(out.field_count(), 0);
        let err = process_err(&mut s, json!({"id": "d", "file_path": "a/../../etc"}));
        assert!(err.contains("climb above"), "{err}");
        let err = process_err(&mut s, json!({"id": "d", "file_path": {"a": 1}}));
        assert!(err.contains("file_path"), "{err}");
    }

    #[test]
    fn bad_configs() {
        assert!(build_err(json!({"class": "ParseFilePath", "fileSep": "*"})).contains("fileSep"));
        assert!(
            build_err(json!({"class": "ParseFilePath", "includeHierarchy": "x"}))
                .contains("includeHierarchy")
        );
    }
}
