//! ApplyJavascript: runs a JavaScript program on each document, with the document bound as
//! `doc`, on QuickJS embedded in the library (the `rquickjs` crate, compiled from its bundled C
//! source: no system library, nothing downloaded).
//!
//! Keys (Lucille's): exactly one of `script` (inline source) or `scriptPath` (a file, resolved
//! as every input path). `doc` is a plain object of the document's fields (and its `id`): read
//! `doc.title`, set `doc.sum = doc.a + doc.b`, nest `doc.a = doc.a || {}; doc.a.b = 1`,
//! `delete doc.tmp`, edit arrays in place (`delete doc.list[0]` leaves a hole that comes back
//! as `null`, as JavaScript has it; Lucille's proxy closes the gap). When the script ends the object's fields replace the
//! document's; a missing field reads as `undefined` (Lucille's proxy gives `null`, which
//! compares equal with `==`). Numbers that are whole come back as integers; `NaN`, `Infinity`
//! and functions do not survive (JSON's rules), and integers beyond 2^53 lose precision.
//!
//! The script is compiled once per stage instance (a syntax error, like an unreadable
//! `scriptPath` or both / neither key, is a config error); each worker thread has its own
//! engine, whose global state persists between documents as in Lucille's context. A thrown
//! error, or changing `doc.id`, FAILs the document with the message and the script's stack.
//!
//! Differences from Lucille: Lucille's `rawDoc` (the Java document object) does not exist;
//! `doc` is a copy written back when the script ends, not a live proxy. Lucille's `s3` / `gcp`
//! / `azure` blocks are config errors.

use rquickjs::{CatchResultExt, Context, Function, Object, Runtime};
use serde_json::{Map, Value};

use super::CLOUD_STORAGE;
use super::{Stage, StageDescriptor, StageFailure, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec};
use crate::document::Document;

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "ApplyJavascript",
    spec: ApplyJavascriptOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Runs a JavaScript program (QuickJS) on each document, bound as `doc`.
#[derive(Options)]
#[options(base = Spec::stage(), extend = cloud_storage)]
struct ApplyJavascriptOptions {
    /// The script's source (give this or scriptPath).
    script: Option<String>,
    /// A file holding the script (give this or script).
    script_path: Option<String>,
}

/// Lucille's cloud-storage blocks, rejected with what to do instead.
fn cloud_storage(spec: Spec) -> Spec {
    spec.unsupported("s3", CLOUD_STORAGE)
        .unsupported("gcp", CLOUD_STORAGE)
        .unsupported("azure", CLOUD_STORAGE)
}

/// The global holding the compiled script (a function of `doc`).
const FUNCTION: &str = "__lucilleApplyJavascript";

/// The engine's memory limit per stage instance.
const MEMORY_LIMIT: usize = 512 * 1024 * 1024;

struct ApplyJavascript {
    /// Where the script came from, for messages (`<inline>` or the path).
    origin: String,
    // Field order matters for drop: the context before the runtime.
    context: Context,
    _runtime: Runtime,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = ApplyJavascriptOptions::from_config(config)?;
    let (source, origin, key) = match (o.script, o.script_path) {
        (Some(s), None) => (s, "<inline>".to_string(), "script"),
        (None, Some(p)) => {
            let path = config.resolve_path(&p);
            let text = std::fs::read_to_string(&path).map_err(|e| {
                config.error(
                    "scriptPath",
                    format!("cannot read the script {:?}: {e}", path.display()),
                )
            })?;
            (text, p, "scriptPath")
        }
        (Some(_), Some(_)) => {
            return Err(config
                .error("script", "give either script or scriptPath, not both")
                .into())
        }
        (None, None) => {
            return Err(config
                .error("script", "is required (or give scriptPath)")
                .into());
        }
    };
    let engine_error =
        |e: rquickjs::Error| config.error(key, format!("cannot start the JavaScript engine: {e}"));
    let runtime = Runtime::new().map_err(engine_error)?;
    runtime.set_memory_limit(MEMORY_LIMIT);
    let context = Context::full(&runtime).map_err(engine_error)?;
    // The script becomes the body of a function of `doc`; its first line stays line 1.
    let wrapped = format!("(function (doc) {{{source}\n}})");
    context.with(|ctx| {
        let compiled = ctx
            .eval::<Function, _>(wrapped.into_bytes())
            .catch(&ctx)
            .map_err(|e| config.error(key, format!("the script does not compile: {e}")))?;
        ctx.globals()
            .set(FUNCTION, compiled)
            .map_err(|e| config.error(key, format!("cannot keep the compiled script: {e}")))
    })?;
    Ok(Box::new(ApplyJavascript {
        origin,
        context,
        _runtime: runtime,
    }))
}

impl Stage for ApplyJavascript {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        let mut fields = Map::with_capacity(doc.field_count() + 1);
        fields.insert("id".into(), Value::from(doc.id()));
        for (name, value) in doc.fields() {
            fields.insert(name.to_string(), value.clone());
        }
        let input = Value::Object(fields).to_string();
        let origin = &self.origin;
        let result = self.context.with(|ctx| {
            let fail = |e: &dyn std::fmt::Display| {
                StageFailure::msg(format!("JavaScript ({origin}) failed: {e}"))
            };
            let function: Function = ctx.globals().get(FUNCTION).map_err(|e| fail(&e))?;
            let object: Object = ctx
                .json_parse(input)
                .catch(&ctx)
                .map_err(|e| fail(&e))?
                .into_object()
                .ok_or_else(|| fail(&"the document is not an object"))?;
            function
                .call::<_, ()>((object.clone(),))
                .catch(&ctx)
                .map_err(|e| fail(&e))?;
            ctx.json_stringify(object)
                .catch(&ctx)
                .map_err(|e| fail(&e))?
                .map(|s| s.to_string())
                .transpose()
                .map_err(|e| fail(&e))
        })?;
        let Some(text) = result else {
            return Err(StageFailure::msg(format!(
                "JavaScript ({origin}): doc could not be turned back into JSON"
            )));
        };
        let mut map: Map<String, Value> = serde_json::from_str(&text).map_err(|e| {
            StageFailure::msg(format!("JavaScript ({origin}): doc is not valid JSON: {e}"))
        })?;
        match map.shift_remove("id") {
            Some(Value::String(id)) if id == doc.id() => {}
            // `delete doc.id` is ignored, as Lucille's proxy refuses it.
            None => {}
            Some(other) => {
                return Err(StageFailure::msg(format!(
                    "JavaScript ({origin}) changed doc.id to {other}; the id cannot change"
                )))
            }
        }
        doc.replace_fields(map)?;
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::stage::testing::temp_file;
    use crate::stage::testing::{build_err, build_stage, process, process_err};

    #[test]
    fn script_path_sums_fields() {
        let js = temp_file(
            "valid.js",
            b"if (doc.a != null && doc.b != null) {\n  doc.sum = doc.a + doc.b;\n}\n",
        );
        let mut s = build_stage(json!({"class": "com.kmwllc.lucille.stage.ApplyJavascript",
            "scriptPath": js.to_str().unwrap()}));
        let out = process(&mut s, json!({"id": "d", "a": 2, "b": 3}));
        assert_eq!(out.get("sum"), Some(&json!(5)));
        let out = process(&mut s, json!({"id": "d", "a": 2}));
        assert!(!out.has("sum"));
        let out = process(&mut s, json!({"id": "d", "a": 0.5, "b": 0.25}));
        assert_eq!(out.get("sum"), Some(&json!(0.75)));
    }

    #[test]
    fn nested_arrays_deletes_and_types() {
        let mut s = build_stage(json!({"class": "ApplyJavascript", "script": "
            doc.a = doc.a || {}; doc.a.b = 1;
            doc.tags.push(doc.title.toUpperCase());
            delete doc.tmp; delete doc.list[0];
            doc.items = doc.items.filter(function (x) { return x > 1; });
            doc.nothing = null; doc.flag = !doc.flag; doc.id_seen = doc.id;
            doc.missing_is_undefined = (doc.nope === undefined) && (doc.nope == null);"}));
        let out = process(
            &mut s,
            json!({"id": "d1", "title": "hi", "tags": ["x"], "tmp": 1, "list": [1, 2],
                "items": [1, 2, 3], "flag": false}),
        );
        assert_eq!(out.get("a"), Some(&json!({"b": 1})));
        assert_eq!(out.get("tags"), Some(&json!(["x", "HI"])));
        assert!(!out.has("tmp"));
        assert_eq!(out.get("list"), Some(&json!([null, 2])));
        assert_eq!(out.get("items"), Some(&json!([2, 3])));
        assert_eq!(out.get("nothing"), Some(&json!(null)));
        assert_eq!(out.get("flag"), Some(&json!(true)));
        assert_eq!(out.get("id_seen"), Some(&json!("d1")));
        assert_eq!(out.get("missing_is_undefined"), Some(&json!(true)));
        assert_eq!(out.id(), "d1");
    }

    #[test]
    fn errors_fail_the_document() {
        let mut s = build_stage(json!({"class": "ApplyJavascript",
            "script": "if (doc.bad) { throw new Error('bad document ' + doc.id); }\ndoc.ok = 1;"}));
        let err = process_err(&mut s, json!({"id": "x", "bad": true}));
        assert!(err.contains("bad document x"), "{err}");
        assert_eq!(
            process(&mut s, json!({"id": "y"})).get("ok"),
            Some(&json!(1))
        );
        let mut s = build_stage(json!({"class": "ApplyJavascript", "script": "doc.id = 'other';"}));
        assert!(process_err(&mut s, json!({"id": "x"})).contains("id"));
        let mut s = build_stage(json!({"class": "ApplyJavascript", "script": "undefinedFn(doc);"}));
        assert!(process_err(&mut s, json!({"id": "x"})).contains("undefinedFn"));
        let mut s =
            build_stage(json!({"class": "ApplyJavascript", "script": "rawDoc.setField('a', 1);"}));
        assert!(process_err(&mut s, json!({"id": "x"})).contains("rawDoc"));
    }

    #[test]
    fn globals_persist_between_documents() {
        let mut s = build_stage(json!({"class": "ApplyJavascript",
            "script": "globalThis.n = (globalThis.n || 0) + 1; doc.n = globalThis.n;"}));
        process(&mut s, json!({"id": "a"}));
        assert_eq!(
            process(&mut s, json!({"id": "b"})).get("n"),
            Some(&json!(2))
        );
    }

    #[test]
    fn bad_configs() {
        let err = build_err(json!({"class": "ApplyJavascript",
            "scriptPath": "classpath:ApplyJavascriptTest/does_not_exist.js"}));
        assert!(
            err.contains("scriptPath") && err.contains("does_not_exist.js"),
            "{err}"
        );
        assert!(build_err(json!({"class": "ApplyJavascript"})).contains("script"));
        assert!(build_err(
            json!({"class": "ApplyJavascript", "script": "1", "scriptPath": "x.js"})
        )
        .contains("not both"));
        let err = build_err(json!({"class": "ApplyJavascript", "script": "doc.a = ;"}));
        assert!(err.contains("script") && err.contains("compile"), "{err}");
        assert!(
            build_err(json!({"class": "ApplyJavascript", "script": "1", "s3": {}})).contains("s3")
        );
    }
}
