//! CreateStaticTeaser: writes a teaser of at most `maxLength` characters of each source field
//! into its destination, cutting at a word break.
//!
//! Keys: `source` and `dest` (one destination, or one per source), `maxLength` (required, at
//! least 1), `updateMode` (default overwrite).
//!
//! Only the first value of a source is used, as in Lucille. A value shorter than `maxLength`
//! is written whole (trimmed). Otherwise the text is cut at the last delimiter (space, `.`,
//! `?`, `!` or `,`) at or before character `maxLength - 1` and trimmed; a text with no such
//! delimiter is cut at exactly `maxLength` characters. A missing or null source is skipped.
//!
//! Difference from Lucille: lengths count Unicode characters, not UTF-16 code units, so a
//! teaser never splits a character.

use super::apply_regex::source_dest_pairs;
use super::{Stage, StageDescriptor, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec, Strings};
use crate::document::{Document, UpdateMode};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "CreateStaticTeaser",
    spec: CreateStaticTeaserOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Writes a teaser of at most `maxLength` characters of each source field into its
/// destination, cut at a word break.
#[derive(Options)]
#[options(base = Spec::stage())]
struct CreateStaticTeaserOptions {
    /// The fields read (only their first value).
    source: Strings,
    /// The fields the teasers go to: one per source, or one for every source.
    dest: Strings,
    /// The most characters in a teaser.
    #[option(min = 1)]
    max_length: usize,
    /// How a destination that already has values is written.
    #[option(default)]
    update_mode: UpdateMode,
}

struct CreateStaticTeaser {
    pairs: Vec<(String, String)>,
    max_length: usize,
    mode: UpdateMode,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = CreateStaticTeaserOptions::from_config(config)?;
    Ok(Box::new(CreateStaticTeaser {
        pairs: source_dest_pairs(config, &o.source, &o.dest)?,
        max_length: o.max_length,
        mode: o.update_mode,
    }))
}

const DELIMITERS: &[char] = &[' ', '.', '?', '!', ','];

/// The teaser of `text` for a limit of `max` characters (`max` >= 1).
pub(crate) fn teaser(text: &str, max: usize) -> &str {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    if max > chars.len() {
        return text.trim();
    }
    let mut pointer = max - 1;
    while pointer > 0 && !DELIMITERS.contains(&chars[pointer].1) {
        pointer -= 1;
    }
    if pointer == 0 {
        let end = chars.get(max).map_or(text.len(), |(i, _)| *i);
        &text[..end]
    } else {
        text[..chars[pointer].0].trim()
    }
}

impl Stage for CreateStaticTeaser {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        for (source, dest) in &self.pairs {
            let first = doc.get_list_as::<String>(source)?.into_iter().next();
            let Some(Some(text)) = first else {
                continue;
            };
            let out = teaser(&text, self.max_length).to_string();
            doc.update(dest, self.mode, [out])?;
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::teaser;
    use crate::stage::testing::{build_err, build_stage, process, process_err};
    use serde_json::json;

    fn stage() -> Box<dyn crate::stage::Stage> {
        build_stage(
            json!({"class": "CreateStaticTeaser", "source": ["input1", "input2"],
            "dest": ["teaser1", "teaser2"], "maxLength": 50}),
        )
    }

    #[test]
    fn teasers_cut_at_word_breaks() {
        let mut s = stage();
        let out = process(
            &mut s,
            json!({"id": "d", "input1": "Smaller than the char limit"}),
        );
        assert_eq!(
            out.get("teaser1"),
            Some(&json!("Smaller than the char limit"))
        );

        let long = "Here is a teaser that is longer than the char limit. The extraction will be shorter than max length.";
        let second = "This teaser will get cut off in the middle of a sentence, but not in the middle of a word?";
        let out = process(
            &mut s,
            json!({"id": "d", "input1": [long, "ignored"], "input2": second}),
        );
        assert_eq!(
            out.get("teaser1"),
            Some(&json!("Here is a teaser that is longer than the char"))
        );
        assert_eq!(
            out.get("teaser2"),
            Some(&json!("This teaser will get cut off in the middle of a"))
        );

        let run = "thisisonelongcontinuousstreamofcharacterssincenodelimitersarefoundthestringwillbetruncatedafter50chars";
        let out = process(&mut s, json!({"id": "d", "input1": run}));
        assert_eq!(
            out.get("teaser1"),
            Some(&json!("thisisonelongcontinuousstreamofcharacterssincenode"))
        );
    }

    #[test]
    fn counts_characters_not_bytes() {
        assert_eq!(teaser("ééééé", 3), "ééé");
        assert_eq!(teaser("ab cd ef", 5), "ab");
        assert_eq!(teaser("  padded  ", 20), "padded");
        assert_eq!(teaser("abc", 3), "abc");
    }

    #[test]
    fn one_destination_update_modes_and_missing_fields() {
        let mut s = build_stage(json!({"class": "CreateStaticTeaser", "source": ["a", "b"],
            "dest": "t", "maxLength": 3, "updateMode": "append"}));
        let out = process(
            &mut s,
            json!({"id": "d", "a": "x y z", "b": 12345, "c": "no"}),
        );
        assert_eq!(out.get("t"), Some(&json!(["x", "123"])));
        let out = process(&mut s, json!({"id": "d", "a": null}));
        assert!(!out.has("t"));
        let mut s = build_stage(json!({"class": "CreateStaticTeaser", "source": "a",
            "dest": "t", "maxLength": 3, "updateMode": "skip"}));
        let out = process(&mut s, json!({"id": "d", "a": "xyz", "t": "old"}));
        assert_eq!(out.get("t"), Some(&json!("old")));
    }

    #[test]
    fn bad_values_and_configs() {
        let mut s = stage();
        let err = process_err(&mut s, json!({"id": "d", "input1": {"a": 1}}));
        assert!(err.contains("input1"), "{err}");
        assert!(build_err(
            json!({"class": "CreateStaticTeaser", "source": ["a"], "dest": ["b"], "maxLength": 0})
        )
        .contains("maxLength"));
        assert!(
            build_err(json!({"class": "CreateStaticTeaser", "source": ["a"], "dest": ["b"]}))
                .contains("maxLength")
        );
        assert!(
            build_err(json!({"class": "CreateStaticTeaser", "source": ["a"],
            "dest": ["b", "c"], "maxLength": 5}))
            .contains("dest")
        );
    }
}
