//! [`PathSet`]: repository paths given as globs (`tests/` is everything under `tests`), as the
//! repository config names them (read-only paths, test paths) and the sandbox, the agents'
//! tools and the test lock match them. A leaf: it knows no other room.

use globset::{Glob, GlobSet, GlobSetBuilder};

/// `d/` means everything under `d`.
pub fn glob_of(pattern: &str) -> String {
    match pattern.strip_suffix('/') {
        Some(dir) => format!("{dir}/**"),
        None => pattern.to_owned(),
    }
}

/// A set of repository paths given as globs (`tests/` is `tests/**`).
#[derive(Debug, Clone)]
pub struct PathSet {
    set: GlobSet,
    patterns: Vec<String>,
}

impl PathSet {
    /// Builds the set; patterns were checked when the config was parsed.
    pub fn new(patterns: &[String]) -> Self {
        let mut b = GlobSetBuilder::new();
        for p in patterns {
            if let Ok(g) = Glob::new(&glob_of(p)) {
                b.add(g);
            }
        }
        Self {
            set: b.build().unwrap_or_else(|_| GlobSet::empty()),
            patterns: patterns.to_vec(),
        }
    }

    /// True when `path` (relative, `/`-separated) is in the set.
    pub fn contains(&self, path: &str) -> bool {
        self.set.is_match(path)
    }

    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }
}
