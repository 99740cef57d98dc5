//! Configuration: the HOCON loader (`hocon`, hand-written because the available crates get
//! optional substitution over an earlier value wrong or panic on it), component specs and typed
//! reads (`spec`).

pub mod duration;
pub mod hocon;
pub mod paths;
pub mod spec;

pub use duration::parse_duration;
pub use paths::PathContext;

pub use spec::{
    as_bool, as_f64, as_i64, as_string, ComponentConfig, ConfigError, ConfigErrors, Kind, Property,
    Spec,
};

/// Replaces the values of secret-looking keys (password, apiKey, token, secret, ...) with a
/// marker, for `lucille render`.
pub fn redact(value: &mut serde_json::Value) {
    const MARKER: &str = "***REDACTED***";
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                let key = k.to_ascii_lowercase().replace(['_', '-'], "");
                let secret = [
                    "password",
                    "passwd",
                    "apikey",
                    "token",
                    "secret",
                    "credential",
                    "privatekey",
                ]
                .iter()
                .any(|s| key.contains(s));
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
        }
        _ => {}
    }
}

/// `scheme://user:secret@host...` (a connection string or URL) with the password replaced;
/// `None` when the string carries no password.
fn redact_url_password(s: &str, marker: &str) -> Option<String> {
    let start = s.find("://")? + 3;
    let authority_end = s[start..]
        .find(['/', '?', '#'])
        .map_or(s.len(), |i| start + i);
    let at = s[start..authority_end].rfind('@')? + start;
    let colon = s[start..at].find(':')? + start;
    Some(format!("{}{marker}{}", &s[..=colon], &s[at..]))
}

#[cfg(test)]
mod tests {
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
