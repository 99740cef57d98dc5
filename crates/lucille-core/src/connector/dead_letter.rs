//! DeadLetterConnector: publishes again the documents of a dead-letter file (the JSON lines
//! `worker.deadLetterPath` collects, one per FAILed document or record), so a run can process
//! exactly what failed once more: `lucille replay` and the service's replay build a config
//! around it. Each line's `document` is the document as it entered the pipeline; a line
//! without one (a record that failed before it became a document), and a line that is not a
//! dead-letter record, FAIL with a reason that says so, so every line is accounted for.

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use super::{connector_spec, Common, Connector, ConnectorDescriptor, ConnectorError};
use crate::accounting::Publisher;
use crate::config::{ComponentConfig, ConfigErrors, Options};
use crate::document::Document;

pub const DESCRIPTOR: ConnectorDescriptor = ConnectorDescriptor {
    name: "DeadLetterConnector",
    aliases: &[],
    spec: DeadLetterOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Publishes the documents of a dead-letter file again, to re-process what failed.
#[derive(Options)]
#[options(base = connector_spec())]
struct DeadLetterOptions {
    /// The dead-letter file (JSON lines, as `worker.deadLetterPath` writes them).
    path: String,
    /// Only the records a pipeline of this name failed (a file may hold several pipelines').
    from_pipeline: Option<String>,
}

struct DeadLetterConnector {
    common: Common,
    path: PathBuf,
    from_pipeline: Option<String>,
}

fn build(config: &ComponentConfig, common: &Common) -> Result<Box<dyn Connector>, ConfigErrors> {
    let o = DeadLetterOptions::from_config(config)?;
    Ok(Box::new(DeadLetterConnector {
        common: common.clone(),
        path: config.resolve_path(&o.path),
        from_pipeline: o.from_pipeline,
    }))
}

/// What one line of a dead-letter file gives to publish.
#[derive(Debug, PartialEq)]
enum Line {
    Document(Document),
    /// FAILed again with this reason, under this id.
    Failed(String, String),
    /// Another pipeline's record, or a blank line.
    Skip,
}

/// One line at `at` (file:line); ids get the connector's `docIdPrefix`, as any connector's do.
fn read_line(line: &str, at: &str, from_pipeline: Option<&str>, prefix: Option<&str>) -> Line {
    let with_prefix = |id: &str| crate::document::ids::with_prefix(prefix, id);
    if line.trim().is_empty() {
        return Line::Skip;
    }
    let record: serde_json::Map<String, Value> = match serde_json::from_str(line) {
        Ok(Value::Object(m)) => m,
        Ok(_) => return Line::Failed(with_prefix(at), format!("{at}: not a dead-letter record")),
        Err(e) => {
            return Line::Failed(
                with_prefix(at),
                format!("{at}: not a dead-letter record: {e}"),
            )
        }
    };
    let pipeline = record.get("pipeline").and_then(Value::as_str);
    if from_pipeline.is_some_and(|p| pipeline != Some(p)) {
        return Line::Skip;
    }
    let id = with_prefix(record.get("id").and_then(Value::as_str).unwrap_or(at));
    let error = record.get("error").and_then(Value::as_str).unwrap_or("");
    match record.get("document") {
        Some(Value::Object(doc)) => {
            let mut doc = doc.clone();
            // A new run stamps its own id.
            doc.remove(crate::document::RUN_ID_FIELD);
            if let (Some(_), Some(Value::String(doc_id))) = (prefix, doc.get_mut("id")) {
                *doc_id = with_prefix(doc_id);
            }
            match Document::from_map(doc) {
                Ok(d) => Line::Document(d),
                Err(e) => Line::Failed(id, format!("{at}: its document is not valid: {e}")),
            }
        }
        _ => Line::Failed(
            id,
            format!(
                "not replayed: the record failed before it became a document, so there is \
                 nothing to process again (it failed with: {error})"
            ),
        ),
    }
}

impl Connector for DeadLetterConnector {
    fn execute(&mut self, publisher: &Arc<Publisher>) -> Result<(), ConnectorError> {
        let file = std::fs::File::open(&self.path).map_err(|e| {
            ConnectorError::new(format!("cannot open {}: {e}", self.path.display()))
        })?;
        // Only what the file held when the run began: a replay whose own failures go to the
        // same file must not read them back.
        let len = file
            .metadata()
            .map_err(|e| ConnectorError::new(format!("cannot read {}: {e}", self.path.display())))?
            .len();
        for (n, line) in BufReader::new(file.take(len)).lines().enumerate() {
            let line = line.map_err(|e| {
                ConnectorError::new(format!("reading {}: {e}", self.path.display()))
            })?;
            let at = format!("{}:{}", self.path.display(), n + 1);
            let prefix = self.common.doc_id_prefix.as_deref();
            match read_line(&line, &at, self.from_pipeline.as_deref(), prefix) {
                Line::Document(doc) => publisher.publish(doc)?,
                Line::Failed(id, reason) => publisher.publish_failed(&id, &reason)?,
                Line::Skip => {}
            }
        }
        Ok(())
    }
}

/// A run of `config` that processes again the documents of the dead-letter file at `path`:
/// its connectors are replaced by one DeadLetterConnector per pipeline the file names (in the
/// order they first appear), each sending that pipeline's records through it; the pipelines,
/// indexer and every other block stay as they are. A pipeline the config no longer has is an
/// error with its key path.
pub fn replay_config(config: &Value, path: &std::path::Path) -> Result<Value, ConfigErrors> {
    use crate::config::ConfigError;
    let text = std::fs::read_to_string(path).map_err(|e| {
        ConfigError::new(
            "",
            format!("cannot read dead-letter file {}: {e}", path.display()),
        )
    })?;
    let mut pipelines: Vec<String> = Vec::new();
    let mut errors = Vec::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let record = serde_json::from_str::<Value>(line);
        match record
            .as_ref()
            .ok()
            .and_then(|v| v.get("pipeline"))
            .and_then(Value::as_str)
        {
            Some(p) if !pipelines.iter().any(|k| k == p) => pipelines.push(p.to_string()),
            Some(_) => {}
            None => errors.push(ConfigError::new(
                "",
                format!(
                    "{}:{}: not a dead-letter record (a JSON object with \"id\", \"pipeline\", \
                     \"error\" and \"document\", as worker.deadLetterPath writes them)",
                    path.display(),
                    n + 1
                ),
            )),
        }
    }
    let known: Vec<&str> = config
        .get("pipelines")
        .and_then(Value::as_array)
        .map(|ps| {
            ps.iter()
                .filter_map(|p| p.get("name").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    let mut connectors = Vec::new();
    let file = path.to_string_lossy().into_owned();
    for (i, name) in pipelines.iter().enumerate() {
        let mut c = serde_json::Map::new();
        c.insert("name".into(), Value::from(format!("replay-{}", i + 1)));
        c.insert("class".into(), Value::from("DeadLetterConnector"));
        c.insert("path".into(), Value::from(file.clone()));
        c.insert("fromPipeline".into(), Value::from(name.clone()));
        if known.contains(&name.as_str()) {
            c.insert("pipeline".into(), Value::from(name.clone()));
        } else if !name.ends_with(super::NO_PIPELINE_SUFFIX) {
            // (`{connector}_no_pipeline`: records of a connector without a pipeline, which
            // went straight to the indexer and go there again.)
            errors.push(ConfigError::new(
                "pipelines",
                format!(
                    "the dead-letter file's records came from pipeline {name:?}, which this \
                     config does not have (it has {known:?})"
                ),
            ));
        }
        connectors.push(Value::Object(c));
    }
    if !errors.is_empty() {
        return Err(ConfigErrors(errors));
    }
    if connectors.is_empty() {
        return Err(ConfigError::new(
            "",
            format!("the dead-letter file {} holds no records", path.display()),
        )
        .into());
    }
    let mut out = config.clone();
    if let Value::Object(m) = &mut out {
        m.insert("connectors".into(), Value::Array(connectors));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{read_line, Line};

    #[test]
    fn each_kind_of_line() {
        let doc = r#"{"id":"a","run_id":"r","pipeline":"p","error":"boom","attempts":1,"document":{"id":"a","run_id":"r","title":"x"}}"#;
        match read_line(doc, "f:1", None, None) {
            Line::Document(d) => {
                assert_eq!(d.id(), "a");
                assert_eq!(d.run_id(), None, "a new run stamps its own");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(read_line(doc, "f:1", Some("other"), None), Line::Skip);
        let record =
            r#"{"id":"f.csv:3","pipeline":"p","error":"bad row","attempts":0,"document":null}"#;
        match read_line(record, "f:2", Some("p"), None) {
            Line::Failed(id, reason) => {
                assert_eq!(id, "f.csv:3");
                assert!(reason.contains("bad row"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(read_line("{oops", "f:3", None, None), Line::Failed(id, _) if id == "f:3")
        );
        assert_eq!(read_line("  ", "f:4", None, None), Line::Skip);
        match read_line(doc, "f:1", None, Some("re-")) {
            Line::Document(d) => assert_eq!(d.id(), "re-a"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn replay_config_has_one_connector_per_pipeline_and_rejects_strangers() {
        let dir = std::env::temp_dir().join(format!("dl-replay-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("dl.jsonl");
        std::fs::write(
            &file,
            "{\"id\":\"a\",\"pipeline\":\"p1\",\"document\":{\"id\":\"a\"}}\n\
             {\"id\":\"b\",\"pipeline\":\"p2\",\"document\":null}\n\
             {\"id\":\"c\",\"pipeline\":\"p1\",\"document\":{\"id\":\"c\"}}\n",
        )
        .unwrap();
        let config = serde_json::json!({
            "connectors": [{"name": "old", "class": "SequenceConnector", "numDocs": 1}],
            "pipelines": [{"name": "p1", "stages": []}, {"name": "p2", "stages": []}],
            "indexer": {"type": "nop"}
        });
        let replay = super::replay_config(&config, &file).unwrap();
        let connectors = replay["connectors"].as_array().unwrap();
        assert_eq!(connectors.len(), 2);
        assert_eq!(connectors[0]["fromPipeline"], "p1");
        assert_eq!(connectors[1]["pipeline"], "p2");
        assert_eq!(replay["indexer"], config["indexer"]);
        let only_p1 = serde_json::json!({"pipelines": [{"name": "p1", "stages": []}]});
        let e = super::replay_config(&only_p1, &file).unwrap_err();
        assert!(e.to_string().contains("\"p2\""), "{e}");
        std::fs::write(&file, "{\"id\":\"a\",\"pipeline\":\"p1\"}\nnot json\n").unwrap();
        let e = super::replay_config(&config, &file).unwrap_err();
        assert!(
            e.to_string()
                .contains("dl.jsonl:2: not a dead-letter record"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
