//! Configuration: component specs and typed reads (`spec`), durations and config-relative
//! paths. Parsing HOCON text is the `lucille-hocon` crate's.

pub mod duration;
pub mod options;
pub mod paths;
pub mod spec;

pub use duration::parse_duration;
/// `#[derive(Options)]`: see [`options`].
pub use lucille_options_derive::Options;
pub use options::{Checked, OptionValue, Options, Strings};
pub use paths::PathContext;

pub use spec::{
    as_bool, as_f64, as_i64, as_string, ComponentConfig, ConfigError, ConfigErrors, Kind, Property,
    Spec,
};

/// The words of a key: split at `_`, `-`, `.` and other punctuation and at camelCase
/// boundaries (`apiKey`, `APIKey`, `api_key` and `API-KEY` are all `api`, `key`), lower-cased.
fn key_words(key: &str) -> Vec<String> {
    let chars: Vec<char> = key.chars().collect();
    let mut words = Vec::new();
    let mut cur = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if c.is_uppercase() && !cur.is_empty() {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            // fooBar | APIKey (the K starts a word) | v2Token
            if prev.is_lowercase() || prev.is_ascii_digit() || (prev.is_uppercase() && next_lower) {
                words.push(std::mem::take(&mut cur));
            }
        }
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// Whether a key names a secret: its last word is one (`password`, `authToken`,
/// `clientSecret`), or its last two (`apiKey`, `private_key`). Matched as words, not
/// substrings, so `max-token-count` or `FAIL_ON_TRAILING_TOKENS` are not secrets.
pub fn is_secret_key(key: &str) -> bool {
    const LAST: [&str; 9] = [
        "password",
        "passwd",
        "secret",
        "token",
        "credential",
        "credentials",
        "apikey",
        "privatekey",
        "passphrase",
    ];
    const PAIRS: [&str; 5] = [
        "apikey",
        "privatekey",
        "secretkey",
        "accesskey",
        "accountkey",
    ];
    let words = key_words(key);
    let Some(last) = words.last() else {
        return false;
    };
    if LAST.contains(&last.as_str()) {
        return true;
    }
    words.len() >= 2 && PAIRS.contains(&format!("{}{last}", words[words.len() - 2]).as_str())
}

/// Sets the dotted `path` (`worker.deadLetterPath`) of a config object to `value`, making the
/// objects on the way (and replacing a value on the way that is not one): how an override given
/// as a value, not as HOCON text, is laid on a resolved config.
pub fn set_path(config: &mut serde_json::Value, path: &str, value: serde_json::Value) {
    let mut node = config;
    let mut parts = path.split('.').peekable();
    while let Some(part) = parts.next() {
        if !node.is_object() {
            *node = serde_json::Value::Object(serde_json::Map::new());
        }
        let serde_json::Value::Object(map) = node else {
            return;
        };
        if parts.peek().is_none() {
            map.insert(part.to_string(), value);
            return;
        }
        node = map
            .entry(part.to_string())
            .or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()));
    }
}

/// Replaces the values of secret keys (password, apiKey, token, secret, ...: see
/// [`is_secret_key`]) and the passwords of connection strings with a marker, for
/// `lucille render`.
pub fn redact(value: &mut serde_json::Value) {
    const MARKER: &str = "***REDACTED***";
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                let secret = is_secret_key(k);
                if secret && !v.is_object() && !v.is_array() && !v.is_null() {
                    *v = serde_json::Value::String(MARKER.into());
                } else {
                    redact(v);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(redact),
        serde_json::Value::String(s) => {
            if let Some(hidden) = redact_url_password(s, MARKER) {
                *s = hidden;
            }
            if let Some(hidden) = redact_connection_string(s, MARKER) {
                *s = hidden;
            }
        }
        _ => {}
    }
}

/// An Azure-style connection string (`AccountName=a;AccountKey=secret;...`) with its
/// `AccountKey` and `SharedAccessSignature` values replaced; `None` when it has neither.
fn redact_connection_string(s: &str, marker: &str) -> Option<String> {
    let secret = |part: &str| {
        part.split_once('=')
            .is_some_and(|(k, _)| is_connection_string_secret(k))
    };
    if !s.split(';').any(secret) {
        return None;
    }
    let parts: Vec<String> = s
        .split(';')
        .map(|part| match part.split_once('=') {
            Some((k, _)) if secret(part) => format!("{k}={marker}"),
            _ => part.to_string(),
        })
        .collect();
    Some(parts.join(";"))
}

/// Whether a key of an Azure-style connection string (`AccountName=a;AccountKey=secret`) holds
/// a secret.
fn is_connection_string_secret(key: &str) -> bool {
    let k = key.trim();
    k.eq_ignore_ascii_case("AccountKey") || k.eq_ignore_ascii_case("SharedAccessSignature")
}

/// `scheme://user:secret@host...` (a connection string or URL) with the password replaced;
/// `None` when the string carries no password.
fn redact_url_password(s: &str, marker: &str) -> Option<String> {
    let password = url_password(s)?;
    Some(format!(
        "{}{marker}{}",
        &s[..password.start],
        &s[password.end..]
    ))
}

/// Where the password of `scheme://user:secret@host...` is in `s`.
fn url_password(s: &str) -> Option<std::ops::Range<usize>> {
    let start = s.find("://")? + 3;
    let authority_end = s[start..]
        .find(['/', '?', '#'])
        .map_or(s.len(), |i| start + i);
    let at = s[start..authority_end].rfind('@')? + start;
    let colon = s[start..at].find(':')? + start;
    Some(colon + 1..at)
}

/// The secret values of a config, as [`redact`] finds them (values of secret keys, passwords
/// in URLs and connection strings), for a process that must also keep them out of texts it
/// did not build (error messages, reasons): see [`scrub`].
pub fn secrets(value: &serde_json::Value) -> Vec<String> {
    fn walk(value: &serde_json::Value, secret_key: bool, out: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(map) => {
                for (k, v) in map {
                    walk(v, is_secret_key(k), out);
                }
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| walk(v, false, out)),
            serde_json::Value::String(s) if secret_key => out.push(s.clone()),
            serde_json::Value::String(s) => {
                if let Some(r) = url_password(s) {
                    out.push(s[r].to_string());
                }
                for part in s.split(';') {
                    if let Some((k, v)) = part.split_once('=') {
                        if is_connection_string_secret(k) {
                            out.push(v.to_string());
                        }
                    }
                }
            }
            serde_json::Value::Number(n) if secret_key => out.push(n.to_string()),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(value, false, &mut out);
    // Too short to hide without mangling the text around it (and nothing worth hiding).
    out.retain(|s| s.chars().count() >= 3);
    // Longest first, so a secret that contains another is replaced whole.
    out.sort_by_key(|s| std::cmp::Reverse(s.len()));
    out.dedup();
    out
}

/// `text` with every one of `secrets` replaced by the marker [`redact`] writes.
pub fn scrub(text: &str, secrets: &[String]) -> String {
    let mut text = text.to_string();
    for s in secrets {
        if text.contains(s.as_str()) {
            text = text.replace(s.as_str(), "***REDACTED***");
        }
    }
    text
}

#[cfg(test)]
mod tests {
    #[test]
    fn set_path_makes_the_objects_on_the_way() {
        let mut v = serde_json::json!({"worker": {"threads": 2}, "a": 1});
        super::set_path(&mut v, "worker.deadLetterPath", serde_json::json!("/x"));
        super::set_path(&mut v, "a.b.c", serde_json::json!(1));
        assert_eq!(
            v,
            serde_json::json!({"worker": {"threads": 2, "deadLetterPath": "/x"}, "a": {"b": {"c": 1}}})
        );
    }

    #[test]
    fn secrets_are_found_as_redact_finds_them_and_scrubbed() {
        let config = serde_json::json!({
            "indexer": {"type": "solr", "password": "hunter22", "apiKey": 12345},
            "db": {"url": "postgres://me:s3cr3t@db/x", "maxTokenCount": "plain"},
            "azure": {"connectionString": "AccountName=a;AccountKey=k3y-value;x=y"},
            "short": {"token": "ab"}
        });
        let found = super::secrets(&config);
        for s in ["hunter22", "12345", "s3cr3t", "k3y-value"] {
            assert!(found.iter().any(|f| f == s), "{s} not in {found:?}");
        }
        assert!(
            !found.iter().any(|f| f == "plain" || f == "ab"),
            "{found:?}"
        );
        assert_eq!(
            super::scrub("login with hunter22 to db (s3cr3t)", &found),
            "login with ***REDACTED*** to db (***REDACTED***)"
        );
    }

    #[test]
    fn redacts_secret_keys_at_any_depth() {
        let mut v = serde_json::json!({"opensearch": {"url": "http://x", "password": "p", "api_key": 5},
            "list": [{"authToken": "t"}], "secrets": {"nested": "kept as an object walk"}, "name": "ok"});
        super::redact(&mut v);
        assert_eq!(v["opensearch"]["password"], "***REDACTED***");
        assert_eq!(v["opensearch"]["api_key"], "***REDACTED***");
        assert_eq!(v["opensearch"]["url"], "http://x");
        assert_eq!(v["list"][0]["authToken"], "***REDACTED***");
        assert_eq!(v["name"], "ok");
    }

    #[test]
    fn redacts_azure_connection_string_keys() {
        let mut v = serde_json::json!({"azure": {"connectionString":
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=c2VjcmV0;EndpointSuffix=core.windows.net"},
            "sas": "BlobEndpoint=https://x;SharedAccessSignature=sv=1&sig=abc", "plain": "a=b;c=d"});
        super::redact(&mut v);
        assert_eq!(
            v["azure"]["connectionString"],
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=***REDACTED***;EndpointSuffix=core.windows.net"
        );
        assert_eq!(
            v["sas"],
            "BlobEndpoint=https://x;SharedAccessSignature=***REDACTED***"
        );
        assert_eq!(v["plain"], "a=b;c=d");
    }

    #[test]
    fn secret_keys_are_matched_as_words() {
        for k in [
            "password",
            "apiKey",
            "api_key",
            "API-KEY",
            "APIKey",
            "token",
            "authToken",
            "access_token",
            "secret",
            "clientSecret",
            "privateKey",
            "aws.secretKey",
            "DB_PASSWORD",
            "accountKey",
            "secretAccessKey",
        ] {
            assert!(super::is_secret_key(k), "{k} is a secret");
        }
        for k in [
            "max-token-count",
            "FAIL_ON_TRAILING_TOKENS",
            "maxTokens",
            "tokenizer",
            "passwordFile",
            "secretsPath",
            "keyField",
            "name",
            "",
        ] {
            assert!(!super::is_secret_key(k), "{k} is not a secret");
        }
        let mut v = serde_json::json!({"max-token-count": 5, "FAIL_ON_TRAILING_TOKENS": true,
            "typesense": {"apiKey": "abc"}});
        super::redact(&mut v);
        assert_eq!(v["max-token-count"], 5);
        assert_eq!(v["FAIL_ON_TRAILING_TOKENS"], true);
        assert_eq!(v["typesense"]["apiKey"], "***REDACTED***");
    }

    #[test]
    fn redacts_the_password_inside_connection_strings() {
        let mut v = serde_json::json!({
            "a": "postgresql://lucille:s3cret@127.0.0.1:5432/db?sslmode=disable",
            "b": "jdbc:postgresql://u:p@h/db", "c": "http://host/path@x:y", "d": "user@host",
            "e": "https://only-user@host/"});
        super::redact(&mut v);
        assert_eq!(
            v["a"],
            "postgresql://lucille:***REDACTED***@127.0.0.1:5432/db?sslmode=disable"
        );
        assert_eq!(v["b"], "jdbc:postgresql://u:***REDACTED***@h/db");
        assert_eq!(v["c"], "http://host/path@x:y");
        assert_eq!(v["d"], "user@host");
        assert_eq!(v["e"], "https://only-user@host/");
    }
}
