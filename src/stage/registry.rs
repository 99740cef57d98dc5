//! Resolves a stage config's `class`: a built-in name (`CopyFields`), Lucille's full class
//! name (`com.kmwllc.lucille.stage.CopyFields`), or a Python object (`module:Class` or
//! `path/to/file.py:Class`), which the Python bindings build when they are loaded.

use std::sync::OnceLock;

use super::{Stage, StageDescriptor};
use crate::config::{ComponentConfig, ConfigError};

/// Lucille's package for its stages; a class given with it resolves to the built-in.
pub const LUCILLE_STAGE_PACKAGE: &str = "com.kmwllc.lucille.stage.";

/// Lucille's plugin packages whose stages are built in here (`...tika.stage.TextExtractor`).
const LUCILLE_PLUGIN_STAGE_PACKAGES: &[&str] = &[
    "com.kmwllc.lucille.tika.stage.",
    "com.kmwllc.lucille.ocr.stage.",
];

/// Every built-in stage. Grouped by area; each group is kept in sorted order.
pub fn builtins() -> &'static [&'static StageDescriptor] {
    use super::*;
    static ALL: &[&StageDescriptor] = &[
        // group: field manipulation
        &compute_field_size::DESCRIPTOR,
        &concatenate::DESCRIPTOR,
        &copy_fields::DESCRIPTOR,
        &delete_fields::DESCRIPTOR,
        &drop_values::DESCRIPTOR,
        &extract_first_character::DESCRIPTOR,
        &hash_field_value_to_bucket::DESCRIPTOR,
        &length::DESCRIPTOR,
        &normalize_field_names::DESCRIPTOR,
        &normalize_text::DESCRIPTOR,
        &remove_diacritics::DESCRIPTOR,
        &remove_duplicate_values::DESCRIPTOR,
        &remove_empty_fields::DESCRIPTOR,
        &rename_fields::DESCRIPTOR,
        &set_static_values::DESCRIPTOR,
        &split_field_values::DESCRIPTOR,
        &timestamp::DESCRIPTOR,
        &trim_whitespace::DESCRIPTOR,
        &truncate_field::DESCRIPTOR,
        // end group: field manipulation
        // group: parsing and extraction
        &apply_javascript::DESCRIPTOR,
        &apply_jsonata::DESCRIPTOR,
        &apply_jsoup::DESCRIPTOR,
        &apply_ocr::DESCRIPTOR,
        &apply_regex::DESCRIPTOR,
        &base64_decode::DESCRIPTOR,
        &create_static_teaser::DESCRIPTOR,
        &detect_language::DESCRIPTOR,
        &parse_date::DESCRIPTOR,
        &parse_file_path::DESCRIPTOR,
        &parse_floats::DESCRIPTOR,
        &parse_json::DESCRIPTOR,
        &replace_patterns::DESCRIPTOR,
        &text_extractor::DESCRIPTOR,
        &xpath_extractor::DESCRIPTOR,
        // end group: parsing and extraction
        // group: dictionaries, control flow, children, test data
        &add_random_boolean::DESCRIPTOR,
        &add_random_date::DESCRIPTOR,
        &add_random_double::DESCRIPTOR,
        &add_random_int::DESCRIPTOR,
        &add_random_nested_field::DESCRIPTOR,
        &add_random_string::DESCRIPTOR,
        &chunk_text::DESCRIPTOR,
        &collapse_children_documents::DESCRIPTOR,
        &contains::DESCRIPTOR,
        &create_children_stage::DESCRIPTOR,
        &dictionary_lookup::DESCRIPTOR,
        &match_query::DESCRIPTOR,
        &query_database::DESCRIPTOR,
        &drop_document::DESCRIPTOR,
        &emit_nested_children::DESCRIPTOR,
        &extract_entities::DESCRIPTOR,
        &extract_entities_fst::DESCRIPTOR,
        &print::DESCRIPTOR,
        &random_vector::DESCRIPTOR,
        &skip_document::DESCRIPTOR,
        // end group: dictionaries, control flow, children, test data
        // group: fetching
        &fetch::apply_file_handlers::DESCRIPTOR,
        &fetch::fetch_file_content::DESCRIPTOR,
        &fetch::fetch_uri::DESCRIPTOR,
        // end group: fetching
        // group: vectors
        &embed::DESCRIPTOR,
        &ai::openai_embed::DESCRIPTOR,
        &ai::prompt_ollama::DESCRIPTOR,
        &search::query_opensearch::DESCRIPTOR,
        &search::elasticsearch_lookup::DESCRIPTOR,
        // end group: vectors
    ];
    ALL
}

/// How a `class` value resolved.
pub enum StageClass {
    Builtin(&'static StageDescriptor),
    /// `module:Class` or `file.py:Class`.
    Python(String),
}

pub fn resolve(class: &str) -> Result<StageClass, String> {
    let class = class.trim();
    if is_python_reference(class) {
        return Ok(StageClass::Python(class.to_string()));
    }
    let short = std::iter::once(LUCILLE_STAGE_PACKAGE)
        .chain(LUCILLE_PLUGIN_STAGE_PACKAGES.iter().copied())
        .find_map(|p| class.strip_prefix(p))
        .unwrap_or(class);
    if let Some(d) = builtins().iter().find(|d| d.name == short) {
        return Ok(StageClass::Builtin(d));
    }
    if let Some(d) = PYTHON_FACTORY
        .get()
        .and_then(|f| f.builtins().iter().find(|d| d.name == short))
    {
        return Ok(StageClass::Builtin(d));
    }
    if PYTHON_BUILTINS.contains(&short) {
        return Err(format!(
            "{short} runs Python code and needs the lucille Python package (run through \
             `lucille` or `import lucille`)"
        ));
    }
    #[cfg(test)]
    if let Some(d) = super::test_stages::test_descriptors()
        .iter()
        .find(|d| d.name == short)
    {
        return Ok(StageClass::Builtin(d));
    }
    let mut message = format!("unknown stage class {class:?}");
    if let Some(name) = closest(short, all_builtins().iter().map(|d| d.name)) {
        message.push_str(&format!(" (did you mean {name:?}?)"));
    } else {
        message.push_str(
            "; use a built-in stage name, Lucille's full class name, or a Python class as \
             \"module:Class\" or \"path/to/file.py:Class\"",
        );
    }
    Err(message)
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
        .map(|c| (edit_distance(&lower, &c.to_lowercase()), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Levenshtein distance with adjacent transpositions counted as one edit.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = d;
        }
    }
    rows[a.len()][b.len()]
}

/// Built-in stages that run Python; the Python bindings provide them
/// ([`PythonStageFactory::builtins`]).
pub const PYTHON_BUILTINS: [&str; 2] = ["EmbeddedPython", "ExternalPython"];

/// Every built-in stage this build can run: the Rust ones, then those the Python bindings
/// provide when they are loaded.
pub fn all_builtins() -> Vec<&'static StageDescriptor> {
    let mut all: Vec<_> = builtins().to_vec();
    if let Some(f) = PYTHON_FACTORY.get() {
        all.extend(f.builtins().iter().copied());
    }
    all
}

/// `module:Class` / `dir/file.py:Class`; a Java-style dotted name has no colon.
pub fn is_python_reference(class: &str) -> bool {
    match class.rsplit_once(':') {
        Some((module, object)) => !module.is_empty() && !object.is_empty() && !object.contains('/'),
        None => false,
    }
}

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
    /// Built-in stages implemented with Python (`EmbeddedPython`, `ExternalPython`), resolved
    /// by name like the Rust ones.
    fn builtins(&self) -> &'static [&'static StageDescriptor] {
        &[]
    }
}

static PYTHON_FACTORY: OnceLock<Box<dyn PythonStageFactory>> = OnceLock::new();

pub fn install_python_factory(factory: Box<dyn PythonStageFactory>) {
    // A second install (module re-imported in a sub-interpreter) keeps the first.
    let _ = PYTHON_FACTORY.set(factory);
}

pub fn python_factory(
    config: &ComponentConfig,
) -> Result<&'static dyn PythonStageFactory, ConfigError> {
    PYTHON_FACTORY.get().map(|b| b.as_ref()).ok_or_else(|| {
        config.error(
            "class",
            "Python stages need the lucille Python package (run through `lucille` or `import lucille`)",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_builtin_full_and_python_names() {
        assert!(
            matches!(resolve("CopyFields"), Ok(StageClass::Builtin(d)) if d.name == "CopyFields")
        );
        assert!(matches!(
            resolve("com.kmwllc.lucille.stage.CopyFields"),
            Ok(StageClass::Builtin(d)) if d.name == "CopyFields"
        ));
        assert!(
            matches!(resolve("mystages:Enrich"), Ok(StageClass::Python(p)) if p == "mystages:Enrich")
        );
        assert!(matches!(
            resolve("lib/stages.py:Enrich"),
            Ok(StageClass::Python(_))
        ));
        let err = resolve("copyfields").err().unwrap();
        assert!(err.contains("did you mean \"CopyFields\""), "{err}");
        assert!(resolve("NoSuchStage").is_err());
        // Without the Python bindings, the Python-backed built-ins say what they need.
        let err = resolve("com.kmwllc.lucille.stage.EmbeddedPython")
            .err()
            .unwrap();
        assert!(err.contains("needs the lucille Python package"), "{err}");
        assert!(!is_python_reference("C:/path/file"));
        assert!(!is_python_reference(":Class"));
    }

    #[test]
    fn builtin_names_are_unique_and_specs_include_common_keys() {
        let mut names: Vec<_> = builtins().iter().map(|d| d.name).collect();
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n, "duplicate stage names");
        for d in builtins() {
            let spec = (d.spec)();
            for common in ["name", "class", "enabled", "conditions", "conditionPolicy"] {
                assert!(
                    spec.properties().iter().any(|p| p.name == common),
                    "{} spec lacks {common}",
                    d.name
                );
            }
        }
    }
}

#[cfg(test)]
mod suggestion_tests {
    use super::*;

    #[test]
    fn misspelt_names_get_the_nearest_builtin() {
        let names = || all_builtins().into_iter().map(|d| d.name);
        assert_eq!(closest("CopyFeilds", names()), Some("CopyFields"));
        assert_eq!(closest("copyfields", names()), Some("CopyFields"));
        assert_eq!(closest("RenameFeild", names()), Some("RenameFields"));
        assert_eq!(closest("Frobnicate", names()), None);
        assert_eq!(edit_distance("ab", "ba"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        let err = resolve("CopyFeilds").err().unwrap_or_default();
        assert!(err.contains("did you mean \"CopyFields\"?"), "{err}");
    }
}
