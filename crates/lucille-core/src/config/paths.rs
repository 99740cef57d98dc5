//! Where a relative path in a config points (interface "Paths"): every path-valued key of a
//! stage, connector or indexer goes through one [`PathContext`], reached from its
//! `ComponentConfig` (`resolve_path` for what is read, `resolve_output_path` for what is
//! written).
//!
//! As in Lucille, which is started from a project folder with `-Dconfig.file=conf/x.conf`, a
//! relative path resolves against the working directory. An input that does not exist there but
//! does beside the config file resolves there (configs written for the folder they sit in keep
//! working). `classpath:X` (Lucille's resources) is looked up in the resource roots: by default
//! `src/main/resources`, `src/test/resources` and `conf/` under the working directory, then the
//! config's folder; `runner.resourceRoots` replaces the working-directory part of that list.
//! `include` is not handled here: it stays relative to the including file (the HOCON reader).

use std::path::{Path, PathBuf};

/// Lucille's `classpath:` prefix.
pub const CLASSPATH_PREFIX: &str = "classpath:";

/// Resource roots searched for `classpath:X` when the config does not name its own, relative to
/// the working directory (the config's folder is searched after them).
pub const DEFAULT_RESOURCE_ROOTS: [&str; 3] = ["src/main/resources", "src/test/resources", "conf"];

// Serializable: a worker process (`worker.processes`) resolves paths as the run does.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct PathContext {
    /// The working directory when the config was planned; `None` if it could not be read.
    cwd: Option<PathBuf>,
    /// The folder of the config file (`None` for a config given as a dict or text).
    config_dir: Option<PathBuf>,
    /// Resource roots for `classpath:`, in search order (the config's folder comes last).
    resource_roots: Vec<PathBuf>,
}

impl PathContext {
    /// The context of a config in `config_dir`, run from the current working directory, with
    /// the default resource roots.
    pub fn new(config_dir: Option<PathBuf>) -> Self {
        let cwd = std::env::current_dir().ok();
        let roots = DEFAULT_RESOURCE_ROOTS.iter().map(PathBuf::from).collect();
        PathContext::with(cwd, config_dir, roots)
    }

    /// A context with an explicit working directory and resource roots (relative roots are
    /// taken from `cwd`).
    pub fn with(cwd: Option<PathBuf>, config_dir: Option<PathBuf>, roots: Vec<PathBuf>) -> Self {
        let mut resource_roots: Vec<PathBuf> = roots
            .into_iter()
            .map(|r| match (&cwd, r.is_absolute()) {
                (Some(c), false) => c.join(r),
                _ => r,
            })
            .collect();
        if let Some(d) = &config_dir {
            resource_roots.push(d.clone());
        }
        PathContext {
            cwd,
            config_dir,
            resource_roots,
        }
    }

    pub fn config_dir(&self) -> Option<&Path> {
        self.config_dir.as_deref()
    }

    pub fn cwd(&self) -> Option<&Path> {
        self.cwd.as_deref()
    }

    pub fn resource_roots(&self) -> &[PathBuf] {
        &self.resource_roots
    }

    fn under_cwd(&self, path: &Path) -> PathBuf {
        match &self.cwd {
            Some(c) => c.join(path),
            None => path.to_path_buf(),
        }
    }

    /// A path the run reads (a source, a dictionary, a script): `classpath:X` from the resource
    /// roots; a relative path from the working directory, or from the config's folder when it
    /// exists only there. A path found nowhere resolves against the working directory, so the
    /// error that follows names the place Lucille would have looked.
    pub fn resolve_input(&self, p: &str) -> PathBuf {
        if let Some(rest) = p.strip_prefix(CLASSPATH_PREFIX) {
            return self.resolve_classpath(rest);
        }
        let path = Path::new(p);
        if path.is_absolute() {
            return path.to_path_buf();
        }
        let here = self.under_cwd(path);
        if found(&here) {
            return here;
        }
        if let Some(dir) = &self.config_dir {
            let beside = dir.join(path);
            if found(&beside) {
                tracing::debug!(
                    "{p:?} is not in the working directory; using {} beside the config file",
                    beside.display()
                );
                return beside;
            }
        }
        here
    }

    /// A path the run writes (an output file, an index folder, a dead-letter file): relative to
    /// the working directory, as Lucille's are.
    pub fn resolve_output(&self, p: &str) -> PathBuf {
        let p = p.strip_prefix(CLASSPATH_PREFIX).unwrap_or(p);
        let path = Path::new(p);
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.under_cwd(path)
        }
    }

    /// `classpath:X`: the first resource root holding `X` (a leading `/` is ignored, as Java's
    /// class loader does); when none does, `X` under the first root.
    pub fn resolve_classpath(&self, name: &str) -> PathBuf {
        let name = name.trim_start_matches('/');
        for root in &self.resource_roots {
            let candidate = root.join(name);
            if candidate.exists() {
                return candidate;
            }
        }
        match self.resource_roots.first() {
            Some(root) => root.join(name),
            None => self.under_cwd(Path::new(name)),
        }
    }

    /// The roots searched for `classpath:`, for error messages.
    pub fn describe_roots(&self) -> String {
        self.resource_roots
            .iter()
            .map(|r| r.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Whether a path exists; for a glob (`data/**/*.csv`), whether the folder before its first
/// pattern component does.
fn found(path: &Path) -> bool {
    let is_pattern = |s: &str| s.contains(['*', '?', '[', '{']);
    let mut literal = PathBuf::new();
    for c in path.components() {
        if is_pattern(&c.as_os_str().to_string_lossy()) {
            return literal.is_dir();
        }
        literal.push(c);
    }
    path.exists()
}

/// Creates the folder an output file goes in (an index's store, a JSONL or CSV file, a
/// checkpoint, a dead-letter file), if it has one and it is missing.
pub fn create_parent_folder(path: &Path) -> std::io::Result<()> {
    match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) => std::fs::create_dir_all(dir),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Tree {
        dir: PathBuf,
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    impl Tree {
        fn new(files: &[&str]) -> Tree {
            static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let dir =
                std::env::temp_dir().join(format!("lucille-paths-{}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            for f in files {
                let p = dir.join(f);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, "x").unwrap();
            }
            Tree { dir }
        }
        fn p(&self, rel: &str) -> PathBuf {
            self.dir.join(rel)
        }
        fn ctx(&self) -> PathContext {
            let roots = DEFAULT_RESOURCE_ROOTS.iter().map(PathBuf::from).collect();
            PathContext::with(Some(self.p("proj")), Some(self.p("proj/conf")), roots)
        }
    }

    #[test]
    fn relative_inputs_resolve_against_the_working_directory_first() {
        let t = Tree::new(&["proj/data/a.csv", "proj/conf/data/a.csv"]);
        assert_eq!(t.ctx().resolve_input("data/a.csv"), t.p("proj/data/a.csv"));
    }

    #[test]
    fn an_input_only_beside_the_config_resolves_there() {
        let t = Tree::new(&["proj/conf/songs.csv"]);
        assert_eq!(
            t.ctx().resolve_input("songs.csv"),
            t.p("proj/conf/songs.csv")
        );
    }

    #[test]
    fn a_glob_resolves_where_its_folder_is() {
        let t = Tree::new(&["proj/conf/in/a.csv", "proj/other/b.csv"]);
        assert_eq!(
            t.ctx().resolve_input("in/**/*.csv"),
            t.p("proj/conf/in/**/*.csv")
        );
        assert_eq!(
            t.ctx().resolve_input("other/*.csv"),
            t.p("proj/other/*.csv")
        );
        assert_eq!(t.ctx().resolve_input("*.csv"), t.p("proj/*.csv"));
    }

    #[test]
    fn a_missing_input_names_the_working_directory() {
        let t = Tree::new(&[]);
        assert_eq!(t.ctx().resolve_input("nope.csv"), t.p("proj/nope.csv"));
    }

    #[test]
    fn outputs_resolve_against_the_working_directory_even_if_one_exists_beside_the_config() {
        let t = Tree::new(&["proj/conf/out.jsonl"]);
        assert_eq!(t.ctx().resolve_output("out.jsonl"), t.p("proj/out.jsonl"));
        assert_eq!(
            t.ctx().resolve_output("/abs/out"),
            PathBuf::from("/abs/out")
        );
    }

    #[test]
    fn classpath_searches_the_resource_roots_in_order_then_the_config_folder() {
        let t = Tree::new(&[
            "proj/src/test/resources/dict.txt",
            "proj/conf/dict.txt",
            "proj/conf/only-conf.txt",
        ]);
        let ctx = t.ctx();
        assert_eq!(
            ctx.resolve_input("classpath:dict.txt"),
            t.p("proj/src/test/resources/dict.txt")
        );
        assert_eq!(
            ctx.resolve_input("classpath:/only-conf.txt"),
            t.p("proj/conf/only-conf.txt")
        );
        assert_eq!(
            ctx.resolve_input("classpath:missing.txt"),
            t.p("proj/src/main/resources/missing.txt")
        );
    }

    #[test]
    fn configured_resource_roots_replace_the_defaults_but_keep_the_config_folder() {
        let t = Tree::new(&[
            "proj/res/d.txt",
            "proj/src/main/resources/d.txt",
            "proj/conf/e.txt",
        ]);
        let ctx = PathContext::with(
            Some(t.p("proj")),
            Some(t.p("proj/conf")),
            vec![PathBuf::from("res")],
        );
        assert_eq!(ctx.resolve_input("classpath:d.txt"), t.p("proj/res/d.txt"));
        assert_eq!(ctx.resolve_input("classpath:e.txt"), t.p("proj/conf/e.txt"));
    }
}
