//! The built-in stages, one file each; each submits its descriptor to the registry. The
//! `Stage` trait, conditions and the stage registry live in `lucille-core` (re-exported here).

pub use lucille_core::stage::*;

pub(crate) mod field_util;
pub(crate) mod random_value;

// group: field manipulation
pub mod compute_field_size;
pub mod concatenate;
pub mod copy_fields;
pub mod delete_fields;
pub mod drop_values;
pub mod extract_first_character;
pub mod hash_field_value_to_bucket;
pub mod length;
pub mod normalize_field_names;
pub mod normalize_text;
pub mod remove_diacritics;
pub mod remove_duplicate_values;
pub mod remove_empty_fields;
pub mod rename_fields;
pub mod set_static_values;
pub mod split_field_values;
pub mod timestamp;
pub mod trim_whitespace;
pub mod truncate_field;
// end group: field manipulation
// group: parsing and extraction
pub mod apply_javascript;
pub mod apply_jsonata;
pub mod apply_jsoup;
pub mod apply_ocr;
pub mod apply_regex;
pub mod base64_decode;
pub mod create_static_teaser;
pub mod detect_language;
pub mod parse_date;
pub mod parse_file_path;
pub mod parse_floats;
pub mod parse_json;
pub mod replace_patterns;
pub mod text_extractor;
pub mod xpath_extractor;
// end group: parsing and extraction
// group: dictionaries, control flow, children, test data
pub mod add_random_boolean;
pub mod add_random_date;
pub mod add_random_double;
pub mod add_random_int;
pub mod add_random_nested_field;
pub mod add_random_string;
pub mod chunk_text;
pub mod collapse_children_documents;
pub mod contains;
pub mod create_children_stage;
pub mod dictionary_lookup;
pub mod drop_document;
pub mod emit_nested_children;
pub mod extract_entities;
pub mod extract_entities_fst;
pub mod match_query;
pub mod print;
pub mod query_database;
pub mod random_vector;
pub mod skip_document;
// end group: dictionaries, control flow, children, test data
// group: fetching (URLs, files, file handlers)
pub mod fetch;
// end group: fetching
// group: vectors
pub mod ai;
pub mod embed;
pub mod search;
// end group: vectors
