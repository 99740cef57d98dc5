//! Configuration: the HOCON loader (`hocon`, hand-written because the available crates get
//! optional substitution over an earlier value wrong or panic on it), component specs and typed
//! reads (`spec`).

pub mod hocon;
pub mod spec;

pub use spec::{
    as_bool, as_f64, as_i64, as_string, ComponentConfig, ConfigError, ConfigErrors, Kind, Property,
    Spec,
};
