//! Stages that exist only in unit tests (`TestPanicOn`, `TestSleepOn`), registered from here
//! in test builds as any stage is: they let runner and worker tests make a stage panic or hang.

use super::Stage;
use crate::config::{Options, Spec};
use crate::document::Document;

inventory::submit!(PANIC_ON);
inventory::submit!(SLEEP_ON);

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
