//! The built-in security gate: deterministic checks of a change before it may merge, each
//! finding a Failure [`Annotation`] on a file and line.
//!
//! * [`lock`]: the Breaker's tests (`policy.test_paths`) and `policy.read_only_paths` are
//!   byte-identical in `head` to their reference commits (pure git2, no checkout);
//! * [`secrets`]: no credential-shaped string in the lines `base..head` adds (pure git2);
//! * [`banned`]: no banned import or call (`policy.rust`, `policy.javascript`, `policy.go`) in
//!   the changed Rust, JavaScript/TypeScript and Go files, found with tree-sitter parsers on
//!   `head`'s blobs (pure git2 and parsing, in this process);
//! * [`policy`]: no banned import or call in the changed Python files, found with tree-sitter
//!   on `head`'s blobs, names read as Python's `ast` reads them (in this process).
//!
//! [`check_tree`] runs the lock and the secret scan together; [`banned::check`] and
//! [`policy::changed_python_files`] then [`policy::check`] are called beside it.
//!
//! `base` is the commit the change starts from (the merge base with the base branch), not
//! the moving tip of the base branch. Every function here blocks; async callers use
//! `tokio::task::spawn_blocking`.

pub mod banned;
pub mod finding;
pub mod lock;
pub mod policy;
pub mod secrets;

#[cfg(test)]
pub(crate) mod testing;

use git2::{Oid, Repository};

use crate::annotation::Annotation;
use crate::config::repo::HiveConfig;

pub use lock::{LockReport, LockedSet, test_lock};

/// The outcome of the git2 checks.
#[derive(Debug, Clone)]
pub struct TreeCheck {
    pub lock: LockReport,
    /// Findings of [`secrets::scan_diff`].
    pub secrets: Vec<Annotation>,
}

impl TreeCheck {
    pub fn passed(&self) -> bool {
        self.lock.passed() && self.secrets.is_empty()
    }

    /// Every finding: the lock's, then the secrets'.
    pub fn annotations(&self) -> Vec<Annotation> {
        let mut all = self.lock.findings.clone();
        all.extend(self.secrets.iter().cloned());
        all
    }

    /// "test lock: 12 files, hash ab12cd34ef56; read-only: 3 files, hash …; secrets: none".
    pub fn summary(&self) -> String {
        let secrets = match self.secrets.len() {
            0 => "none".to_owned(),
            1 => "1 finding".to_owned(),
            n => format!("{n} findings"),
        };
        format!("{}; secrets: {secrets}", self.lock.summary())
    }
}

/// The test lock (with the Breaker's commit `tests`, when there is one) and the secret scan of
/// `base..head`, with the paths of `config.policy`.
pub fn check_tree(
    repo: &Repository,
    base: Oid,
    head: Oid,
    tests: Option<Oid>,
    config: &HiveConfig,
) -> Result<TreeCheck, git2::Error> {
    let lock = test_lock(
        repo,
        base,
        head,
        tests,
        &config.read_only(),
        &config.test_paths(),
    )?;
    let secrets = secrets::scan_diff(repo, base, head)?;
    Ok(TreeCheck { lock, secrets })
}

#[cfg(test)]
mod tests {
    use super::testing::{Change, TestRepo};
    use super::*;

    #[test]
    fn check_tree_combines_lock_and_secrets() {
        let t = TestRepo::new();
        let base = t.commit(None, &[("calc.py", Change::Write(b"x = 1\n"))]);
        let test = b"def test_x():\n    assert True\n";
        let breaker = t.commit(Some(base), &[("tests/test_x.py", Change::Write(test))]);
        let config = HiveConfig::default();

        let clean = t.commit(Some(breaker), &[("calc.py", Change::Write(b"x = 2\n"))]);
        let r = check_tree(&t.repo, base, clean, Some(breaker), &config).unwrap();
        assert!(r.passed(), "{:?}", r.annotations());
        assert!(
            r.summary().starts_with("test lock: 1 file, hash "),
            "{}",
            r.summary()
        );
        assert!(r.summary().ends_with("; secrets: none"), "{}", r.summary());

        let token = format!("ghp_{}", "x".repeat(36));
        let line = format!("TOKEN = '{token}'\n");
        let dirty = t.commit(
            Some(breaker),
            &[
                ("calc.py", Change::Write(line.as_bytes())),
                ("tests/test_x.py", Change::Write(b"")),
            ],
        );
        let r = check_tree(&t.repo, base, dirty, Some(breaker), &config).unwrap();
        let titles: Vec<_> = r
            .annotations()
            .iter()
            .map(|a| (a.path.clone(), a.title.clone().unwrap_or_default()))
            .collect();
        assert_eq!(
            titles,
            [
                ("tests/test_x.py".to_owned(), lock::TITLE_TESTS.to_owned()),
                ("calc.py".to_owned(), secrets::TITLE.to_owned()),
            ]
        );
        assert!(
            r.summary().ends_with("; secrets: 1 finding"),
            "{}",
            r.summary()
        );
    }
}
