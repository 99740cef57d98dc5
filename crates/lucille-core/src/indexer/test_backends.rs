//! Backends that exist only in unit tests, registered from here as any backend is:
//! `test-wedge` (its first call never returns), `test-reject` (rejects ids ending in '3') and
//! `test-faulty` (every kind of server fault).

use std::time::Duration;

use super::{Backend, BackendCheck, BackendError, IndexOp, IndexerDescriptor};
use crate::config::{ComponentConfig, ConfigErrors, Options};

/// A test backend; its block has no keys.
#[derive(Options)]
struct NoOptions {}

fn no_keys(
    _: &super::IndexerSettings,
    config: &ComponentConfig,
) -> Result<BackendCheck, ConfigErrors> {
    NoOptions::from_config(config)?;
    Ok(BackendCheck::default())
}

inventory::submit!(IndexerDescriptor {
    name: "test-wedge",
    aliases: &[],
    spec: NoOptions::spec,
    check: no_keys,
    build: |settings, config, _| {
        no_keys(settings, config)?;
        Ok(Box::new(Wedged))
    },
});
inventory::submit!(IndexerDescriptor {
    name: "test-reject",
    aliases: &[],
    spec: NoOptions::spec,
    check: no_keys,
    build: |settings, config, _| {
        no_keys(settings, config)?;
        Ok(Box::new(RejectSome))
    },
});
inventory::submit!(IndexerDescriptor {
    name: "test-faulty",
    aliases: &[],
    spec: NoOptions::spec,
    check: no_keys,
    build: |settings, config, _| {
        no_keys(settings, config)?;
        Ok(Box::new(Faulty))
    },
});

/// Asserts that every registered backend (those linked into the calling test binary) but the
/// Python one, whose block is free-form, reads its block through its options type: checking and
/// building both report an unknown key, and every key and the backend itself are described for
/// `lucille doc`.
pub fn assert_every_backend_checks_its_keys() {
    for d in crate::registry::all::<IndexerDescriptor>() {
        if d.name == super::PYTHON_KIND {
            continue;
        }
        let settings = super::IndexerSettings {
            kind: d.name.to_string(),
            ..super::IndexerSettings::default()
        };
        let mut map = serde_json::Map::new();
        map.insert("zzUnknownKey".into(), serde_json::Value::from(1));
        let block = ComponentConfig::new(map, d.name);
        let unknown = format!("{}.zzUnknownKey: unknown key", d.name);
        let checked = super::validate_backend(&settings, &block)
            .err()
            .unwrap_or_default();
        assert!(
            checked.iter().any(|e| e.to_string().starts_with(&unknown)),
            "{}: {checked:?}",
            d.name
        );
        let built = super::build_backend(&settings, &block, crate::indexer::Opening::Fresh)
            .err()
            .unwrap_or_default();
        assert!(
            built.iter().any(|e| e.to_string().starts_with(&unknown)),
            "{}: {built:?}",
            d.name
        );
        let spec = (d.spec)();
        assert!(!spec.summary_text().is_empty(), "{} has no summary", d.name);
        for p in spec.properties() {
            assert!(
                !p.description.is_empty(),
                "{}.{} has no description",
                d.name,
                p.name
            );
        }
    }
}

/// Test backend: its first call never returns (a hung server), for the watchdog.
pub struct Wedged;

impl Backend for Wedged {
    fn send(&mut self, _ops: &[IndexOp]) -> Result<Vec<Option<String>>, BackendError> {
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
}

/// Test backend: rejects every document whose index id ends in '3'.
pub struct RejectSome;

impl Backend for RejectSome {
    fn send(&mut self, ops: &[IndexOp]) -> Result<Vec<Option<String>>, BackendError> {
        Ok(ops
            .iter()
            .map(|op| match op {
                IndexOp::Upsert { id, .. } | IndexOp::DeleteById { id, .. }
                    if id.ends_with('3') =>
                {
                    Some("rejected by test backend".into())
                }
                _ => None,
            })
            .collect())
    }
}

/// Test backend with every kind of fault a server shows, chosen per batch from its first id
/// (so a batch is deterministic, which batches form is not): the whole batch fails (`Err`, a
/// 503 after the retries), the backend panics, it answers with one result too few (a
/// malformed response), it is slow (sleeps a few ms, still moving); otherwise it rejects the
/// documents whose id ends in '3' alone (a 400 for one document in a bulk).
pub struct Faulty;

impl Backend for Faulty {
    fn send(&mut self, ops: &[IndexOp]) -> Result<Vec<Option<String>>, BackendError> {
        let id = |op: &IndexOp| match op {
            IndexOp::Upsert { id, .. } | IndexOp::DeleteById { id, .. } => id.clone(),
            IndexOp::DeleteByField { value, .. } => value.clone(),
        };
        let first = ops.first().map(id).unwrap_or_default();
        let pick = first
            .bytes()
            .fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)))
            % 12;
        match pick {
            0 => return Err(BackendError::new("HTTP 503: test backend unavailable")),
            1 => panic!("test backend panicked on a batch starting at {first}"),
            2 => return Ok(vec![None; ops.len().saturating_sub(1)]),
            3 => std::thread::sleep(Duration::from_millis(3)),
            _ => {}
        }
        Ok(ops
            .iter()
            .map(|op| {
                id(op)
                    .ends_with('3')
                    .then(|| "HTTP 400: rejected".to_string())
            })
            .collect())
    }
}
