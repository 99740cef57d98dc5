//! Configuration: component specs and typed reads (`spec`); the HOCON loader joins here.

pub mod spec;

pub use spec::{
    as_bool, as_f64, as_i64, as_string, ComponentConfig, ConfigError, ConfigErrors, Kind, Property,
    Spec,
};
