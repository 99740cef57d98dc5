//! Test-only: the services the tests use (servers the `scripts/services/*.sh` scripts start on
//! 127.0.0.1, an installed model), found through environment variables.

/// The value of `var`, or `None` when it is unset or empty: the test then skips with a message
/// that says how to provide it (`how`), unless `LUCILLE_REQUIRE_SERVICES=1` (as
/// `scripts/test.sh` sets), where a missing service fails the test instead.
pub fn test_service(var: &str, how: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => Some(v),
        _ => {
            assert!(
                std::env::var("LUCILLE_REQUIRE_SERVICES").as_deref() != Ok("1"),
                "{var} is not set but LUCILLE_REQUIRE_SERVICES=1 ({how})"
            );
            eprintln!("skipped: {var} is not set ({how})");
            None
        }
    }
}

/// A file of the repository (the tests' data under `tests/data/`), whichever crate's tests ask:
/// unit tests run in their own crate's folder.
pub fn repo_path(rel: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}
