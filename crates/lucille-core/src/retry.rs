//! Lucille's retry keys (`maxRetries`, `retryWaitDurationMs`, `retryMaxWaitDurationMs`,
//! `retryRandomizationFactor`, `retryableStatusCodes`) and the waits they give: off unless
//! `maxRetries` is set; a request that fails with a retryable status code (or with no status
//! at all, code `-1`: refused connection, timeout) is sent again after an exponential, jittered
//! wait. Read with the indexer's settings here; the HTTP client applies them.

use std::time::Duration;

use crate::config::{ComponentConfig, ConfigError};

/// The `retryableStatusCodes` entry for "no HTTP status" (connection refused, reset, timeout).
pub const NO_STATUS: i64 = -1;
/// Lucille's default plus the gateway errors a proxy in front of a restarting cluster returns.
pub const DEFAULT_RETRYABLE: [i64; 5] = [429, 502, 503, 504, NO_STATUS];
pub const DEFAULT_RETRY_WAIT_MS: u64 = 1000;
pub const DEFAULT_RETRY_MAX_WAIT_MS: u64 = 30_000;
pub const DEFAULT_RANDOMIZATION: f64 = 0.5;

#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt; 0 disables retrying.
    pub max_retries: u32,
    pub initial_wait: Duration,
    pub max_wait: Duration,
    /// 0.5 means each wait is drawn from 50%..150% of the computed backoff.
    pub randomization: f64,
    pub retryable: Vec<i64>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 0,
            initial_wait: Duration::from_millis(DEFAULT_RETRY_WAIT_MS),
            max_wait: Duration::from_millis(DEFAULT_RETRY_MAX_WAIT_MS),
            randomization: DEFAULT_RANDOMIZATION,
            retryable: DEFAULT_RETRYABLE.to_vec(),
        }
    }
}

impl RetryPolicy {
    /// Reads the retry keys of the `indexer` block, pushing every problem onto `errors`.
    pub fn from_config(c: &ComponentConfig, errors: &mut Vec<ConfigError>) -> Self {
        let mut policy = RetryPolicy::default();
        let dependent = [
            "retryWaitDurationMs",
            "retryMaxWaitDurationMs",
            "retryRandomizationFactor",
            "retryableStatusCodes",
        ];
        match c.i64("maxRetries") {
            Ok(None) => {
                for key in dependent.iter().filter(|k| c.has(k)) {
                    errors.push(c.error(key, "needs indexer.maxRetries to be set"));
                }
                return policy;
            }
            Ok(Some(n)) if n <= 0 || n > u32::MAX as i64 => errors.push(c.error(
                "maxRetries",
                "must be a positive integer (remove it to disable retries)",
            )),
            Ok(Some(n)) => policy.max_retries = n as u32,
            Err(e) => errors.push(e),
        }
        let mut ms = |key: &str, default: Duration| match c.i64(key) {
            Ok(None) => default,
            Ok(Some(v)) if v >= 0 => Duration::from_millis(v as u64),
            Ok(Some(_)) => {
                errors.push(c.error(key, "must not be negative"));
                default
            }
            Err(e) => {
                errors.push(e);
                default
            }
        };
        policy.initial_wait = ms("retryWaitDurationMs", policy.initial_wait);
        policy.max_wait = ms("retryMaxWaitDurationMs", policy.max_wait);
        match c.f64("retryRandomizationFactor") {
            Ok(None) => {}
            Ok(Some(f)) if (0.0..1.0).contains(&f) => policy.randomization = f,
            Ok(Some(_)) => errors.push(c.error(
                "retryRandomizationFactor",
                "must be at least 0 and less than 1",
            )),
            Err(e) => errors.push(e),
        }
        match c.get("retryableStatusCodes") {
            None => {}
            Some(serde_json::Value::Array(items)) => {
                let codes: Option<Vec<i64>> = items
                    .iter()
                    .map(crate::config::spec::as_i64)
                    .map(|c| c.filter(|c| *c == NO_STATUS || (100..600).contains(c)))
                    .collect();
                match codes {
                    Some(codes) if !codes.is_empty() => policy.retryable = codes,
                    Some(_) => errors.push(c.error(
                        "retryableStatusCodes",
                        "must not be empty (remove it to use the default)",
                    )),
                    None => errors.push(c.error(
                        "retryableStatusCodes",
                        "must be a list of HTTP status codes (100-599), or -1 for failures without a status",
                    )),
                }
            }
            Some(_) => errors.push(c.error(
                "retryableStatusCodes",
                "must be a list of HTTP status codes",
            )),
        }
        policy
    }

    /// Whether a failure with this status (`None`: no response at all) is retried.
    pub fn retries(&self, status: Option<u16>) -> bool {
        let code = status.map_or(NO_STATUS, i64::from);
        self.max_retries > 0 && self.retryable.contains(&code)
    }

    /// The wait before retry number `retry` when the server asked for `retry_after`
    /// (`Retry-After`): at least that long, but never past `retryMaxWaitDurationMs`, so a
    /// server asking for an hour cannot stall the run beyond the configured bound.
    pub fn wait_after(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        let wait = self.wait(retry);
        match retry_after {
            Some(asked) => wait.max(asked.min(self.max_wait)),
            None => wait,
        }
    }

    /// The wait before retry number `retry` (1-based): exponential, capped, jittered.
    pub fn wait(&self, retry: u32) -> Duration {
        let base = self.initial_wait.as_secs_f64() * 2f64.powi(retry.saturating_sub(1) as i32);
        let capped = base.min(self.max_wait.as_secs_f64());
        let jitter = 1.0 + self.randomization * (2.0 * rand::random::<f64>() - 1.0);
        Duration::from_secs_f64((capped * jitter).max(0.0))
    }
}
