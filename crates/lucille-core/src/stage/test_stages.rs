//! Stages that exist only in unit tests (`TestPanicOn`, `TestSleepOn`), registered from here
//! in test builds as any stage is: they let runner and worker tests make a stage panic or hang.

use super::Stage;

inventory::submit!(PANIC_ON);
inventory::submit!(SLEEP_ON);
use crate::document::Document;

/// `TestPanicOn { field, value }`: panics when the document's field has that value.
pub const PANIC_ON: super::StageDescriptor = super::StageDescriptor {
    name: "TestPanicOn",
    spec: || {
        crate::config::Spec::stage()
            .required("field", crate::config::Kind::String)
            .required("value", crate::config::Kind::String)
    },
    build: |config| {
        let field = config.require_string("field")?;
        let value = config.require_string("value")?;
        Ok(Box::new(PanicOn { field, value }))
    },
};

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
    spec: || {
        crate::config::Spec::stage()
            .required("field", crate::config::Kind::String)
            .required("value", crate::config::Kind::String)
            .required("millis", crate::config::Kind::Integer)
            .optional("untilFile", crate::config::Kind::String)
    },
    build: |config| {
        let field = config.require_string("field")?;
        let value = config.require_string("value")?;
        let millis = config.i64("millis")?.unwrap_or(0).max(0) as u64;
        let until = config.string("untilFile")?.map(std::path::PathBuf::from);
        Ok(Box::new(SleepOn {
            field,
            value,
            millis,
            until,
        }))
    },
};

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
