//! DropDocument: marks documents dropped, so they stop flowing and are never indexed (DROP
//! event). Usually combined with `conditions`. `percentage` (0.0–1.0, default 1.0) drops that
//! share of documents at random, for sampling.

use rand::RngExt;

use super::{Stage, StageDescriptor, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec};
use crate::document::Document;

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "DropDocument",
    spec: DropDocumentOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Marks documents dropped: they stop flowing and are never indexed (a DROP event).
#[derive(Options)]
#[options(base = Spec::stage())]
struct DropDocumentOptions {
    /// The share of documents dropped, at random (0.0 to 1.0), for sampling.
    #[option(default = 1.0)]
    percentage: f64,
}

struct DropDocument {
    percentage: f64,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let percentage = DropDocumentOptions::from_config(config)?.percentage;
    if !(0.0..=1.0).contains(&percentage) {
        return Err(config
            .error(
                "percentage",
                format!("must be between 0.0 and 1.0, found {percentage}"),
            )
            .into());
    }
    Ok(Box::new(DropDocument { percentage }))
}

impl Stage for DropDocument {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        if self.percentage >= 1.0
            || (self.percentage > 0.0 && rand::rng().random::<f64>() < self.percentage)
        {
            doc.set_dropped(true);
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::stage::testing::{build_err, build_stage, process};
    use serde_json::json;

    #[test]
    fn drops_all_none_or_a_share() {
        let mut all = build_stage(json!({"class": "DropDocument"}));
        assert!(process(&mut all, json!({"id": "d"})).is_dropped());
        let mut none = build_stage(json!({"class": "DropDocument", "percentage": 0}));
        assert!(!process(&mut none, json!({"id": "d"})).is_dropped());
        let mut half = build_stage(json!({"class": "DropDocument", "percentage": 0.5}));
        let dropped = (0..2000)
            .filter(|i| process(&mut half, json!({"id": i.to_string()})).is_dropped())
            .count();
        assert!((700..1300).contains(&dropped), "{dropped} of 2000 dropped");
    }

    #[test]
    fn percentage_out_of_range() {
        assert!(
            build_err(json!({"class": "DropDocument", "percentage": 1.5}))
                .contains("between 0.0 and 1.0")
        );
    }
}
