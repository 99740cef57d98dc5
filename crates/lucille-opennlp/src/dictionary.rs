//! An OpenNLP dictionary artifact (`*.dictionary`: `<dictionary case_sensitive="..."><entry>
//! <token>..</token></entry>...`), used here as the tokenizer's abbreviation set. As
//! `Dictionary.asStringSet()`, a string is in the set when an entry is that single token,
//! compared ignoring case unless the dictionary is case sensitive (the default).

use std::collections::HashSet;

use crate::error::{corrupt, Result};

#[derive(Debug, Clone, Default)]
pub struct StringSet {
    case_sensitive: bool,
    entries: HashSet<String>,
}

impl StringSet {
    pub(crate) fn read(bytes: &[u8], entry: &str) -> Result<Self> {
        let root = crate::xml::parse(bytes).map_err(|e| corrupt(entry, e.to_string()))?;
        let case_sensitive = match root.attribute("case_sensitive") {
            "" => true,
            v => crate::java::parse_boolean(v),
        };
        let mut entries = HashSet::new();
        for e in root.elements().filter(|e| e.name == "entry") {
            let tokens: Vec<String> = e
                .elements()
                .filter(|t| t.name == "token")
                .map(|t| t.text())
                .collect();
            if let [token] = tokens.as_slice() {
                entries.insert(if case_sensitive {
                    token.clone()
                } else {
                    token.to_lowercase()
                });
            }
        }
        Ok(StringSet {
            case_sensitive,
            entries,
        })
    }

    pub fn contains(&self, s: &str) -> bool {
        if self.case_sensitive {
            self.entries.contains(s)
        } else {
            self.entries.contains(&s.to_lowercase())
        }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
