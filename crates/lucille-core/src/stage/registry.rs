//! Resolves a stage config's `class`: a built-in name (`CopyFields`), Lucille's full class
//! name (`com.kmwllc.lucille.stage.CopyFields`), or a Python object (`module:Class` or
//! `path/to/file.py:Class`), which the Python bindings build when they are loaded.

use super::{Stage, StageDescriptor};
use crate::config::{ComponentConfig, ConfigError};
use crate::registry;

/// Lucille's package for its stages; a class given with it resolves to the built-in.
pub const LUCILLE_STAGE_PACKAGE: &str = "com.kmwllc.lucille.stage.";

inventory::collect!(StageDescriptor);

impl registry::Descriptor for StageDescriptor {
    // With Lucille's plugin packages whose stages are built in here
    // (`com.kmwllc.lucille.tika.stage.TextExtractor`).
    const PACKAGES: &'static [&'static str] = &[
        LUCILLE_STAGE_PACKAGE,
        "com.kmwllc.lucille.tika.stage.",
        "com.kmwllc.lucille.ocr.stage.",
        "com.kmwllc.lucille.pinecone.stage.",
        "com.kmwllc.lucille.jlama.stage.",
    ];

    fn name(&self) -> &'static str {
        self.name
    }
}

/// How a `class` value resolved.
pub enum StageClass {
    Builtin(&'static StageDescriptor),
    /// `module:Class` or `file.py:Class`.
    Python(String),
}

/// A `class` that names no stage here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnknownStage {
    /// A built-in of Lucille's that runs Python, without the Python bindings loaded.
    #[error(
        "{0} runs Python code and needs the lucille Python package (run through `lucille` or \
         `import lucille`)"
    )]
    NeedsPython(String),
    #[error("unknown stage class {class:?} (did you mean {suggestion:?}?)")]
    Misspelt {
        class: String,
        suggestion: &'static str,
    },
    #[error(
        "unknown stage class {0:?}; use a built-in stage name, Lucille's full class name, or a \
         Python class as \"module:Class\" or \"path/to/file.py:Class\""
    )]
    Unknown(String),
}

pub fn resolve(class: &str) -> Result<StageClass, UnknownStage> {
    let class = class.trim();
    if registry::is_python_reference(class) {
        return Ok(StageClass::Python(class.to_string()));
    }
    if let Some(d) = registry::find::<StageDescriptor>(class) {
        return Ok(StageClass::Builtin(d));
    }
    let short = class.rsplit('.').next().unwrap_or(class);
    if PYTHON_BUILTINS.contains(&short) {
        return Err(UnknownStage::NeedsPython(short.to_string()));
    }
    Err(match registry::suggest::<StageDescriptor>(class) {
        Some(suggestion) => UnknownStage::Misspelt {
            class: class.to_string(),
            suggestion,
        },
        None => UnknownStage::Unknown(class.to_string()),
    })
}

/// Built-in stages that run Python; the Python bindings register them.
pub const PYTHON_BUILTINS: [&str; 2] = ["EmbeddedPython", "ExternalPython"];

/// Every built-in stage this build can run, sorted by name: the Rust ones, and those the
/// Python bindings register when they are compiled in.
pub fn all_builtins() -> Vec<&'static StageDescriptor> {
    registry::all::<StageDescriptor>()
}

pub use registry::is_python_reference;

/// Builds Python stages; installed by the Python bindings, absent in a pure-Rust build.
pub trait PythonStageFactory: Send + Sync {
    /// Imports the class and checks it is a stage class, without instantiating it.
    fn check(&self, class: &str, config: &ComponentConfig) -> Result<(), ConfigError>;
    fn build(
        &self,
        class: &str,
        name: &str,
        config: &ComponentConfig,
    ) -> Result<Box<dyn Stage>, ConfigError>;
}

/// Python stage classes, installed by the Python bindings.
pub static PYTHON: registry::PythonHook<dyn PythonStageFactory> =
    registry::PythonHook::new("Python stages");
