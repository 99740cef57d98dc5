//! Stages that exist only in unit tests (`TestPanicOn`, `TestSleepOn`, `TestBlocks`),
//! registered from here in test builds as any stage is: they let runner and worker tests make
//! a stage panic or hang, or see the blocks a stage that takes blocks is given.

use super::Stage;
use crate::config::{Options, Spec};
use crate::document::Document;

inventory::submit!(PANIC_ON);
inventory::submit!(SLEEP_ON);
inventory::submit!(BLOCKS);

/// `TestBlocks { failOn? }`: takes whole blocks (`Stage::takes_blocks`); stamps each document
/// with the number of its block in this instance (`block`) and the block's size
/// (`block_size`); the document whose id is `failOn` FAILs and one whose id ends in `kids` gets
/// two children.
pub const BLOCKS: super::StageDescriptor = super::StageDescriptor {
    name: "TestBlocks",
    spec: BlocksOptions::spec,
    build: |config| {
        let o = BlocksOptions::from_config(config)?;
        Ok(Box::new(Blocks {
            fail_on: o.fail_on,
            blocks: 0,
        }))
    },
};

/// Test only: stamps each document with its block.
#[derive(Options)]
#[options(base = Spec::stage())]
struct BlocksOptions {
    /// The id of a document that FAILs.
    fail_on: Option<String>,
}

struct Blocks {
    fail_on: Option<String>,
    blocks: u64,
}

impl Stage for Blocks {
    fn takes_blocks(&self) -> bool {
        true
    }

    fn process_document(&mut self, doc: &mut Document) -> super::StageResult {
        self.process_batch(std::slice::from_mut(doc))
            .pop()
            .unwrap_or(Ok(None))
    }

    fn process_batch(&mut self, docs: &mut [Document]) -> Vec<super::StageResult> {
        self.blocks += 1;
        let size = docs.len() as u64;
        docs.iter_mut()
            .map(|doc| {
                if self.fail_on.as_deref() == Some(doc.id()) {
                    return Err(super::StageFailure::msg("TestBlocks fails it"));
                }
                doc.set_field("block", self.blocks)?;
                doc.set_field("block_size", size)?;
                if doc.id().ends_with("kids") {
                    let kids = (0..2)
                        .map(|i| Document::new(format!("{}-{i}", doc.id())))
                        .collect::<Result<Vec<_>, _>>()?;
                    return Ok(Some(super::children_from(kids)));
                }
                Ok(None)
            })
            .collect()
    }
}

/// `TestPanicOn { field, value }`: panics when the document's field has that value.
pub const PANIC_ON: super::StageDescriptor = super::StageDescriptor {
    name: "TestPanicOn",
    spec: PanicOnOptions::spec,
    build: |config| {
        let o = PanicOnOptions::from_config(config)?;
        Ok(Box::new(PanicOn {
            field: o.field,
            value: o.value,
        }))
    },
};

/// Test only: panics on the documents whose field has the value.
#[derive(Options)]
#[options(base = Spec::stage())]
struct PanicOnOptions {
    /// The field looked at.
    field: String,
    /// The value that makes the stage panic.
    value: String,
}

struct PanicOn {
    field: String,
    value: String,
}

impl Stage for PanicOn {
    fn process_document(&mut self, doc: &mut Document) -> super::StageResult {
        if doc.get_string(&self.field)?.as_deref() == Some(self.value.as_str()) {
            panic!("TestPanicOn hit {:?}", self.value);
        }
        Ok(None)
    }
}

/// `TestSleepOn { field, value, millis, untilFile? }`: sleeps that long when the document's
/// field has that value, or until file `untilFile` exists (a stage that does not return, for
/// `worker.maxProcessingSecs`).
pub const SLEEP_ON: super::StageDescriptor = super::StageDescriptor {
    name: "TestSleepOn",
    spec: SleepOnOptions::spec,
    build: |config| {
        let o = SleepOnOptions::from_config(config)?;
        Ok(Box::new(SleepOn {
            field: o.field,
            value: o.value,
            millis: o.millis as u64,
            until: o.until_file.map(std::path::PathBuf::from),
        }))
    },
};

/// Test only: sleeps on the documents whose field has the value.
#[derive(Options)]
#[options(base = Spec::stage())]
struct SleepOnOptions {
    /// The field looked at.
    field: String,
    /// The value that makes the stage sleep.
    value: String,
    /// How long it sleeps, in milliseconds.
    millis: usize,
    /// A file whose creation ends the sleep early.
    until_file: Option<String>,
}

struct SleepOn {
    field: String,
    value: String,
    millis: u64,
    until: Option<std::path::PathBuf>,
}

impl Stage for SleepOn {
    fn process_document(&mut self, doc: &mut Document) -> super::StageResult {
        if doc.get_string(&self.field)?.as_deref() == Some(self.value.as_str()) {
            let end = std::time::Instant::now() + std::time::Duration::from_millis(self.millis);
            while std::time::Instant::now() < end
                && !self.until.as_ref().is_some_and(|p| p.exists())
            {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
        Ok(None)
    }
}
