//! Test support: real git repositories in temporary directories, built commit by commit with
//! git2 (no working tree, no `git` binary).

use git2::build::TreeUpdateBuilder;
use git2::{FileMode, Oid, Repository, Signature};

/// One change to a path in a commit.
pub enum Change<'a> {
    /// A regular file with this content.
    Write(&'a [u8]),
    /// An executable file with this content.
    Exec(&'a [u8]),
    /// A symbolic link to this target.
    Link(&'a str),
    /// A submodule at this commit.
    Submodule(Oid),
    /// The path disappears.
    Delete,
}

/// A bare repository that lives as long as the value.
pub struct TestRepo {
    _dir: tempfile::TempDir,
    pub repo: Repository,
}

impl TestRepo {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = Repository::init_bare(dir.path()).expect("init");
        Self { _dir: dir, repo }
    }

    /// A commit on top of `parent` (or a root commit) with `changes` applied to its tree.
    pub fn commit(&self, parent: Option<Oid>, changes: &[(&str, Change<'_>)]) -> Oid {
        let raw: Vec<_> = changes.iter().map(|(p, c)| (p.as_bytes(), c)).collect();
        self.commit_raw(parent, &raw)
    }

    /// [`Self::commit`] with paths as bytes (not necessarily UTF-8).
    pub fn commit_raw(&self, parent: Option<Oid>, changes: &[(&[u8], &Change<'_>)]) -> Oid {
        let repo = &self.repo;
        let baseline = match parent {
            Some(p) => repo.find_commit(p).unwrap().tree().unwrap(),
            None => {
                let empty = repo.treebuilder(None).unwrap().write().unwrap();
                repo.find_tree(empty).unwrap()
            }
        };
        let mut update = TreeUpdateBuilder::new();
        for (path, change) in changes {
            match change {
                Change::Write(c) => {
                    update.upsert(path.to_vec(), repo.blob(c).unwrap(), FileMode::Blob)
                }
                Change::Exec(c) => update.upsert(
                    path.to_vec(),
                    repo.blob(c).unwrap(),
                    FileMode::BlobExecutable,
                ),
                Change::Link(t) => update.upsert(
                    path.to_vec(),
                    repo.blob(t.as_bytes()).unwrap(),
                    FileMode::Link,
                ),
                Change::Submodule(id) => update.upsert(path.to_vec(), *id, FileMode::Commit),
                Change::Delete => update.remove(path.to_vec()),
            };
        }
        let tree = repo
            .find_tree(update.create_updated(repo, &baseline).unwrap())
            .unwrap();
        let sig = Signature::now("test", "test@example.com").unwrap();
        let parents: Vec<_> = parent
            .map(|p| repo.find_commit(p).unwrap())
            .into_iter()
            .collect();
        let parents: Vec<_> = parents.iter().collect();
        repo.commit(None, &sig, &sig, "test", &tree, &parents)
            .unwrap()
    }
}
