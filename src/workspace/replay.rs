//! The bot's commits the remote lacks, as GitHub's git database can make them again: for each,
//! oldest first, its parents, its message, the tree it starts from and what it changes there.
//! Where rules require signed commits, the bot sends these instead of pushing (GitHub signs
//! what the App commits through its API).

use git2::{Delta, FileMode, Oid, Repository, Sort};

use super::WorkspaceError;

/// At most this many commits are made again in one go (the bot writes one commit a step).
const MAX_COMMITS: usize = 100;

/// What one commit does to one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// A file (or a symbolic link's target) with these bytes.
    Blob(Vec<u8>),
    /// A submodule at this commit.
    Gitlink(Oid),
    Removed,
}

/// One path a commit changes, with the mode the API writes (`100644`, `100755`, `120000`,
/// `160000`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub path: String,
    pub mode: &'static str,
    pub content: Content,
}

/// A commit to make again.
#[derive(Debug, Clone)]
pub struct Replay {
    pub id: Oid,
    pub parents: Vec<Oid>,
    pub message: String,
    /// The tree it must come out as.
    pub tree: Oid,
    /// Its first parent's tree, which the changes apply to (`None` for a root commit).
    pub base_tree: Option<Oid>,
    pub changes: Vec<Change>,
}

fn mode_of(mode: FileMode) -> &'static str {
    match mode {
        FileMode::BlobExecutable => "100755",
        FileMode::Link => "120000",
        FileMode::Commit => "160000",
        _ => "100644",
    }
}

/// The commits reachable from `head` that no `refs/remotes/origin/*` reaches, oldest first.
pub fn to_replay(g: &Repository, head: Oid) -> Result<Vec<Replay>, WorkspaceError> {
    let mut walk = g.revwalk()?;
    walk.set_sorting(Sort::TOPOLOGICAL | Sort::REVERSE)?;
    walk.push(head)?;
    for r in g.references_glob("refs/remotes/origin/*")? {
        if let Some(at) = r?.target() {
            walk.hide(at)?;
        }
    }
    let ids: Vec<Oid> = walk.collect::<Result<_, _>>()?;
    if ids.len() > MAX_COMMITS {
        return Err(WorkspaceError::Git(git2::Error::from_str(&format!(
            "{head} is {} commits ahead of the remote; at most {MAX_COMMITS} are made again through the API",
            ids.len()
        ))));
    }
    ids.into_iter().map(|id| replay_of(g, id)).collect()
}

fn replay_of(g: &Repository, id: Oid) -> Result<Replay, WorkspaceError> {
    let commit = g.find_commit(id)?;
    let tree = commit.tree()?;
    let base = match commit.parents().next() {
        Some(p) => Some(p.tree()?),
        None => None,
    };
    let diff = g.diff_tree_to_tree(base.as_ref(), Some(&tree), None)?;
    let mut changes = Vec::new();
    for delta in diff.deltas() {
        let (old, new) = (delta.old_file(), delta.new_file());
        let path = |f: &git2::DiffFile<'_>| f.path().map(|p| p.to_string_lossy().into_owned());
        if matches!(delta.status(), Delta::Deleted | Delta::Renamed) {
            if let Some(p) = path(&old) {
                changes.push(Change {
                    path: p,
                    mode: mode_of(old.mode()),
                    content: Content::Removed,
                });
            }
            if delta.status() == Delta::Deleted {
                continue;
            }
        }
        let Some(p) = path(&new) else { continue };
        let content = match new.mode() {
            FileMode::Commit => Content::Gitlink(new.id()),
            _ => Content::Blob(g.find_blob(new.id())?.content().to_vec()),
        };
        changes.push(Change {
            path: p,
            mode: mode_of(new.mode()),
            content,
        });
    }
    Ok(Replay {
        id,
        parents: commit.parent_ids().collect(),
        message: commit.message().unwrap_or_default().to_owned(),
        tree: tree.id(),
        base_tree: base.map(|t| t.id()),
        changes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Commits the files `files` (path, bytes, mode) as the whole tree on top of HEAD.
    fn commit(git: &Repository, files: &[(&str, &[u8], FileMode)]) -> Oid {
        let mut index = git2::Index::new().unwrap();
        for (path, bytes, mode) in files {
            let entry = git2::IndexEntry {
                ctime: git2::IndexTime::new(0, 0),
                mtime: git2::IndexTime::new(0, 0),
                dev: 0,
                ino: 0,
                mode: u32::from(*mode),
                uid: 0,
                gid: 0,
                file_size: 0,
                id: git.blob(bytes).unwrap(),
                flags: 0,
                flags_extended: 0,
                path: path.as_bytes().to_vec(),
            };
            index.add(&entry).unwrap();
        }
        let tree = git.find_tree(index.write_tree_to(git).unwrap()).unwrap();
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        let parent = git.head().ok().and_then(|h| h.peel_to_commit().ok());
        let parents: Vec<&git2::Commit> = parent.iter().collect();
        git.commit(Some("HEAD"), &sig, &sig, "m", &tree, &parents)
            .unwrap()
    }

    #[test]
    fn a_commit_is_replayed_as_the_changes_to_its_parents_tree() {
        let dir = tempfile::tempdir().unwrap();
        let git = Repository::init_bare(dir.path()).unwrap();
        let base = commit(
            &git,
            &[
                ("old.txt", b"moved", FileMode::Blob),
                ("gone.txt", b"x", FileMode::Blob),
                ("run.sh", b"echo", FileMode::Blob),
            ],
        );
        git.reference("refs/remotes/origin/main", base, true, "pushed")
            .unwrap();
        let head = commit(
            &git,
            &[
                ("dir/new.txt", b"moved", FileMode::Blob),
                ("run.sh", b"echo", FileMode::BlobExecutable),
                ("link", b"run.sh", FileMode::Link),
            ],
        );
        let plan = to_replay(&git, head).unwrap();
        assert_eq!(plan.len(), 1, "only what the remote lacks");
        let r = &plan[0];
        assert_eq!((r.id, r.parents.clone()), (head, vec![base]));
        assert_eq!(r.base_tree, Some(git.find_commit(base).unwrap().tree_id()));
        let mut changes: Vec<(String, &str, Content)> = r
            .changes
            .iter()
            .map(|c| (c.path.clone(), c.mode, c.content.clone()))
            .collect();
        changes.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            changes,
            [
                (
                    "dir/new.txt".into(),
                    "100644",
                    Content::Blob(b"moved".to_vec())
                ),
                ("gone.txt".into(), "100644", Content::Removed),
                ("link".into(), "120000", Content::Blob(b"run.sh".to_vec())),
                ("old.txt".into(), "100644", Content::Removed),
                ("run.sh".into(), "100755", Content::Blob(b"echo".to_vec())),
            ]
        );
    }
}
