//! Models: the Embed stage (a local sentence-embedding model through `lucille-embed`) and
//! JlamaEmbed (Lucille's keys on it), OpenAIEmbed, OllamaEmbed and PromptOllama (model servers
//! over the HTTP client).

pub mod stage;

// The core and the services under the paths the components use.
#[cfg(test)]
pub(crate) use lucille_core::test_service;
pub(crate) use lucille_core::{config, document};
pub(crate) use lucille_http as http;
