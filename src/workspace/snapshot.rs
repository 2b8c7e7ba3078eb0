//! A commit's files for reading only (what `/hive ask`'s agent explores): the blobs of the
//! commit's tree written straight from the mirror's object database into a fresh directory under
//! `<data>/snapshots`, read-only, removed when the snapshot is dropped. No worktree, branch or
//! index is made and nothing in the mirror changes. Symbolic links and submodules are left out
//! (a link could lead a reader out of the snapshot), as are blobs over [`MAX_BLOB`]. The line
//! count of every text file is kept, straight from the tree, for checking what an answer cites.

use std::collections::HashMap;
use std::path::Path;

use git2::{ObjectType, Repository, TreeWalkMode, TreeWalkResult};
use secrecy::SecretString;

use super::{Workspace, WorkspaceError};
use crate::ids::{CommitSha, RepoName};

/// Larger files are not written (a reader's tools would not show them whole anyway).
pub const MAX_BLOB: usize = 4 * 1024 * 1024;

/// A commit's files on disk, read-only; the directory goes when this is dropped.
#[derive(Debug)]
pub struct Snapshot {
    dir: tempfile::TempDir,
    pub commit: CommitSha,
    /// Text files (no NUL byte) and their number of lines.
    lines: HashMap<String, usize>,
    /// Files left out: links, submodules, blobs too large.
    pub skipped: usize,
}

impl Snapshot {
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The number of lines of text file `path` at the commit, `None` when there is no such
    /// text file.
    pub fn lines(&self, path: &str) -> Option<usize> {
        self.lines.get(path).copied()
    }

    /// How many files were written.
    pub fn files(&self) -> usize {
        self.lines.len()
    }
}

impl Workspace {
    /// Makes sure the mirror `git` of `repo` holds pull request `number`'s head `head` (a fork's
    /// is not among the repository's branches): fetched from `refs/pull/<n>/head` if missing.
    pub fn fetch_pull_head(
        &self,
        repo: &RepoName,
        git: &Repository,
        token: &SecretString,
        number: u64,
        head: &CommitSha,
    ) -> Result<(), WorkspaceError> {
        if git.find_commit(head.oid()).is_ok() {
            return Ok(());
        }
        self.mirror_lock(repo).hold(|| {
            let mut remote = git.find_remote("origin")?;
            let mut opts = super::fetch_options(token);
            let spec = format!("+refs/pull/{number}/head:refs/remotes/pull/{number}");
            remote.fetch(&[spec.as_str()], Some(&mut opts), None)?;
            git.find_commit(head.oid())?;
            Ok(())
        })
    }

    /// The web address of lines `first`–`last` of `path` at `commit` (GitHub's blob view).
    pub fn lines_url(
        &self,
        repo: &RepoName,
        commit: &CommitSha,
        path: &str,
        first: usize,
        last: usize,
    ) -> String {
        let lines = if first == last {
            format!("L{first}")
        } else {
            format!("L{first}-L{last}")
        };
        format!(
            "{}/{}/{}/blob/{commit}/{path}#{lines}",
            self.git_url.as_str().trim_end_matches('/'),
            repo.owner(),
            repo.name()
        )
    }

    /// The files of `commit` (which the mirror `git` holds) in a new read-only snapshot.
    pub fn snapshot(
        &self,
        git: &Repository,
        commit: &CommitSha,
    ) -> Result<Snapshot, WorkspaceError> {
        let parent = self.root.join("snapshots");
        std::fs::create_dir_all(&parent)?;
        let dir = tempfile::Builder::new()
            .prefix(&format!("{}-", commit.short()))
            .tempdir_in(&parent)?;
        let tree = git.find_commit(commit.oid())?.tree()?;
        let mut lines = HashMap::new();
        let mut skipped = 0;
        let mut failed: Option<WorkspaceError> = None;
        tree.walk(TreeWalkMode::PreOrder, |prefix, entry| {
            let rel = format!("{prefix}{}", entry.name().unwrap_or(""));
            let regular = matches!(entry.filemode(), 0o100644 | 0o100755);
            match entry.kind() {
                Some(ObjectType::Tree) => TreeWalkResult::Ok,
                Some(ObjectType::Blob) if regular && entry.name().is_some() => {
                    match write_blob(git, entry.id(), &dir.path().join(&rel)) {
                        Ok(Some(n)) => {
                            lines.insert(rel, n);
                        }
                        Ok(None) => skipped += 1,
                        Err(e) => {
                            failed = Some(e);
                            return TreeWalkResult::Abort;
                        }
                    }
                    TreeWalkResult::Ok
                }
                _ => {
                    skipped += 1;
                    TreeWalkResult::Skip
                }
            }
        })?;
        if let Some(e) = failed {
            return Err(e);
        }
        Ok(Snapshot {
            dir,
            commit: commit.clone(),
            lines,
            skipped,
        })
    }
}

/// Writes one blob read-only at `to`: its line count (0 for a binary file), or `None` when it
/// was too large to write.
fn write_blob(git: &Repository, id: git2::Oid, to: &Path) -> Result<Option<usize>, WorkspaceError> {
    let blob = git.find_blob(id)?;
    let content = blob.content();
    if content.len() > MAX_BLOB {
        return Ok(None);
    }
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(to, content)?;
    let mut perms = std::fs::metadata(to)?.permissions();
    perms.set_readonly(true);
    std::fs::set_permissions(to, perms)?;
    let text = !content.contains(&0);
    Ok(Some(if text { count_lines(content) } else { 0 }))
}

/// Lines as an editor numbers them: a last line without `\n` counts.
fn count_lines(content: &[u8]) -> usize {
    let newlines = content.iter().filter(|&&b| b == b'\n').count();
    newlines + usize::from(!content.is_empty() && !content.ends_with(b"\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commits_files_are_written_read_only_without_links() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = Repository::init_bare(tmp.path().join("m.git")).unwrap();
        let blob = |b: &[u8]| repo.blob(b).unwrap();
        let mut sub = repo.treebuilder(None).unwrap();
        sub.insert("b.py", blob(b"x = 1\ny = 2"), 0o100644).unwrap();
        let sub = sub.write().unwrap();
        let mut top = repo.treebuilder(None).unwrap();
        top.insert("a.txt", blob(b"one\ntwo\n"), 0o100644).unwrap();
        top.insert("pkg", sub, 0o040000).unwrap();
        top.insert("env", blob(b"/proc/self/environ"), 0o120000)
            .unwrap();
        let tree = repo.find_tree(top.write().unwrap()).unwrap();
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        let id = repo.commit(None, &sig, &sig, "c", &tree, &[]).unwrap();
        let ws = Workspace::new(tmp.path(), &url::Url::parse("http://127.0.0.1/").unwrap());
        let snap = ws.snapshot(&repo, &id.into()).unwrap();
        assert_eq!(snap.lines("a.txt"), Some(2));
        assert_eq!(snap.lines("pkg/b.py"), Some(2));
        assert_eq!(snap.lines("env"), None);
        assert_eq!((snap.files(), snap.skipped), (2, 1));
        let a = snap.path().join("a.txt");
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "one\ntwo\n");
        assert!(std::fs::metadata(&a).unwrap().permissions().readonly());
        assert!(std::fs::symlink_metadata(snap.path().join("env")).is_err());
        let repo_name = RepoName::parse("acme/calc").unwrap();
        assert_eq!(
            ws.lines_url(&repo_name, &snap.commit, "pkg/b.py", 1, 2),
            format!(
                "http://127.0.0.1/acme/calc/blob/{}/pkg/b.py#L1-L2",
                snap.commit
            )
        );
        let dir = snap.path().to_owned();
        drop(snap);
        assert!(!dir.exists(), "the snapshot is removed when dropped");
    }
}
