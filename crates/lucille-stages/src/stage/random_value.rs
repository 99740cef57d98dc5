//! What the AddRandom* stages share: the `fieldName` key, a checked `[rangeStart, rangeEnd)`,
//! and the one stage behind AddRandomInt and AddRandomDouble, which sets a field to a uniform
//! random number of its type.

use std::fmt::Display;

use rand::distr::uniform::SampleUniform;
use rand::distr::Uniform;
use rand::RngExt;
use serde_json::Value;

use super::{Stage, StageFailure, StageResult};
use crate::config::{ComponentConfig, ConfigError, ConfigErrors, Kind, Spec};
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

/// `fieldName` (default `data`), checked to be writable. Shared by the AddRandom* stages.
pub(crate) fn field_name(config: &ComponentConfig) -> Result<String, ConfigError> {
    let field = config
        .string("fieldName")?
        .unwrap_or_else(|| "data".to_string());
    if field.is_empty() || crate::document::is_reserved(&field) {
        return Err(config.error(
            "fieldName",
            format!("{field:?} cannot be written: it is reserved or empty"),
        ));
    }
    Ok(field)
}

/// A number type AddRandomInt / AddRandomDouble draw: how its keys are read and its values
/// written.
pub(crate) trait RandomNumber:
    SampleUniform<Sampler: Send> + PartialOrd + Display + Copy + Send + 'static
{
    /// The config type of `rangeStart` / `rangeEnd`.
    const KIND: Kind;
    const DEFAULT_START: Self;
    const DEFAULT_END: Self;
    fn read(config: &ComponentConfig, key: &str) -> Result<Option<Self>, ConfigError>;
    fn to_value(self) -> Result<Value, StageFailure>;
}

impl RandomNumber for i64 {
    const KIND: Kind = Kind::Integer;
    const DEFAULT_START: i64 = 0;
    const DEFAULT_END: i64 = 1_000_000;
    fn read(config: &ComponentConfig, key: &str) -> Result<Option<i64>, ConfigError> {
        config.i64(key)
    }
    fn to_value(self) -> Result<Value, StageFailure> {
        Ok(Value::from(self))
    }
}

impl RandomNumber for f64 {
    const KIND: Kind = Kind::Number;
    const DEFAULT_START: f64 = 0.0;
    const DEFAULT_END: f64 = 1_000_000.0;
    fn read(config: &ComponentConfig, key: &str) -> Result<Option<f64>, ConfigError> {
        config.f64(key)
    }
    fn to_value(self) -> Result<Value, StageFailure> {
        f64_to_value(self)
            .ok_or_else(|| StageFailure::msg(format!("generated {self}, not a finite number")))
    }
}

/// The keys of AddRandomInt (`T = i64`) and AddRandomDouble (`T = f64`).
pub(crate) fn spec<T: RandomNumber>() -> Spec {
    Spec::stage()
        .optional("fieldName", Kind::String)
        .optional("rangeStart", T::KIND)
        .optional("rangeEnd", T::KIND)
}

pub(crate) fn build<T: RandomNumber>(
    config: &ComponentConfig,
) -> Result<Box<dyn Stage>, ConfigErrors> {
    let start = T::read(config, "rangeStart")?.unwrap_or(T::DEFAULT_START);
    let end = T::read(config, "rangeEnd")?.unwrap_or(T::DEFAULT_END);
    let range = uniform_range(config, start, end)?;
    Ok(Box::new(AddRandomNumber {
        field: field_name(config)?,
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
