//! The one registry of components. Every stage, connector, indexer backend and file handler
//! declares itself in its own file, next to its code: a descriptor (its name, the other names
//! a config may give it, its options and its constructor) submitted with
//! [`inventory::submit!`]. Nothing else lists components: config resolution, `lucille doc` and
//! the did-you-mean suggestions read them from here, so adding a component is adding its file.
//! Code outside this crate (the Python bindings' stages, test components in test modules)
//! registers the same way.
//!
//! Why `inventory`: it collects statics from every linked crate at start-up without a central
//! list, which is what lets a component crate add components the core does not know of.

/// A kind of component: its descriptor type, collected by `inventory`.
pub trait Descriptor: inventory::Collect + Sync + 'static {
    /// Lucille's Java packages for this kind: a class given with one of them resolves by
    /// the rest of its name (`com.kmwllc.lucille.stage.CopyFields` → `CopyFields`).
    const PACKAGES: &'static [&'static str];

    /// The name configs use.
    fn name(&self) -> &'static str;

    /// Other names that resolve to this component: Lucille's full class names outside
    /// [`Self::PACKAGES`] (a plugin's package, a subpackage); each one's last segment alone
    /// resolves too (`PineconeIndexer`).
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }
}

/// Every registered component of a kind, sorted by name.
pub fn all<D: Descriptor>() -> Vec<&'static D> {
    let mut all: Vec<&'static D> = inventory::iter::<D>.into_iter().collect();
    all.sort_by_key(|d| d.name());
    all
}

/// Every registered name of a kind, sorted.
pub fn names<D: Descriptor>() -> Vec<&'static str> {
    all::<D>().into_iter().map(|d| d.name()).collect()
}

/// The component a config's class (or type) names: its name, alone or with one of Lucille's
/// packages for the kind in front, or one of its aliases, whole or its last segment.
pub fn find<D: Descriptor>(class: &str) -> Option<&'static D> {
    let class = class.trim();
    let short = without_package::<D>(class);
    inventory::iter::<D>.into_iter().find(|d| {
        d.name() == short
            || d.aliases()
                .iter()
                .any(|a| *a == class || a.rsplit('.').next() == Some(class))
    })
}

/// The registered name nearest to `class` when it looks like a misspelling of one.
pub fn suggest<D: Descriptor>(class: &str) -> Option<&'static str> {
    closest(without_package::<D>(class.trim()), names::<D>().into_iter())
}

/// `class` without the first of Lucille's packages for the kind it starts with.
fn without_package<D: Descriptor>(class: &str) -> &str {
    D::PACKAGES
        .iter()
        .find_map(|p| class.strip_prefix(p))
        .unwrap_or(class)
}

/// The candidate nearest to `name` (case-insensitive edit distance), if it is near enough to
/// be a misspelling: at most 1 edit for short names, 2 from 6 letters, 3 from 12.
pub fn closest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let lower = name.to_lowercase();
    let limit = match name.chars().count() {
        0..=5 => 1,
        6..=11 => 2,
        _ => 3,
    };
    candidates
        // Optimal string alignment: Levenshtein with an adjacent transposition as one edit.
        .map(|c| (strsim::osa_distance(&lower, &c.to_lowercase()), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// How components defined in Python (`module:Class`, a script) are checked and built: one
/// factory per kind, installed once by the Python bindings when they load and absent in a
/// pure-Rust build, where a config naming a Python class gets an error saying what it needs.
pub struct PythonHook<F: ?Sized + 'static> {
    factory: std::sync::OnceLock<Box<F>>,
    /// What a config asks for, in the error without the bindings ("Python stages").
    what: &'static str,
}

impl<F: ?Sized + 'static> PythonHook<F> {
    pub const fn new(what: &'static str) -> Self {
        PythonHook {
            factory: std::sync::OnceLock::new(),
            what,
        }
    }

    /// A second install (the module imported again in a sub-interpreter) keeps the first.
    pub fn install(&self, factory: Box<F>) {
        let _ = self.factory.set(factory);
    }

    /// The installed factory; without one, an error on the config's `class`.
    pub fn get(
        &self,
        config: &crate::config::ComponentConfig,
    ) -> Result<&F, crate::config::ConfigError> {
        self.factory.get().map(|b| b.as_ref()).ok_or_else(|| {
            config.error(
                "class",
                format!(
                    "{} need the lucille Python package (run through `lucille` or `import lucille`)",
                    self.what
                ),
            )
        })
    }
}

/// `module:Class` / `dir/file.py:Class`: a Python class, for any kind of component. A
/// Java-style dotted name has no colon.
pub fn is_python_reference(class: &str) -> bool {
    match class.rsplit_once(':') {
        Some((module, object)) => !module.is_empty() && !object.is_empty() && !object.contains('/'),
        None => false,
    }
}

/// The start of the reference a Python object given to `lucille.run(stages=, connector=,
/// indexer=)` is named by for one run (`lucille._loader:given.o7`): the number differs from run
/// to run, the object is the same.
pub const GIVEN_OBJECT_PREFIX: &str = "lucille._loader:given.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn misspellings_within_the_limit_get_the_nearest_name() {
        let names = ["CopyFields", "RenameFields"];
        assert_eq!(closest("CopyFeilds", names.into_iter()), Some("CopyFields"));
        assert_eq!(closest("copyfields", names.into_iter()), Some("CopyFields"));
        assert_eq!(closest("Frobnicate", names.into_iter()), None);
        // A transposition is one edit ("Lnegth"); "Lnegt" is two, over a 5-letter name's one.
        assert_eq!(closest("Lnegth", ["Length"].into_iter()), Some("Length"));
        assert_eq!(closest("Lnegt", ["Length"].into_iter()), None);
    }

    #[test]
    fn a_python_hook_without_its_factory_says_what_is_needed() {
        trait Widget: Send + Sync {
            fn n(&self) -> u8;
        }
        struct One;
        impl Widget for One {
            fn n(&self) -> u8 {
                1
            }
        }
        static HOOK: PythonHook<dyn Widget> = PythonHook::new("Python widgets");
        let config = crate::config::ComponentConfig::new(serde_json::Map::new(), "widgets[0]");
        let err = HOOK
            .get(&config)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("widgets[0].class"), "{err}");
        assert!(
            err.contains("Python widgets need the lucille Python package"),
            "{err}"
        );
        HOOK.install(Box::new(One));
        assert_eq!(HOOK.get(&config).map(|f| f.n()).ok(), Some(1));
    }

    #[test]
    fn python_references_have_a_module_and_an_object() {
        assert!(is_python_reference("mystages:Enrich"));
        assert!(is_python_reference("lib/stages.py:Enrich"));
        assert!(!is_python_reference("C:/path/file"));
        assert!(!is_python_reference(":Class"));
        assert!(!is_python_reference("com.kmwllc.lucille.stage.CopyFields"));
    }
}
