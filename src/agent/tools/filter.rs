//! Path filters for `search_files` and `get_project_structure`, with `.gitignore`-like rules: a
//! glob without `/` matches a name at any depth (`*.py`, `node_modules`); one with `/` matches
//! the path from the repository root (`src/**/*.rs`, `/build`); a trailing `/` matches only
//! directories (`tests/`); a matching directory covers everything under it.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use crate::agent::ToolError;

/// Compiled globs.
#[derive(Clone)]
pub struct Globs {
    name: GlobSet,
    path: GlobSet,
    dir_name: GlobSet,
    dir_path: GlobSet,
    empty: bool,
}

impl Globs {
    /// `field` names the argument in error messages.
    pub fn new(patterns: &[String], field: &str) -> Result<Self, ToolError> {
        let mut b = [
            GlobSetBuilder::new(),
            GlobSetBuilder::new(),
            GlobSetBuilder::new(),
            GlobSetBuilder::new(),
        ];
        let [name, path, dir_name, dir_path] = &mut b;
        for raw in patterns {
            let bad = |e: String| {
                ToolError::new(
                    "bad_arguments",
                    format!("{field}: {raw:?} is not a valid glob: {e}"),
                )
            };
            let mut p = raw.trim().trim_start_matches("./");
            let anchored = p.starts_with('/');
            p = p.trim_start_matches('/');
            let dir_only = p.ends_with('/');
            p = p.trim_end_matches('/');
            if p.is_empty() {
                return Err(bad("it is empty".into()));
            }
            let glob = |g: &str| {
                GlobBuilder::new(g)
                    .literal_separator(true)
                    .build()
                    .map_err(|e| bad(e.kind().to_string()))
            };
            if anchored || p.contains('/') {
                if !dir_only {
                    path.add(glob(p)?);
                }
                path.add(glob(&format!("{p}/**"))?);
                dir_path.add(glob(p)?);
            } else {
                if !dir_only {
                    name.add(glob(p)?);
                }
                path.add(glob(&format!("**/{p}/**"))?);
                dir_name.add(glob(p)?);
            }
        }
        let built = b.map(|x| x.build().unwrap_or_else(|_| GlobSet::empty()));
        let [name, path, dir_name, dir_path] = built;
        Ok(Self {
            name,
            path,
            dir_name,
            dir_path,
            empty: patterns.is_empty(),
        })
    }

    pub fn is_empty(&self) -> bool {
        self.empty
    }

    /// Whether the file at `rel` (relative to the repository root) matches.
    pub fn matches_file(&self, rel: &str) -> bool {
        self.name.is_match(base(rel)) || self.path.is_match(rel)
    }

    /// Whether the directory at `rel` matches (everything under it then does too).
    pub fn matches_dir(&self, rel: &str) -> bool {
        self.dir_name.is_match(base(rel)) || self.dir_path.is_match(rel)
    }
}

fn base(rel: &str) -> &str {
    rel.rsplit('/').next().unwrap_or(rel)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(p: &[&str]) -> Globs {
        Globs::new(&p.iter().map(|s| s.to_string()).collect::<Vec<_>>(), "glob").unwrap()
    }

    #[test]
    fn gitignore_like_rules() {
        let py = g(&["*.py"]);
        assert!(py.matches_file("a.py") && py.matches_file("src/deep/b.py"));
        assert!(!py.matches_file("a.pyc"));
        let src = g(&["src/*.rs"]);
        assert!(src.matches_file("src/a.rs") && !src.matches_file("src/x/a.rs"));
        let deep = g(&["src/**/*.rs"]);
        assert!(deep.matches_file("src/x/y/a.rs"));
        let tests = g(&["tests/"]);
        assert!(tests.matches_dir("tests") && tests.matches_dir("pkg/tests"));
        assert!(tests.matches_file("pkg/tests/a.py") && !tests.matches_file("tests"));
        let anchored = g(&["/build"]);
        assert!(anchored.matches_dir("build") && !anchored.matches_dir("x/build"));
        let nm = g(&["node_modules"]);
        assert!(nm.matches_dir("web/node_modules") && nm.matches_file("web/node_modules/a.js"));
        assert!(Globs::new(&["[".into()], "include").is_err());
        assert!(Globs::new(&["".into()], "include").is_err());
        assert!(g(&[]).is_empty());
    }
}
