//! A message broker that carries a run between processes: `--mode external` (the roles of one
//! process talk over the broker), `--mode distributed` (this process publishes; worker and
//! indexer processes do the rest) and those long-running processes. Kafka is the one today
//! (`lucille::messaging::kafka`): it registers a [`TransportDescriptor`] named after its
//! config block, so the runner and this crate know no broker.

use std::any::Any;
use std::sync::Arc;

use super::Topology;
use crate::config::{ComponentConfig, ConfigError};
use crate::registry::{self, Descriptor};

/// Builds a transport's settings from its config block: every problem at once. `pipelines`
/// are the config's pipeline names (each names the broker's topics or queues).
pub type ReadSettings = fn(
    &ComponentConfig,
    pipelines: &[&str],
) -> Result<Arc<dyn Any + Send + Sync>, Vec<ConfigError>>;

/// A connector's roles over the broker: the publisher only (`publisher_only`: distributed
/// mode), or the publisher, the worker threads' and the indexer's roles (external mode).
pub type Connect = fn(&Transport, &Connection) -> Result<TransportRun, TransportError>;

/// One broker: its config block (and registry name), how its settings are read, how a run's
/// connector connects.
pub struct TransportDescriptor {
    pub name: &'static str,
    pub settings: ReadSettings,
    pub connect: Connect,
}

inventory::collect!(TransportDescriptor);

impl Descriptor for TransportDescriptor {
    const PACKAGES: &'static [&'static str] = &[];

    fn name(&self) -> &'static str {
        self.name
    }
}

/// The transport a config configures, with its settings read once during validation.
#[derive(Clone)]
pub struct Transport {
    pub descriptor: &'static TransportDescriptor,
    settings: Arc<dyn Any + Send + Sync>,
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transport")
            .field("name", &self.descriptor.name)
            .finish_non_exhaustive()
    }
}

impl Transport {
    /// The transport the config configures, if any: the first registered transport (by name)
    /// whose block the config has (`block` gives it). `Err` holds that block's problems.
    pub fn from_root(
        mut block: impl FnMut(&str) -> Option<ComponentConfig>,
        pipelines: &[&str],
    ) -> Option<Result<Transport, Vec<ConfigError>>> {
        registry::all::<TransportDescriptor>()
            .into_iter()
            .find_map(|descriptor| {
                let config = block(descriptor.name)?;
                Some(
                    (descriptor.settings)(&config, pipelines).map(|settings| Transport {
                        descriptor,
                        settings,
                    }),
                )
            })
    }

    /// Its settings, as the type its descriptor built.
    pub fn settings<T: 'static>(&self) -> Option<&T> {
        self.settings.downcast_ref()
    }

    pub fn connect(&self, connection: &Connection) -> Result<TransportRun, TransportError> {
        (self.descriptor.connect)(self, connection)
    }
}

/// What a connector's run asks of the broker.
pub struct Connection<'a> {
    pub pipeline: &'a str,
    pub run_id: &'a Arc<str>,
    /// Distributed mode: this process only publishes.
    pub publisher_only: bool,
    /// The worker threads that will read the source topic (a warning when it has fewer
    /// partitions).
    pub worker_threads: usize,
}

/// A connector's roles over a broker, and how to close their clients after the run.
pub struct TransportRun {
    pub topology: Topology,
    close: Box<dyn Fn() + Send + Sync>,
}

impl TransportRun {
    pub fn new(topology: Topology, close: impl Fn() + Send + Sync + 'static) -> Self {
        TransportRun {
            topology,
            close: Box::new(close),
        }
    }

    pub fn close(&self) {
        (self.close)();
    }
}

/// The broker could not be reached or set up for a run.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct TransportError(#[from] pub Box<dyn std::error::Error + Send + Sync>);
