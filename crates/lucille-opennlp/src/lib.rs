//! Apache OpenNLP's model files, read and run in Rust: the tokenizer (TokenizerME) and the name
//! finder (NameFinderME) of OpenNLP 1.5 to 2.x, on its GIS (MAXENT), Perceptron and QN
//! classifiers, giving the tokens, names and probabilities the Java library gives.
//!
//! No crate reads these files, so everything here is written by hand from OpenNLP's file
//! format and algorithms: [`archive`] (the model zip and its manifest), [`maxent`] (the binary
//! classifiers), [`tokenizer`], [`name_finder`] with [`featuregen`] (its feature generators and
//! their XML descriptor), [`codec`] (BIO / BILOU) and [`beam`] (the beam search's queue).
//! Strings are handled as Java does where it matters: positions in UTF-16 units, characters
//! classified by their Unicode general category.
//!
//! ```no_run
//! use lucille_opennlp::{NameFinder, Tokenizer};
//! let tokenizer = Tokenizer::open("en-token.bin")?;
//! let people = NameFinder::open("en-ner-person.bin")?;
//! let tokens = tokenizer.tokenize("Pierre Vinken, 61 years old, joined the board.");
//! for span in people.find(&tokens) {
//!     println!("{}", tokens[span.start..span.end].join(" "));
//! }
//! # Ok::<(), lucille_opennlp::OpenNlpError>(())
//! ```

pub mod archive;
mod beam;
pub mod codec;
pub mod dictionary;
pub mod error;
mod featuregen;
mod java;
pub mod maxent;
pub mod name_finder;
pub mod tokenizer;
mod xml;

pub use archive::ModelArchive;
pub use codec::{Codec, Span};
pub use error::{OpenNlpError, Result};
pub use maxent::{MaxentModel, ModelType};
pub use name_finder::{AdaptiveData, NameFinder};
pub use tokenizer::{Token, Tokenizer};
