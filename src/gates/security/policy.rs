//! Policy: banned calls and banned imports in Python, found in this process on the changed
//! files as `head` has them in git (the commit's blobs, not a worktree the change's own code
//! ran in). [`python`] reads each file with tree-sitter the way Python's `ast` names things
//! (its docs say what it resolves); [`literal`] reads string literals as Python does.
//!
//! Flow: [`changed_python_files`] → [`check`] → [`PolicyRun`]'s findings.

mod literal;
mod names;
mod python;
mod tree;

use git2::{Delta, DiffOptions, ObjectType, Oid, Repository};

use crate::annotation::{Annotation, Level};

pub use super::finding::{PolicyFinding, TITLE};

/// What [`check`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyRun {
    pub findings: Vec<PolicyFinding>,
    /// Files that existed and were checked.
    pub files_checked: usize,
}

impl PolicyRun {
    pub fn annotations(&self) -> Vec<Annotation> {
        self.findings
            .iter()
            .map(PolicyFinding::annotation)
            .collect()
    }
}

/// Python files that `head` adds or changes relative to `base`.
#[derive(Debug, Clone, Default)]
pub struct PythonFiles {
    /// Paths to hand to [`check`].
    pub files: Vec<String>,
    /// Files that cannot be named to the script (a path that is not UTF-8): findings.
    pub unnamed: Vec<Annotation>,
}

/// The `.py` files `head` adds, changes, renames or turns into a file, relative to `base`
/// (commit or tree ids). Deleted files are left out.
pub fn changed_python_files(
    repo: &Repository,
    base: Oid,
    head: Oid,
) -> Result<PythonFiles, git2::Error> {
    let old = repo.find_object(base, None)?.peel_to_tree()?;
    let new = repo.find_object(head, None)?.peel_to_tree()?;
    let mut opts = DiffOptions::new();
    opts.ignore_submodules(true);
    let diff = repo.diff_tree_to_tree(Some(&old), Some(&new), Some(&mut opts))?;
    let mut out = PythonFiles::default();
    for delta in diff.deltas() {
        if matches!(delta.status(), Delta::Deleted | Delta::Unmodified) {
            continue;
        }
        let Some(path) = delta.new_file().path_bytes() else {
            continue;
        };
        if !path.ends_with(b".py") {
            continue;
        }
        match std::str::from_utf8(path) {
            Ok(p) => out.files.push(p.to_owned()),
            Err(_) => out.unnamed.push(
                Annotation::new(
                    String::from_utf8_lossy(path),
                    1,
                    Level::Failure,
                    "cannot check: the file name is not UTF-8; rename the file",
                )
                .with_title(TITLE),
            ),
        }
    }
    Ok(out)
}

/// The banned-calls check of `files` (from [`changed_python_files`]) as commit `head` has
/// them: links, submodules and paths that are not files in `head` are left out, not counted.
pub fn check(
    repo: &Repository,
    head: Oid,
    files: &[String],
    banned_calls: &[String],
    banned_imports: &[String],
) -> Result<PolicyRun, git2::Error> {
    let tree = repo.find_object(head, None)?.peel_to_tree()?;
    let mut run = PolicyRun {
        findings: vec![],
        files_checked: 0,
    };
    for f in files {
        let Ok(entry) = tree.get_path(std::path::Path::new(f)) else {
            continue;
        };
        if entry.kind() != Some(ObjectType::Blob) || entry.filemode() == 0o120000 {
            continue;
        }
        let blob = repo.find_blob(entry.id())?;
        run.findings.extend(python::check_source(
            f,
            blob.content(),
            banned_calls,
            banned_imports,
        ));
        run.files_checked += 1;
    }
    Ok(run)
}

#[cfg(test)]
mod tests;
