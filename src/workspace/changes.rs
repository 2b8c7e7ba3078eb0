//! Changes between commits: which paths differ, copying paths from one commit into a
//! worktree, merging another commit into a branch, and replaying a whole change onto a newer
//! base as one commit (the hive's "rebase"), reporting conflicts with both sides' contents; and
//! the commits in a change that someone other than the bot wrote.

use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;

use git2::{Repository, Signature};

use super::{Author, Workspace, WorkspaceError, Worktree};
use crate::ids::CommitSha;

/// What merging another commit into a worktree's branch did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Merged {
    /// The branch now points at this commit (a merge, or unchanged when already contained).
    Clean(CommitSha),
    /// These files conflict; nothing was changed.
    Conflicts(Vec<String>),
}

/// A commit in a change that someone other than the bot wrote (a person's push to its branch).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PersonCommit {
    pub sha: CommitSha,
    pub name: String,
    pub email: String,
    /// The first line of its message.
    pub summary: String,
}

impl Workspace {
    /// The lines of `path` that `to` adds or changes relative to `from`, as inclusive ranges
    /// on `to`'s side (empty when the file is the same, or gone).
    pub fn changed_lines(
        &self,
        git: &Repository,
        from: git2::Oid,
        to: git2::Oid,
        path: &str,
    ) -> Result<Vec<(u32, u32)>, WorkspaceError> {
        let old = git.find_commit(from)?.tree()?;
        let new = git.find_commit(to)?.tree()?;
        let mut opts = git2::DiffOptions::new();
        opts.pathspec(path)
            .disable_pathspec_match(true)
            .context_lines(0);
        let diff = git.diff_tree_to_tree(Some(&old), Some(&new), Some(&mut opts))?;
        let mut ranges = Vec::new();
        diff.foreach(
            &mut |_, _| true,
            None,
            Some(&mut |_, h| {
                if h.new_lines() > 0 {
                    ranges.push((h.new_start(), h.new_start() + h.new_lines() - 1));
                }
                true
            }),
            None,
        )?;
        Ok(ranges)
    }

    /// The commits in `from..head` whose author is not `bot` (by e-mail), oldest first.
    pub fn people_commits(
        &self,
        git: &Repository,
        from: git2::Oid,
        head: git2::Oid,
        bots: &[String],
    ) -> Result<Vec<PersonCommit>, WorkspaceError> {
        let mut walk = git.revwalk()?;
        walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::REVERSE)?;
        walk.push(head)?;
        walk.hide(from)?;
        let mut out = Vec::new();
        for oid in walk {
            let c = git.find_commit(oid?)?;
            let author = c.author();
            let email = author.email().unwrap_or_default();
            if bots.iter().any(|b| email.eq_ignore_ascii_case(b)) {
                continue;
            }
            out.push(PersonCommit {
                sha: c.id().into(),
                name: author.name().unwrap_or_default().to_owned(),
                email: email.to_owned(),
                summary: c.summary().unwrap_or_default().to_owned(),
            });
        }
        Ok(out)
    }

    /// Files that differ between two commits (added, changed, deleted, renamed).
    pub fn changed_paths(
        &self,
        git: &Repository,
        from: git2::Oid,
        to: git2::Oid,
    ) -> Result<Vec<String>, WorkspaceError> {
        let old = git.find_commit(from)?.tree()?;
        let new = git.find_commit(to)?.tree()?;
        let diff = git.diff_tree_to_tree(Some(&old), Some(&new), None)?;
        let mut out = Vec::new();
        for d in diff.deltas() {
            for f in [d.old_file(), d.new_file()] {
                if let Some(p) = f.path().and_then(|p| p.to_str())
                    && !out.iter().any(|o: &String| o == p)
                {
                    out.push(p.to_owned());
                }
            }
        }
        Ok(out)
    }

    /// Writes `paths` as they are in `commit` into the worktree (deleting those absent there).
    /// Nothing is written through a link: a directory on the way that is a symbolic link, or a
    /// committed link that leads out of the repository, is [`WorkspaceError::Tampered`].
    pub fn copy_paths(
        &self,
        git: &Repository,
        commit: git2::Oid,
        paths: &[String],
        wt: &Worktree,
    ) -> Result<(), WorkspaceError> {
        let tree = git.find_commit(commit)?.tree()?;
        for p in paths {
            let target = safe_parent(&wt.path, p)?;
            if std::fs::symlink_metadata(&target).is_ok_and(|m| !m.is_dir()) {
                std::fs::remove_file(&target)?;
            }
            let Ok(entry) = tree.get_path(Path::new(p)) else {
                continue;
            };
            let blob = entry.to_object(git)?.peel_to_blob()?;
            if entry.filemode() == 0o120000 {
                let to = String::from_utf8_lossy(blob.content()).into_owned();
                if super::link_leaves(p, &to) {
                    return Err(WorkspaceError::Tampered(format!(
                        "{p} is a symbolic link to {to}, out of the repository: not copied"
                    )));
                }
                std::os::unix::fs::symlink(&to, &target)?;
                continue;
            }
            let mode = if entry.filemode() == 0o100755 {
                0o755
            } else {
                0o644
            };
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(mode)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&target)?;
            std::io::Write::write_all(&mut file, blob.content())?;
        }
        Ok(())
    }

    /// Merges commit `other` into the worktree's branch, committing the merge when clean.
    pub fn merge_into(
        &self,
        wt: &Worktree,
        other: git2::Oid,
        message: &str,
        author: &Author,
    ) -> Result<Merged, WorkspaceError> {
        let git = wt.open()?;
        let head = git.head()?.peel_to_commit()?;
        let theirs = git.find_commit(other)?;
        if git.graph_descendant_of(head.id(), other)? || head.id() == other {
            return Ok(Merged::Clean(head.id().into()));
        }
        let mut index = git.merge_commits(&head, &theirs, None)?;
        if index.has_conflicts() {
            let mut paths: Vec<String> = index
                .conflicts()?
                .flatten()
                .filter_map(|c| c.our.or(c.their).or(c.ancestor))
                .map(|e| String::from_utf8_lossy(&e.path).into_owned())
                .collect();
            paths.dedup();
            return Ok(Merged::Conflicts(paths));
        }
        let tree = git.find_tree(index.write_tree_to(&git)?)?;
        let sig = Signature::now(&author.name, &author.email)?;
        let message = author.message(message);
        let oid = git.commit(Some("HEAD"), &sig, &sig, &message, &tree, &[&head, &theirs])?;
        git.checkout_tree(
            tree.as_object(),
            Some(git2::build::CheckoutBuilder::new().force()),
        )?;
        let mut idx = git.index()?;
        idx.read_tree(&tree)?;
        idx.write()?;
        Ok(Merged::Clean(oid.into()))
    }

    /// The tree id of a commit (two commits with one tree made the same change).
    pub fn tree_of(&self, git: &Repository, commit: git2::Oid) -> Result<String, WorkspaceError> {
        Ok(git.find_commit(commit)?.tree_id().to_string())
    }
}

/// A file both sides changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    pub path: String,
    /// The version both sides started from (`None`: added on both sides).
    pub ancestor: Option<Vec<u8>>,
    /// The base branch's version (`None`: deleted there).
    pub ours: Option<Vec<u8>>,
    /// The change's version.
    pub theirs: Option<Vec<u8>>,
}

/// What replaying a change onto a newer base did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Squashed {
    /// The change as one commit on top of the new base.
    Clean(CommitSha),
    Conflicts(Vec<Conflict>),
}

impl Workspace {
    /// A unified diff `from..to`, cut at `cap` bytes with a note.
    pub fn diff_text(
        &self,
        git: &Repository,
        from: git2::Oid,
        to: git2::Oid,
        cap: usize,
    ) -> Result<String, WorkspaceError> {
        let old = git.find_commit(from)?.tree()?;
        let new = git.find_commit(to)?.tree()?;
        let diff = git.diff_tree_to_tree(Some(&old), Some(&new), None)?;
        let mut out = Vec::new();
        let mut cut = false;
        diff.print(git2::DiffFormat::Patch, |_, _, line| {
            if out.len() > cap {
                cut = true;
                return true;
            }
            if matches!(line.origin(), '+' | '-' | ' ') {
                out.push(line.origin() as u8);
            }
            out.extend_from_slice(line.content());
            true
        })?;
        let mut text = String::from_utf8_lossy(&out).into_owned();
        if cut {
            text.push_str("\n… (diff cut; read the files for the rest)\n");
        }
        Ok(text)
    }

    /// Replays the change `from..head` onto `onto` as one commit with `message` (a three-way
    /// merge of the trees). The commit is made on no branch; the caller moves one to it.
    pub fn squash_onto(
        &self,
        git: &Repository,
        from: git2::Oid,
        head: git2::Oid,
        onto: git2::Oid,
        message: &str,
        author: &Author,
    ) -> Result<Squashed, WorkspaceError> {
        let ancestor = git.find_commit(from)?.tree()?;
        let theirs = git.find_commit(head)?.tree()?;
        let base = git.find_commit(onto)?;
        let index = git.merge_trees(&ancestor, &base.tree()?, &theirs, None)?;
        if index.has_conflicts() {
            let blob = |e: Option<git2::IndexEntry>| -> Option<Vec<u8>> {
                e.and_then(|e| git.find_blob(e.id).ok())
                    .map(|b| b.content().to_vec())
            };
            let mut conflicts = Vec::new();
            for c in index.conflicts()?.flatten() {
                let path = c
                    .our
                    .as_ref()
                    .or(c.their.as_ref())
                    .or(c.ancestor.as_ref())
                    .map(|e| String::from_utf8_lossy(&e.path).into_owned())
                    .unwrap_or_default();
                conflicts.push(Conflict {
                    path,
                    ancestor: blob(c.ancestor),
                    ours: blob(c.our),
                    theirs: blob(c.their),
                });
            }
            return Ok(Squashed::Conflicts(conflicts));
        }
        let mut index = index;
        let tree = git.find_tree(index.write_tree_to(git)?)?;
        let sig = Signature::now(&author.name, &author.email)?;
        let oid = git.commit(None, &sig, &sig, &author.message(message), &tree, &[&base])?;
        Ok(Squashed::Clean(oid.into()))
    }

    /// Replays `from..head` onto `onto` taking the change's side of every conflict, as one
    /// commit (strategy A's starting point, before the formatter runs).
    pub fn squash_taking_theirs(
        &self,
        git: &Repository,
        from: git2::Oid,
        head: git2::Oid,
        onto: git2::Oid,
        message: &str,
        author: &Author,
    ) -> Result<CommitSha, WorkspaceError> {
        let ancestor = git.find_commit(from)?.tree()?;
        let theirs = git.find_commit(head)?.tree()?;
        let base = git.find_commit(onto)?;
        let mut opts = git2::MergeOptions::new();
        opts.file_favor(git2::FileFavor::Theirs);
        let mut index = git.merge_trees(&ancestor, &base.tree()?, &theirs, Some(&opts))?;
        let tree = git.find_tree(index.write_tree_to(git)?)?;
        let sig = Signature::now(&author.name, &author.email)?;
        Ok(git
            .commit(None, &sig, &sig, &author.message(message), &tree, &[&base])?
            .into())
    }

    /// Points local branch `branch` at `commit` (the bot owns its branches).
    pub fn set_branch(
        &self,
        git: &Repository,
        branch: &str,
        commit: git2::Oid,
    ) -> Result<(), WorkspaceError> {
        git.branch(branch, &git.find_commit(commit)?, true)?;
        Ok(())
    }

    /// Tags of the mirror, as `(name, commit)`.
    pub fn tags(&self, git: &Repository) -> Result<Vec<(String, String)>, WorkspaceError> {
        let mut out = Vec::new();
        for name in git.tag_names(None)?.iter().flatten() {
            if let Ok(r) = git.find_reference(&format!("refs/tags/{name}"))
                && let Ok(c) = r.peel_to_commit()
            {
                out.push((name.to_owned(), c.id().to_string()));
            }
        }
        Ok(out)
    }
}

/// `root/rel` with its directories made, none of them a symbolic link (one already there is
/// [`WorkspaceError::Tampered`]); `rel` must be a plain relative path.
fn safe_parent(root: &Path, rel: &str) -> Result<std::path::PathBuf, WorkspaceError> {
    let refuse = |why: &str| WorkspaceError::Tampered(format!("{rel}: {why}; not written"));
    let parts: Vec<_> = Path::new(rel).components().collect();
    if parts.is_empty()
        || !parts
            .iter()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
    {
        return Err(refuse("not a plain path inside the repository"));
    }
    let mut at = root.to_path_buf();
    for part in &parts[..parts.len() - 1] {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(refuse("a directory on its way is a symbolic link"));
            }
            Ok(m) if m.is_dir() => {}
            Ok(_) => std::fs::remove_file(&at).and_then(|()| std::fs::create_dir(&at))?,
            Err(_) => std::fs::create_dir(&at)?,
        }
    }
    at.push(parts[parts.len() - 1]);
    Ok(at)
}
