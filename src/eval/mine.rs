//! Tasks from a repository's own history (`vibeloop eval mine`): each commit on the first-parent
//! line (a merge commit counts as the change it merged) that changes tests and other files
//! together is a candidate. The task is its parent; the problem statement its message (never
//! the diff); the test changes its hidden `test_patch`, the rest its reference `patch`. A
//! candidate is kept only once verified in the sandbox ([`super::testbed`]): with the test
//! patch on the parent the tests it names fail or are missing, on the commit they pass
//! (FAIL_TO_PASS); those passing on both are PASS_TO_PASS. The others are listed with why.

use std::path::Path;
use std::time::Duration;

use git2::{Diff, DiffFormat, DiffOptions, Oid, Repository};

use super::task::Task;
use super::testbed::{Testbed, TestbedError};
use crate::pathset::PathSet;

/// A commit that changes tests and code, before verification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub commit: Oid,
    pub parent: Oid,
    pub message: String,
    pub test_patch: String,
    pub patch: String,
}

/// A candidate that was not kept, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    pub commit: Oid,
    pub summary: String,
    pub why: String,
}

/// The candidates on `HEAD`'s first-parent line, newest first, back to `since` (excluded), at
/// most `limit`. Test files are those of the repository's `policy.test_paths` (configured or
/// detected) at each commit.
pub fn candidates(
    git: &Repository,
    since: Option<Oid>,
    limit: usize,
) -> Result<(Vec<Candidate>, Vec<Rejected>), TestbedError> {
    let mut walk = git.revwalk()?;
    walk.push_head()?;
    walk.simplify_first_parent()?;
    let mut found = Vec::new();
    let mut skipped = Vec::new();
    for oid in walk {
        let oid = oid?;
        if Some(oid) == since || found.len() >= limit {
            break;
        }
        let commit = git.find_commit(oid)?;
        let Ok(parent) = commit.parent(0) else {
            continue;
        };
        let message = commit.message().unwrap_or_default().trim().to_owned();
        let summary = message.lines().next().unwrap_or_default().to_owned();
        let tests = test_paths(git, parent.id())?;
        let diff = git.diff_tree_to_tree(Some(&parent.tree()?), Some(&commit.tree()?), None)?;
        let (mut test_files, mut code_files) = (Vec::new(), Vec::new());
        for d in diff.deltas() {
            let path = d
                .new_file()
                .path()
                .or_else(|| d.old_file().path())
                .and_then(|p| p.to_str())
                .unwrap_or_default()
                .to_owned();
            if tests.contains(&path) {
                test_files.push(path);
            } else {
                code_files.push(path);
            }
        }
        let reject = |why: &str| Rejected {
            commit: oid,
            summary: summary.clone(),
            why: why.to_owned(),
        };
        if test_files.is_empty() {
            skipped.push(reject("changes no test"));
            continue;
        }
        if code_files.is_empty() {
            skipped.push(reject("changes only tests"));
            continue;
        }
        if message.trim().is_empty() {
            skipped.push(reject("has no message to state the problem"));
            continue;
        }
        found.push(Candidate {
            commit: oid,
            parent: parent.id(),
            message,
            test_patch: patch_of(git, parent.id(), oid, &test_files)?,
            patch: patch_of(git, parent.id(), oid, &code_files)?,
        });
    }
    Ok((found, skipped))
}

/// The repository's test paths at `commit`.
fn test_paths(git: &Repository, commit: Oid) -> Result<PathSet, TestbedError> {
    let files = crate::env::tree::Tree::of_commit(git, commit)?;
    let yaml = crate::config::repo::HiveConfig::default();
    let env = crate::env::resolve(yaml, &files);
    Ok(env.config.test_paths())
}

/// The unified diff of `paths` from `from` to `to`.
fn patch_of(git: &Repository, from: Oid, to: Oid, paths: &[String]) -> Result<String, git2::Error> {
    let mut opts = DiffOptions::new();
    for p in paths {
        opts.pathspec(p);
    }
    opts.disable_pathspec_match(true).show_binary(true);
    let old = git.find_commit(from)?.tree()?;
    let new = git.find_commit(to)?.tree()?;
    let diff: Diff<'_> = git.diff_tree_to_tree(Some(&old), Some(&new), Some(&mut opts))?;
    unified(&diff)
}

/// `diff` as a unified diff (`git diff`'s text), which `git apply` and git2 read back.
pub fn unified(diff: &Diff<'_>) -> Result<String, git2::Error> {
    let mut text = Vec::new();
    diff.print(DiffFormat::Patch, |_, _, line| {
        if matches!(line.origin(), '+' | '-' | ' ') {
            text.push(line.origin() as u8);
        }
        text.extend_from_slice(line.content());
        true
    })?;
    Ok(String::from_utf8_lossy(&text).into_owned())
}

/// Verifies `c` in the testbed: the task it makes, or why not.
pub async fn verify(
    bed: &Testbed,
    repo_path: &Path,
    repo_name: &str,
    c: &Candidate,
    timeout: Duration,
) -> Result<Task, String> {
    let before = bed
        .run(
            repo_path,
            c.parent,
            Some(&c.test_patch),
            c.parent,
            false,
            timeout,
        )
        .await
        .map_err(|e| format!("the tests could not run on the parent with the test patch: {e}"))?;
    let after = bed
        .run(repo_path, c.commit, None, c.parent, false, timeout)
        .await
        .map_err(|e| format!("the tests could not run on the commit: {e}"))?;
    if after.tests.is_empty() {
        return Err(format!(
            "no test outcome could be read from `{}` on the commit ({})",
            after.command,
            after.output.describe()
        ));
    }
    let fail_to_pass: Vec<String> = after
        .tests
        .keys()
        .filter(|n| after.passed(n) && !before.passed(n))
        .cloned()
        .collect();
    let pass_to_pass: Vec<String> = after
        .tests
        .keys()
        .filter(|n| after.passed(n) && before.passed(n))
        .cloned()
        .collect();
    if fail_to_pass.is_empty() {
        return Err("no test goes from failing to passing".into());
    }
    let short = &c.commit.to_string()[..12];
    Ok(Task {
        instance_id: format!("{}-{short}", repo_name.replace('/', "__")),
        repo: repo_name.to_owned(),
        base_commit: c.parent.to_string(),
        problem_statement: c.message.clone(),
        hints_text: String::new(),
        patch: c.patch.clone(),
        test_patch: c.test_patch.clone(),
        fail_to_pass,
        pass_to_pass,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(git: &Repository, files: &[(&str, &str)], message: &str) -> Oid {
        let root = git.workdir().unwrap().to_owned();
        let mut index = git.index().unwrap();
        for (path, text) in files {
            let p = root.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, text).unwrap();
            index.add_path(Path::new(path)).unwrap();
        }
        index.write().unwrap();
        let tree = git.find_tree(index.write_tree().unwrap()).unwrap();
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        let parents: Vec<git2::Commit> = git
            .head()
            .ok()
            .and_then(|h| h.peel_to_commit().ok())
            .into_iter()
            .collect();
        let parents: Vec<&git2::Commit> = parents.iter().collect();
        git.commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)
            .unwrap()
    }

    #[test]
    fn commits_changing_tests_and_code_together_are_candidates() {
        let dir = tempfile::tempdir().unwrap();
        let git = Repository::init(dir.path()).unwrap();
        let reqs = ("requirements.txt", "");
        commit(
            &git,
            &[reqs, ("calc.py", "def add(a, b):\n    return a - b\n")],
            "init",
        );
        let fix = commit(
            &git,
            &[
                ("calc.py", "def add(a, b):\n    return a + b\n"),
                (
                    "tests/test_calc.py",
                    "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n",
                ),
            ],
            "Fix add()\n\nIt subtracted.",
        );
        commit(&git, &[("README.md", "calc\n")], "Docs");
        commit(
            &git,
            &[("tests/test_more.py", "def test_x():\n    pass\n")],
            "More tests",
        );
        let (found, skipped) = candidates(&git, None, 10).unwrap();
        assert_eq!(found.len(), 1, "{skipped:?}");
        let c = &found[0];
        assert_eq!(c.commit, fix);
        assert_eq!(c.message, "Fix add()\n\nIt subtracted.");
        assert!(
            c.test_patch.contains("+++ b/tests/test_calc.py"),
            "{}",
            c.test_patch
        );
        assert!(!c.test_patch.contains("calc.py\n+def"), "{}", c.test_patch);
        assert!(c.patch.contains("+    return a + b"), "{}", c.patch);
        assert!(!c.patch.contains("test_add"), "{}", c.patch);
        let whys: Vec<&str> = skipped.iter().map(|r| r.why.as_str()).collect();
        assert_eq!(whys, ["changes only tests", "changes no test"]);
        // The test patch applies to the parent.
        let applied = super::super::testbed::patched(&git, c.parent, &c.test_patch, None);
        assert!(applied.is_ok(), "{applied:?}");
        // --limit and --since bound the walk.
        let (none, _) = candidates(&git, Some(fix), 10).unwrap();
        assert!(none.is_empty());
    }
}
