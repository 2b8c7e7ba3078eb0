//! The files of a commit, as the detector reads them ([`super::detect::Files`]): every path, and
//! the text of the small files at the root and under `.devcontainer/` (all detection looks at,
//! and a devcontainer's build context) and of the instructions for coding agents
//! ([`super::instructions`]).

use std::collections::BTreeMap;

use super::detect::Files;

/// At most this many paths are listed (a larger repository is still detected from its root).
const MAX_PATHS: usize = 200_000;
/// Larger files are not read.
const MAX_FILE_BYTES: usize = 1 << 20;

/// A commit's files.
#[derive(Debug, Clone, Default)]
pub struct Tree {
    paths: Vec<String>,
    texts: BTreeMap<String, String>,
}

impl Tree {
    /// The files of `commit` in `repo`.
    pub fn of_commit(repo: &git2::Repository, commit: git2::Oid) -> Result<Self, git2::Error> {
        let tree = repo.find_commit(commit)?.tree()?;
        let mut out = Tree::default();
        let mut blobs = Vec::new();
        let mut instructions = 0;
        tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
            if out.paths.len() >= MAX_PATHS {
                return git2::TreeWalkResult::Abort;
            }
            if entry.kind() == Some(git2::ObjectType::Blob) {
                let path = format!("{dir}{}", entry.name().unwrap_or_default());
                // The root's files, and the devcontainer's directory (its build context).
                let devcontainer = path
                    .strip_prefix(super::devcontainer::CONTEXT_ROOT)
                    .is_some_and(|rest| rest.starts_with('/'));
                // And the instructions for coding agents, wherever they are.
                let instruction = super::instructions::wanted(&path)
                    && instructions < super::instructions::MAX_FILES;
                instructions += usize::from(instruction);
                if !path.contains('/')
                    || devcontainer
                    || instruction
                    || super::devcontainer::PATHS.contains(&path.as_str())
                {
                    blobs.push((path.clone(), entry.id()));
                }
                out.paths.push(path);
            }
            git2::TreeWalkResult::Ok
        })
        .or_else(|e| {
            // Abort is how the walk stops at MAX_PATHS.
            if e.code() == git2::ErrorCode::User {
                Ok(())
            } else {
                Err(e)
            }
        })?;
        for (path, id) in blobs {
            let blob = repo.find_blob(id)?;
            if blob.size() <= MAX_FILE_BYTES
                && let Ok(text) = std::str::from_utf8(blob.content())
            {
                out.texts.insert(path, text.to_owned());
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
impl Tree {
    /// A tree of these files, each read as its text (for tests).
    pub(crate) fn of(files: &[(&str, &str)]) -> Self {
        Self {
            paths: files.iter().map(|(p, _)| (*p).to_owned()).collect(),
            texts: files
                .iter()
                .map(|(p, t)| ((*p).to_owned(), (*t).to_owned()))
                .collect(),
        }
    }
}

impl Files for Tree {
    fn paths(&self) -> &[String] {
        &self.paths
    }
    fn read(&self, path: &str) -> Option<String> {
        self.texts.get(path).cloned()
    }
}
