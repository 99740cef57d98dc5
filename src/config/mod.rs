//! Configuration: the HOCON loader (`hocon`, hand-written because the available crates get
//! optional substitution over an earlier value wrong or panic on it), component specs and typed
//! reads (`spec`).

pub mod hocon;
pub mod spec;

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
        _ => {}
    }
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
}
