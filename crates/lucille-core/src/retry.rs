//! Lucille's retry keys (`maxRetries`, `retryWaitDurationMs`, `retryMaxWaitDurationMs`,
//! `retryRandomizationFactor`, `retryableStatusCodes`) and the waits they give: off unless
//! `maxRetries` is set; a request that fails with a retryable status code (or with no status
//! at all, code `-1`: refused connection, timeout) is sent again after an exponential, jittered
//! wait. Declared here ([`RetryOptions`]) for the indexer block and the model-server stages;
//! the HTTP client applies the [`RetryPolicy`] they give.

use std::time::Duration;

use serde_json::Value;

use crate::config::spec::as_i64;
use crate::config::{ComponentConfig, ConfigError, Kind, OptionValue, Options};

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
    /// Counts each retry (`lucille_indexer_retries_total` for an indexer's policy).
    pub counter: Option<crate::metrics::RetryCounter>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 0,
            initial_wait: Duration::from_millis(DEFAULT_RETRY_WAIT_MS),
            max_wait: Duration::from_millis(DEFAULT_RETRY_MAX_WAIT_MS),
            randomization: DEFAULT_RANDOMIZATION,
            retryable: DEFAULT_RETRYABLE.to_vec(),
            counter: None,
        }
    }
}

/// Lucille's retry keys, declared once: the generic `indexer` block and the model-server
/// stages flatten them into their options (`#[option(flatten)]`).
#[derive(Debug, Clone, Options)]
pub struct RetryOptions {
    /// Retries of a failed request after the first attempt (default: none for the indexers,
    /// 3 for the model-server stages).
    max_retries: Option<RetryCount>,
    /// Milliseconds before the first retry (default 1000; doubles each retry).
    #[option(min = 0)]
    retry_wait_duration_ms: Option<i64>,
    /// The longest wait between retries, in milliseconds (default 30000).
    #[option(min = 0)]
    retry_max_wait_duration_ms: Option<i64>,
    /// Each wait is drawn within this fraction of the backoff, from 0 up to 1 (default 0.5).
    retry_randomization_factor: Option<Randomization>,
    /// The HTTP statuses retried, -1 for a failure without one (default 429, 502, 503, 504,
    /// -1).
    retryable_status_codes: Option<StatusCodes>,
}

impl RetryOptions {
    /// The policy these keys give, `default_retries` when `maxRetries` is absent; a wait key
    /// without `maxRetries` is a problem (pushed onto `errors`; `needs`, e.g.
    /// "indexer.maxRetries", names the key it needs).
    pub fn policy(
        self,
        config: &ComponentConfig,
        needs: &str,
        default_retries: u32,
        errors: &mut Vec<ConfigError>,
    ) -> RetryPolicy {
        let mut retry = RetryPolicy {
            max_retries: default_retries,
            ..RetryPolicy::default()
        };
        let Some(RetryCount(n)) = self.max_retries else {
            let dependent = [
                ("retryWaitDurationMs", self.retry_wait_duration_ms.is_some()),
                (
                    "retryMaxWaitDurationMs",
                    self.retry_max_wait_duration_ms.is_some(),
                ),
                (
                    "retryRandomizationFactor",
                    self.retry_randomization_factor.is_some(),
                ),
                (
                    "retryableStatusCodes",
                    self.retryable_status_codes.is_some(),
                ),
            ];
            for (key, _) in dependent.iter().filter(|(_, set)| *set) {
                errors.push(config.error(key, format!("needs {needs} to be set")));
            }
            return retry;
        };
        retry.max_retries = n;
        let ms = |v: i64| Duration::from_millis(v.unsigned_abs());
        retry.initial_wait = self.retry_wait_duration_ms.map_or(retry.initial_wait, ms);
        retry.max_wait = self.retry_max_wait_duration_ms.map_or(retry.max_wait, ms);
        if let Some(Randomization(f)) = self.retry_randomization_factor {
            retry.randomization = f;
        }
        if let Some(StatusCodes(codes)) = self.retryable_status_codes {
            retry.retryable = codes;
        }
        retry
    }
}

/// `maxRetries`: a positive count (absent: no retries).
#[derive(Debug, Clone)]
struct RetryCount(u32);

impl OptionValue for RetryCount {
    fn kind() -> Kind {
        Kind::Integer
    }

    fn read(config: &ComponentConfig, key: &str) -> Result<Option<Self>, ConfigError> {
        match config.i64(key)? {
            None => Ok(None),
            Some(n) => u32::try_from(n)
                .ok()
                .filter(|n| *n > 0)
                .map(|n| Some(RetryCount(n)))
                .ok_or_else(|| {
                    config.error(
                        key,
                        "must be a positive integer (remove it to disable retries)",
                    )
                }),
        }
    }
}

/// `retryRandomizationFactor`: from 0 up to, not including, 1.
#[derive(Debug, Clone)]
struct Randomization(f64);

impl OptionValue for Randomization {
    fn kind() -> Kind {
        Kind::Number
    }

    fn read(config: &ComponentConfig, key: &str) -> Result<Option<Self>, ConfigError> {
        match config.f64(key)? {
            None => Ok(None),
            Some(f) if (0.0..1.0).contains(&f) => Ok(Some(Randomization(f))),
            Some(_) => Err(config.error(key, "must be at least 0 and less than 1")),
        }
    }
}

/// `retryableStatusCodes`: HTTP statuses (100-599) and -1 (no status), at least one.
#[derive(Debug, Clone)]
struct StatusCodes(Vec<i64>);

impl OptionValue for StatusCodes {
    fn kind() -> Kind {
        Kind::List
    }

    fn read(config: &ComponentConfig, key: &str) -> Result<Option<Self>, ConfigError> {
        let items = match config.get(key) {
            None => return Ok(None),
            Some(Value::Array(items)) => items,
            Some(_) => return Err(config.error(key, "must be a list of HTTP status codes")),
        };
        let codes: Option<Vec<i64>> = items
            .iter()
            .map(|i| as_i64(i).filter(|c| *c == NO_STATUS || (100..600).contains(c)))
            .collect();
        match codes {
            Some(codes) if !codes.is_empty() => Ok(Some(StatusCodes(codes))),
            Some(_) => Err(config.error(
                key,
                "must not be empty (remove it to use the default)",
            )),
            None => Err(config.error(
                key,
                "must be a list of HTTP status codes (100-599), or -1 for failures without a status",
            )),
        }
    }
}

impl RetryPolicy {
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
