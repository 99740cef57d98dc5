//! The one error type of the crate: every way a model file can fail to load.

use thiserror::Error;

/// Why an OpenNLP model could not be read. A corrupt or unsupported file is always one of these,
/// never a panic.
#[derive(Debug, Error)]
pub enum OpenNlpError {
    /// The file could not be read at all.
    #[error("cannot read the model file: {0}")]
    Io(#[from] std::io::Error),
    /// The file is not a zip archive, or an entry of it cannot be read.
    #[error("not an OpenNLP model (a zip archive): {0}")]
    Zip(#[from] zip::result::ZipError),
    /// The archive has no entry of this name.
    #[error("the model has no `{0}` entry")]
    MissingEntry(String),
    /// `manifest.properties` lacks a property OpenNLP requires.
    #[error("the model's manifest.properties has no `{0}` property")]
    MissingProperty(&'static str),
    /// The model was written for another OpenNLP component.
    #[error("expected a {expected} model, but this is a model for {found}")]
    WrongComponent {
        expected: &'static str,
        found: String,
    },
    /// The model entry's binary data ends early or is malformed.
    #[error("the model entry `{entry}` is corrupt: {reason}")]
    Corrupt { entry: String, reason: String },
    /// A classifier type this crate does not evaluate (OpenNLP also knows NaiveBayes).
    #[error("unsupported model type `{0}` (GIS, Perceptron and QN models are supported)")]
    UnsupportedModelType(String),
    /// A sequence codec other than OpenNLP's BIO and BILOU codecs.
    #[error("unsupported sequence codec `{0}` (BioCodec and BilouCodec are supported)")]
    UnsupportedCodec(String),
    /// The feature-generator descriptor names a generator this crate does not implement.
    #[error("unsupported feature generator `{0}` in the model's feature-generator descriptor")]
    UnsupportedFeatureGenerator(String),
    /// The feature-generator descriptor is not valid XML, or a generator's settings are wrong.
    #[error("invalid feature-generator descriptor: {0}")]
    Descriptor(String),
    /// The model's outcomes do not fit its component (a name finder's codec, a tokenizer's T/F).
    #[error("the model's outcomes do not fit a {component}: {reason}")]
    Outcomes {
        component: &'static str,
        reason: String,
    },
    /// The manifest's `alphaNumericPattern` is not a regular expression we can compile.
    #[error("the model's alphaNumericPattern `{pattern}` cannot be compiled: {reason}")]
    Pattern { pattern: String, reason: String },
}

pub type Result<T> = std::result::Result<T, OpenNlpError>;

pub(crate) fn corrupt(entry: &str, reason: impl Into<String>) -> OpenNlpError {
    OpenNlpError::Corrupt {
        entry: entry.to_string(),
        reason: reason.into(),
    }
}
