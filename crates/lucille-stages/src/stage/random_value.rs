//! What the AddRandom* stages share: the `fieldName` check, a checked `[rangeStart, rangeEnd)`,
//! and the one stage behind AddRandomInt and AddRandomDouble, which sets a field to a uniform
//! random number of its type, with its options declared once for both number types.

use std::fmt::Display;

use rand::distr::uniform::SampleUniform;
use rand::distr::Uniform;
use rand::RngExt;
use serde_json::Value;

use super::field_util::check_writable;
use super::{Stage, StageFailure, StageResult};
use crate::config::{ComponentConfig, ConfigError, ConfigErrors, Options, Spec};
use crate::document::{f64_to_value, Document};

/// `[rangeStart, rangeEnd)` for the random-number stages: `None` when both bounds are equal
/// (the stage then always writes `rangeStart`), an error naming the key when start > end.
pub(crate) fn uniform_range<T>(
    config: &ComponentConfig,
    start: T,
    end: T,
) -> Result<Option<Uniform<T>>, ConfigError>
where
    T: SampleUniform + PartialOrd + Display + Copy,
{
    if start > end {
        return Err(config.error(
            "rangeStart",
            format!("must not be greater than rangeEnd ({start} > {end})"),
        ));
    }
    if start == end {
        return Ok(None);
    }
    Uniform::new(start, end)
        .map(Some)
        .map_err(|e| config.error("rangeEnd", format!("invalid range: {e}")))
}

/// Checks the `fieldName` an AddRandom* stage writes: not empty, not reserved.
pub(crate) fn check_field_name(config: &ComponentConfig, field: &str) -> Result<(), ConfigError> {
    check_writable(config, "fieldName", field)
}

/// The options of AddRandomInt and AddRandomDouble, declared once: the derive takes no
/// generics, so this writes one options struct per number type, the same keys and docs.
macro_rules! random_number_options {
    ($name:ident, $t:ident, $summary:tt, $start:tt, $end:tt) => {
        #[doc = $summary]
        #[derive(Options)]
        #[options(base = Spec::stage())]
        pub(crate) struct $name {
            /// The field written (an existing value is replaced).
            #[option(default = "data")]
            field_name: String,
            /// The lowest value drawn (inclusive).
            #[option(default = $start)]
            range_start: $t,
            /// The end of the range (exclusive); equal bounds always give `rangeStart`.
            #[option(default = $end)]
            range_end: $t,
        }

        impl RangeOptions<$t> for $name {
            fn into_parts(self) -> (String, $t, $t) {
                (self.field_name, self.range_start, self.range_end)
            }
        }
    };
}

/// What the random-number stage takes from its options: `(fieldName, rangeStart, rangeEnd)`.
pub(crate) trait RangeOptions<T> {
    fn into_parts(self) -> (String, T, T);
}

random_number_options!(
    AddRandomIntOptions,
    i64,
    "Test data: sets a field to a random integer in [rangeStart, rangeEnd).",
    0,
    1_000_000
);
random_number_options!(
    AddRandomDoubleOptions,
    f64,
    "Test data: sets a field to a random number in [rangeStart, rangeEnd).",
    0.0,
    1_000_000.0
);

/// A number type AddRandomInt / AddRandomDouble draw: its options and how its values are
/// written.
pub(crate) trait RandomNumber:
    SampleUniform<Sampler: Send> + PartialOrd + Display + Copy + Send + 'static
{
    /// The stage's options (`rangeStart` / `rangeEnd` of this type).
    type Options: Options + RangeOptions<Self>;
    fn to_value(self) -> Result<Value, StageFailure>;
}

impl RandomNumber for i64 {
    type Options = AddRandomIntOptions;
    fn to_value(self) -> Result<Value, StageFailure> {
        Ok(Value::from(self))
    }
}

impl RandomNumber for f64 {
    type Options = AddRandomDoubleOptions;
    fn to_value(self) -> Result<Value, StageFailure> {
        f64_to_value(self)
            .ok_or_else(|| StageFailure::msg(format!("generated {self}, not a finite number")))
    }
}

/// The keys of AddRandomInt (`T = i64`) and AddRandomDouble (`T = f64`).
pub(crate) fn spec<T: RandomNumber>() -> Spec {
    T::Options::spec()
}

pub(crate) fn build<T: RandomNumber>(
    config: &ComponentConfig,
) -> Result<Box<dyn Stage>, ConfigErrors> {
    let (field, start, end) = T::Options::from_config(config)?.into_parts();
    let mut errors = Vec::new();
    if let Err(e) = check_field_name(config, &field) {
        errors.push(e);
    }
    let range = uniform_range(config, start, end).unwrap_or_else(|e| {
        errors.push(e);
        None
    });
    if !errors.is_empty() {
        return Err(errors.into());
    }
    Ok(Box::new(AddRandomNumber {
        field,
        start,
        range,
    }))
}

struct AddRandomNumber<T: RandomNumber> {
    field: String,
    start: T,
    /// `None` when the range is a single value.
    range: Option<Uniform<T>>,
}

impl<T: RandomNumber> Stage for AddRandomNumber<T> {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        let value = match &self.range {
            Some(r) => rand::rng().sample(r),
            None => self.start,
        };
        doc.set_field(&self.field, value.to_value()?)?;
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::config::options::describe;
    use crate::config::Kind;

    #[test]
    fn int_and_double_share_keys_and_docs() {
        let int = super::spec::<i64>();
        let double = super::spec::<f64>();
        let names = |s: &crate::config::Spec| -> Vec<&str> {
            s.properties().iter().map(|p| p.name).collect()
        };
        assert_eq!(names(&int), names(&double));
        let kind = |s: &crate::config::Spec, key: &str| {
            s.properties()
                .iter()
                .find(|p| p.name == key)
                .map(|p| p.kind.clone())
        };
        assert_eq!(kind(&int, "rangeStart"), Some(Kind::Integer));
        assert_eq!(kind(&double, "rangeEnd"), Some(Kind::Number));
        let doc = describe("AddRandomInt", &int);
        assert!(
            doc.contains("random integer")
                && doc.contains("  rangeEnd (an integer), default 1_000_000: The end"),
            "{doc}"
        );
        let doc = describe("AddRandomDouble", &double);
        assert!(
            doc.contains("random number") && doc.contains("fieldName (a string), default \"data\""),
            "{doc}"
        );
    }
}
