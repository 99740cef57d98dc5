//! The HOCON parser and resolver: `parse_str` never panics (a panic on its parse thread is
//! reported as `HoconError::Internal`, which this target treats as a crash), and a resolved
//! config rendered back to HOCON (`lucille render`) parses to the same value.
//!
//! Includes resolve against `crates/lucille-hocon/tests/hocon/corpus` (read only), whose `inc/` folder holds the
//! files the seeds include. Inputs naming device or process files (`/dev/zero`, `/proc/...`)
//! are skipped: reading an endless file is not a parser bug.
#![no_main]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use lucille_hocon::{parse_str, render_hocon, HoconError, ParseOptions};

fn base_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../crates/lucille-hocon/tests/hocon/corpus"))
}

fn options() -> &'static ParseOptions {
    static OPTS: OnceLock<ParseOptions> = OnceLock::new();
    OPTS.get_or_init(|| {
        let env = HashMap::from([
            ("HOME".to_string(), "/home/fuzz".to_string()),
            ("THREADS".to_string(), "4".to_string()),
            ("EMPTY".to_string(), String::new()),
        ]);
        ParseOptions::with_env(env)
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if ["dev", "proc", "sys", "run"].iter().any(|s| text.contains(s)) {
        return;
    }
    let base = if data.first().is_some_and(|b| b % 2 == 0) {
        Some(base_dir().as_path())
    } else {
        None
    };
    match parse_str(text, base, options()) {
        Ok(value) => {
            let rendered = render_hocon(&value);
            let again = parse_str(&rendered, None, options())
                .unwrap_or_else(|e| panic!("rendered config does not parse: {e}\n{rendered}"));
            assert_eq!(again, value, "render round trip\n{rendered}");
        }
        Err(HoconError::Internal { message }) => panic!("internal error: {message}"),
        Err(_) => {}
    }
});
