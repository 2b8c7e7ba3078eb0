//! The test lock: the Builder may not touch the Breaker's tests, and nobody but people may touch
//! read-only paths. Pure git2 on trees, no checkout.
//!
//! Two sets of paths are compared as maps path → (blob id, file mode), restricted to the paths
//! a [`PathSet`] matches; every kind of entry counts (files, executables, symlinks, submodules):
//!
//! * `policy.test_paths` in `head` against the Breaker's commit (`tests`) — precisely, against
//!   `base` with the Breaker's own changes applied, so tests that reached the base after the
//!   Breaker started (a rebase) are expected too — or against `base` when there is no Breaker
//!   commit;
//! * `policy.read_only_paths` in `head` against `base`.
//!
//! A path that differs in content or mode, that disappeared, or that appeared is a finding (a
//! Failure annotation on line 1 of the file). [`LockReport`] also carries, per set, the number of
//! locked files in `head` and a hash over them for the gate's summary.
//!
//! Trees are walked by hand rather than with `Tree::walk`, which gives up on a directory whose
//! name is not UTF-8; paths are compared as bytes and shown lossily.

use std::collections::BTreeMap;

use git2::{ObjectType, Oid, Repository, Tree};
use sha2::{Digest as _, Sha256};

use crate::annotation::{Annotation, Level};
use crate::pathset::PathSet;

/// Title of findings about `policy.test_paths`.
pub const TITLE_TESTS: &str = "test lock";
/// Title of findings about `policy.read_only_paths`.
pub const TITLE_READ_ONLY: &str = "read-only lock";

/// One locked set of files as it is in `head`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockedSet {
    /// Entries of `head` the set matches.
    pub files: usize,
    /// Hex SHA-256 over those entries sorted by path, each as `<mode octal> <oid>\t<path>\0`:
    /// equal hashes mean byte-identical files with identical modes.
    pub hash: String,
}

impl LockedSet {
    /// "12 files, hash ab12cd34ef56".
    pub fn describe(&self) -> String {
        let short = self.hash.get(..12).unwrap_or(&self.hash);
        let s = if self.files == 1 { "" } else { "s" };
        format!("{} file{s}, hash {short}", self.files)
    }
}

/// What the lock found.
#[derive(Debug, Clone)]
pub struct LockReport {
    /// One Failure annotation per changed, added or deleted locked path, sorted by path
    /// (test findings first).
    pub findings: Vec<Annotation>,
    /// `policy.test_paths` in `head`.
    pub tests: LockedSet,
    /// `policy.read_only_paths` in `head`.
    pub read_only: LockedSet,
}

impl LockReport {
    pub fn passed(&self) -> bool {
        self.findings.is_empty()
    }

    /// "test lock: 12 files, hash ab12cd34ef56; read-only: 3 files, hash 0f1e2d3c4b5a".
    pub fn summary(&self) -> String {
        format!(
            "test lock: {}; read-only: {}",
            self.tests.describe(),
            self.read_only.describe()
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    oid: Oid,
    mode: i32,
}

/// Path (bytes, `/`-separated) → entry.
type Entries = BTreeMap<Vec<u8>, Entry>;

/// Checks `head` against the Breaker's commit `tests` (or `base`) for `test_paths` and against
/// `base` for `read_only`. The ids may name commits or trees.
pub fn test_lock(
    repo: &Repository,
    base: Oid,
    head: Oid,
    tests: Option<Oid>,
    read_only: &PathSet,
    test_paths: &PathSet,
) -> Result<LockReport, git2::Error> {
    let head_tree = tree_of(repo, head)?;
    let base_tree = tree_of(repo, base)?;
    let (head_tests, head_ro) = entries(repo, &head_tree, test_paths, read_only)?;
    let (base_tests, base_ro) = entries(repo, &base_tree, test_paths, read_only)?;
    let test_reference = match tests {
        Some(t) => breaker_reference(repo, base, t, base_tests, test_paths, read_only)?,
        None => base_tests,
    };
    let base_reference = format!("the base commit {}", short(base));
    let tests_rule = Rule {
        reference: match tests {
            Some(t) => format!("the Breaker's commit {}", short(t)),
            None => base_reference.clone(),
        },
        why: match tests {
            Some(_) => "the Builder may not change the Breaker's tests",
            None => "files under policy.test_paths are locked in this step",
        },
        hint: " or move it outside policy.test_paths",
        title: TITLE_TESTS,
    };
    let read_only_rule = Rule {
        reference: base_reference,
        why: "only people may change policy.read_only_paths",
        hint: "",
        title: TITLE_READ_ONLY,
    };
    let mut findings = Vec::new();
    compare(&test_reference, &head_tests, &tests_rule, &mut findings);
    compare(&base_ro, &head_ro, &read_only_rule, &mut findings);
    Ok(LockReport {
        findings,
        tests: locked_set(&head_tests),
        read_only: locked_set(&head_ro),
    })
}

/// What the tests must be: the base's tests with the Breaker's own changes applied. The Breaker
/// started from the merge base of its commit and `base`; when `base` moved on since (a rebase
/// onto a main that gained tests), the tests it gained are expected too. Without a merge base
/// (ids naming trees), the Breaker's tree is the reference.
fn breaker_reference(
    repo: &Repository,
    base: Oid,
    tests: Oid,
    base_tests: Entries,
    test_paths: &PathSet,
    read_only: &PathSet,
) -> Result<Entries, git2::Error> {
    let breaker = entries(repo, &tree_of(repo, tests)?, test_paths, read_only)?.0;
    let Ok(from) = repo.merge_base(tests, base) else {
        return Ok(breaker);
    };
    let started = entries(repo, &tree_of(repo, from)?, test_paths, read_only)?.0;
    let mut expected = base_tests;
    for path in started.keys().chain(breaker.keys()) {
        if started.get(path) == breaker.get(path) {
            continue;
        }
        match breaker.get(path) {
            Some(e) => expected.insert(path.clone(), *e),
            None => expected.remove(path),
        };
    }
    Ok(expected)
}

/// The tree of a commit, or the tree itself.
fn tree_of(repo: &Repository, id: Oid) -> Result<Tree<'_>, git2::Error> {
    repo.find_object(id, None)?.peel_to_tree()
}

fn short(id: Oid) -> String {
    id.to_string().chars().take(10).collect()
}

/// Every non-tree entry of `tree` in `a` and in `b`, walked without recursion so that deep
/// directories cannot exhaust the stack.
fn entries(
    repo: &Repository,
    tree: &Tree<'_>,
    a: &PathSet,
    b: &PathSet,
) -> Result<(Entries, Entries), git2::Error> {
    let (mut in_a, mut in_b) = (Entries::new(), Entries::new());
    let mut pending: Vec<(Vec<u8>, Tree<'_>)> = vec![(Vec::new(), tree.clone())];
    while let Some((prefix, tree)) = pending.pop() {
        for entry in tree.iter() {
            let mut path = prefix.clone();
            path.extend_from_slice(entry.name_bytes());
            if entry.kind() == Some(ObjectType::Tree) {
                path.push(b'/');
                pending.push((path, repo.find_tree(entry.id())?));
                continue;
            }
            let shown = String::from_utf8_lossy(&path);
            let e = Entry {
                oid: entry.id(),
                mode: entry.filemode(),
            };
            if a.contains(&shown) {
                in_a.insert(path.clone(), e);
            }
            if b.contains(&shown) {
                in_b.insert(path, e);
            }
        }
    }
    Ok((in_a, in_b))
}

fn locked_set(entries: &Entries) -> LockedSet {
    let mut hasher = Sha256::new();
    for (path, e) in entries {
        hasher.update(format!("{:o} {}\t", e.mode, e.oid).as_bytes());
        hasher.update(path);
        hasher.update([0]);
    }
    LockedSet {
        files: entries.len(),
        hash: hex::encode(hasher.finalize()),
    }
}

/// How findings of one set are worded.
struct Rule {
    /// "the Breaker's commit 0123abcd45".
    reference: String,
    why: &'static str,
    /// Added to "remove it" for a new file.
    hint: &'static str,
    title: &'static str,
}

fn compare(reference: &Entries, head: &Entries, rule: &Rule, out: &mut Vec<Annotation>) {
    let mut found: BTreeMap<&[u8], Option<(Entry, Option<&Entry>)>> = BTreeMap::new();
    for (path, r) in reference {
        match head.get(path) {
            Some(h) if h == r => {}
            h => {
                found.insert(path, Some((*r, h)));
            }
        }
    }
    for path in head.keys().filter(|p| !reference.contains_key(*p)) {
        found.insert(path, None);
    }
    let Rule {
        reference,
        why,
        hint,
        title,
    } = rule;
    for (path, difference) in found {
        let path = String::from_utf8_lossy(path).into_owned();
        let message = match difference {
            Some((r, Some(h))) => format!(
                "{path} differs from {reference} ({}): {why}; restore the file from that commit.",
                what_changed(r, *h)
            ),
            Some((_, None)) => format!(
                "{path} was deleted but is in {reference}: {why}; restore it from that commit."
            ),
            None => format!("{path} is new, not in {reference}: {why}; remove it{hint}."),
        };
        out.push(Annotation::new(path, 1, Level::Failure, message).with_title(*title));
    }
}

/// "content changed", "mode 100644 → 100755", or both.
fn what_changed(r: Entry, h: Entry) -> String {
    let mut what = Vec::new();
    if r.oid != h.oid {
        what.push("content changed".to_owned());
    }
    if r.mode != h.mode {
        what.push(format!("mode {:06o} → {:06o}", r.mode, h.mode));
    }
    what.join(", ")
}

#[cfg(test)]
mod tests;
