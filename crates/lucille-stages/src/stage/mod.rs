//! Stages of this crate. The core's `stage` module is re-exported inside the crate, so
//! the files here name the core's items as `super::` / `crate::stage::` (the facade crate
//! `lucille` gathers every crate's `stage` module under one path).

pub(crate) use lucille_core::stage::*;

/// Lucille's keys for cloud storage, for the stages that do not read it (scripts and
/// dictionaries are local files; FetchFileContent and ApplyFileHandlers (lucille-files) do read it).
pub(crate) const CLOUD_STORAGE: &str = "reading cloud storage (Lucille's s3 / gcp / azure blocks) \
     is not done by this stage here; copy the files to a local folder";

pub mod add_random_boolean;
pub mod add_random_date;
pub mod add_random_double;
pub mod add_random_int;
pub mod add_random_nested_field;
pub mod add_random_string;
pub mod apply_javascript;
pub mod apply_jsonata;
pub mod apply_jsoup;
pub mod apply_opennlp_name_finders;
pub mod apply_regex;
pub mod base64_decode;
pub mod chunk_text;
pub mod collapse_children_documents;
pub mod compute_field_size;
pub mod concatenate;
pub mod contains;
pub mod copy_fields;
pub mod create_children_stage;
pub mod create_static_teaser;
pub mod delete_fields;
pub mod detect_language;
pub mod dictionary_lookup;
pub mod drop_document;
pub mod drop_values;
pub mod emit_nested_children;
pub mod extract_entities;
pub mod extract_entities_fst;
pub mod extract_first_character;
pub mod hash_field_value_to_bucket;
pub mod length;
pub mod normalize_field_names;
pub mod normalize_text;
pub mod parse_date;
pub mod parse_file_path;
pub mod parse_floats;
pub mod parse_json;
pub mod print;
pub(crate) mod random_value;
pub mod random_vector;
pub mod remove_diacritics;
pub mod remove_duplicate_values;
pub mod remove_empty_fields;
pub mod rename_fields;
pub mod replace_patterns;
pub mod set_static_values;
pub mod skip_document;
pub mod split_field_values;
pub mod timestamp;
pub mod trim_whitespace;
pub mod truncate_field;
pub mod xpath_extractor;
