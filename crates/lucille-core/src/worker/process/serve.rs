//! The worker process's side: build the pipeline from the first line, then answer each request
//! line with the outputs of its documents, until the input ends.

use std::io::{BufRead, Write};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{json, Value};

use super::{WireError, WireOutput};
use crate::config::{ConfigErrors, PathContext};
use crate::document::Document;
use crate::pipeline::{Output, Pipeline, PipelinePlan};
use crate::stage::StageError;

#[derive(Deserialize)]
pub(super) struct Hello {
    pub pipeline: String,
    pub stages: Vec<Value>,
    pub paths: Option<PathContext>,
}

#[derive(Deserialize)]
struct Request {
    docs: Vec<Value>,
}

fn send(output: &mut impl Write, value: &impl serde::Serialize) -> std::io::Result<()> {
    serde_json::to_writer(&mut *output, value).map_err(std::io::Error::other)?;
    output.write_all(b"\n")?;
    output.flush()
}

/// Why a worker process could not build its pipeline (sent back as the reply's text).
#[derive(Debug, thiserror::Error)]
enum BuildError {
    #[error("{}", .0.to_string().trim_end())]
    Config(#[from] ConfigErrors),
    #[error(transparent)]
    Start(#[from] StageError),
}

fn build(hello: Hello) -> Result<Pipeline, BuildError> {
    let paths = Arc::new(hello.paths.unwrap_or_else(|| PathContext::new(None)));
    let mut pipeline = PipelinePlan::from_config(&hello.pipeline, &hello.stages, "stages", &paths)
        .and_then(|plan| plan.instantiate())?;
    pipeline.start()?;
    Ok(pipeline)
}

fn wire(out: Output) -> WireOutput {
    let error = out
        .error
        .as_ref()
        .map(|e| WireError::from_error(e, out.doc.id()));
    WireOutput {
        doc: out.doc.into_value(),
        child: out.is_child,
        error,
    }
}

/// Runs the protocol of [`super`] over `input` and `output` (the process's stdin and stdout).
/// Returns when the input ends (the run is done with this process) or the pipe breaks.
pub fn serve(input: impl BufRead, mut output: impl Write) -> std::io::Result<()> {
    let mut lines = input.lines();
    let Some(first) = lines.next() else {
        return Ok(());
    };
    let hello: Hello = match serde_json::from_str(&first?) {
        Ok(h) => h,
        Err(e) => {
            return send(
                &mut output,
                &json!({ "error": format!("bad first line: {e}") }),
            )
        }
    };
    let mut pipeline = match build(hello) {
        Ok(p) => p,
        Err(e) => return send(&mut output, &json!({ "error": e.to_string() })),
    };
    send(&mut output, &json!({ "ready": true }))?;
    for line in lines {
        let request: Request = serde_json::from_str(&line?).map_err(std::io::Error::other)?;
        let docs = request
            .docs
            .into_iter()
            .map(Document::from_value)
            .collect::<Result<Vec<_>, _>>()
            .map_err(std::io::Error::other)?;
        let outputs: Vec<Output> =
            if docs.len() > 1 && (pipeline.batch_size() > 1 || pipeline.takes_blocks()) {
                pipeline.process_batch(docs)
            } else {
                docs.into_iter()
                    .flat_map(|doc| pipeline.process(doc).collect::<Vec<_>>())
                    .collect()
            };
        let out: Vec<WireOutput> = outputs.into_iter().map(wire).collect();
        send(&mut output, &json!({ "out": out }))?;
    }
    if let Err(e) = pipeline.stop() {
        tracing::error!("{e}");
    }
    send(&mut output, &json!({ "metrics": pipeline.metrics() }))
}
