//! An OpenNLP model file: a zip archive of named artifacts, `manifest.properties` (a Java
//! properties file) among them. Every entry is read into memory once; models are small.

use std::collections::HashMap;
use std::io::{Cursor, Read};

use crate::error::{OpenNlpError, Result};

/// A model file's entries and its manifest.
#[derive(Debug, Clone)]
pub struct ModelArchive {
    entries: HashMap<String, Vec<u8>>,
    manifest: HashMap<String, String>,
}

const MANIFEST: &str = "manifest.properties";

impl ModelArchive {
    /// Reads a model file from disk.
    pub fn open(path: impl AsRef<std::path::Path>) -> Result<Self> {
        Self::from_bytes(&std::fs::read(path)?)
    }

    /// Reads a model file's bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let mut zip = zip::ZipArchive::new(Cursor::new(bytes))?;
        let mut entries = HashMap::new();
        for i in 0..zip.len() {
            let mut file = zip.by_index(i)?;
            if file.is_dir() {
                continue;
            }
            // The declared size is only a hint (a corrupt archive may lie): read to the end.
            let mut data = Vec::new();
            file.read_to_end(&mut data)?;
            entries.insert(file.name().to_string(), data);
        }
        let manifest = entries
            .get(MANIFEST)
            .ok_or_else(|| OpenNlpError::MissingEntry(MANIFEST.into()))?;
        let manifest = parse_properties(&String::from_utf8_lossy(manifest));
        if !manifest.contains_key("OpenNLP-Version") {
            return Err(OpenNlpError::MissingProperty("OpenNLP-Version"));
        }
        Ok(ModelArchive { entries, manifest })
    }

    /// An entry's bytes.
    pub fn entry(&self, name: &str) -> Option<&[u8]> {
        self.entries.get(name).map(Vec::as_slice)
    }

    /// A manifest property.
    pub fn property(&self, key: &str) -> Option<&str> {
        self.manifest.get(key).map(String::as_str)
    }

    /// Checks `Component-Name`, as OpenNLP's BaseModel does (a tokenizer model given to the
    /// name finder is an error, not nonsense).
    pub(crate) fn expect_component(&self, expected: &'static str) -> Result<()> {
        let found = self
            .property("Component-Name")
            .ok_or(OpenNlpError::MissingProperty("Component-Name"))?;
        if found != expected {
            return Err(OpenNlpError::WrongComponent {
                expected,
                found: found.to_string(),
            });
        }
        Ok(())
    }
}

/// `java.util.Properties.load`: `key=value`, `key: value` or `key value` lines, `#` / `!`
/// comments, backslash continuations and escapes (`\uXXXX`, `\t`, `\n`, `\r`, `\f`, others
/// literal).
pub(crate) fn parse_properties(text: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let mut lines = text.lines();
    while let Some(first) = lines.next() {
        let mut line = first.trim_start().to_string();
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            continue;
        }
        // A line ending in an odd number of backslashes continues on the next one.
        while line.chars().rev().take_while(|&c| c == '\\').count() % 2 == 1 {
            line.pop();
            match lines.next() {
                Some(next) => line.push_str(next.trim_start()),
                None => break,
            }
        }
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        let mut key_end = chars.len();
        while i < chars.len() {
            match chars[i] {
                '\\' => i += 2,
                '=' | ':' | ' ' | '\t' | '\u{c}' => {
                    key_end = i;
                    break;
                }
                _ => i += 1,
            }
        }
        let key_end = key_end.min(chars.len());
        let mut v = key_end;
        while v < chars.len() && matches!(chars[v], ' ' | '\t' | '\u{c}') {
            v += 1;
        }
        if v < chars.len() && matches!(chars[v], '=' | ':') {
            v += 1;
            while v < chars.len() && matches!(chars[v], ' ' | '\t' | '\u{c}') {
                v += 1;
            }
        }
        out.insert(
            unescape(&chars[..key_end]),
            unescape(&chars[v.min(chars.len())..]),
        );
    }
    out
}

fn unescape(chars: &[char]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        if c != '\\' || i >= chars.len() {
            out.push(c);
            continue;
        }
        let e = chars[i];
        i += 1;
        match e {
            't' => out.push('\t'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            'f' => out.push('\u{c}'),
            'u' => {
                let hex: String = chars.iter().skip(i).take(4).collect();
                match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                    Some(ch) if hex.len() == 4 => {
                        out.push(ch);
                        i += 4;
                    }
                    _ => out.push('u'),
                }
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_properties() {
        let p = parse_properties("#c\nManifest-Version=1.0\nalphaNumericPattern=^[A-Za-z0-9]+$\na\\:b : x\\u0041\\\n  y\n");
        assert_eq!(p["Manifest-Version"], "1.0");
        assert_eq!(p["alphaNumericPattern"], "^[A-Za-z0-9]+$");
        assert_eq!(p["a:b"], "xAy");
    }

    #[test]
    fn not_a_zip_is_an_error() {
        assert!(matches!(
            ModelArchive::from_bytes(b"not a zip"),
            Err(OpenNlpError::Zip(_))
        ));
    }
}
