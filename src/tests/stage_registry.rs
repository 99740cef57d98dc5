//! Stage classes resolved against the built-in stages.

use crate::registry;
use crate::stage::registry::*;

#[test]
fn resolves_builtin_full_plugin_and_python_names() {
    assert!(matches!(resolve("CopyFields"), Ok(StageClass::Builtin(d)) if d.name == "CopyFields"));
    assert!(matches!(
        resolve("com.kmwllc.lucille.stage.CopyFields"),
        Ok(StageClass::Builtin(d)) if d.name == "CopyFields"
    ));
    assert!(matches!(
        resolve("com.kmwllc.lucille.tika.stage.TextExtractor"),
        Ok(StageClass::Builtin(d)) if d.name == "TextExtractor"
    ));
    assert!(
        matches!(resolve("mystages:Enrich"), Ok(StageClass::Python(p)) if p == "mystages:Enrich")
    );
    assert!(matches!(
        resolve("lib/stages.py:Enrich"),
        Ok(StageClass::Python(_))
    ));
    let err = resolve("copyfields").err().unwrap().to_string();
    assert!(err.contains("did you mean \"CopyFields\""), "{err}");
    assert!(resolve("NoSuchStage").is_err());
    // Without the Python bindings, the Python-backed built-ins say what they need.
    let err = resolve("com.kmwllc.lucille.stage.EmbeddedPython")
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("needs the lucille Python package"), "{err}");
}

#[test]
fn builtin_names_are_unique_and_specs_include_common_keys() {
    let mut names: Vec<_> = all_builtins().iter().map(|d| d.name).collect();
    let n = names.len();
    assert!(n >= 60, "the built-in stages register themselves: {n}");
    names.dedup();
    assert_eq!(names.len(), n, "duplicate stage names");
    for d in all_builtins() {
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

#[test]
fn misspelt_names_get_the_nearest_builtin() {
    let names = || all_builtins().into_iter().map(|d| d.name);
    assert_eq!(registry::closest("CopyFeilds", names()), Some("CopyFields"));
    assert_eq!(
        registry::closest("RenameFeild", names()),
        Some("RenameFields")
    );
    let err = resolve("CopyFeilds")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("did you mean \"CopyFields\"?"), "{err}");
}

/// Every component reads its block through its options type, which checks the keys: so each
/// stage's and connector's own build reports an unknown key (planning relies on it, and no
/// longer checks a spec separately), and every key it declares is described for `lucille doc`.
#[test]
fn every_builtin_checks_its_keys_when_built_and_documents_them() {
    use crate::config::ComponentConfig;
    use crate::connector::{Common, ConnectorDescriptor};
    let block = |class: &str| {
        let v = serde_json::json!({"class": class, "name": "x", "zzUnknownKey": 1});
        ComponentConfig::new(v.as_object().cloned().unwrap_or_default(), "c")
    };
    // Each built-in stage and connector: its build result with the unknown key, and its spec.
    let mut built: Vec<(&str, Result<(), String>, crate::config::Spec)> = all_builtins()
        .into_iter()
        .map(|d| {
            let r = (d.build)(&block(d.name))
                .map(|_| ())
                .map_err(|e| e.to_string());
            (d.name, r, (d.spec)())
        })
        .collect();
    let common = Common::default();
    built.extend(registry::all::<ConnectorDescriptor>().into_iter().map(|d| {
        let r = (d.build)(&block(d.name), &common)
            .map(|_| ())
            .map_err(|e| e.to_string());
        (d.name, r, (d.spec)())
    }));
    for (name, result, spec) in built {
        match result {
            Ok(()) => panic!("{name} built with an unknown key"),
            Err(err) => assert!(err.contains("c.zzUnknownKey"), "{name}: {err}"),
        }
        for p in spec.properties() {
            assert!(
                !p.description.is_empty(),
                "{name}.{} has no description",
                p.name
            );
        }
        assert!(!spec.summary_text().is_empty(), "{name} has no summary");
    }
}
