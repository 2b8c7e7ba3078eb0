//! The files of a commit, as the detector reads them ([`super::detect::Files`]): every path, and
//! the text of the small files at the root and under `.devcontainer/` (all detection looks at,
//! and a devcontainer's build context), of the instructions for coding agents
//! ([`super::instructions`]), and of the inputs detection names below the root (every
//! `Cargo.toml`, Python's requirements files and what they include).

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
                    || read_anywhere(&path)
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
            if let Some(text) = text_of(repo, id)? {
                out.texts.insert(path, text);
            }
        }
        out.read_included(repo, &tree);
        Ok(out)
    }

    /// Reads the files the requirements files and tox's deps include (`-r
    /// docs/requirements.txt`), wherever they are: setup installs them, so detection and the
    /// download phase read them too.
    fn read_included(&mut self, repo: &git2::Repository, tree: &git2::Tree<'_>) {
        let tox = super::pyproject::tox_config(&|p| self.texts.get(p).cloned());
        let mut roots = super::pyproject::tox_requirement_files(&tox);
        roots.extend(
            self.texts
                .keys()
                .filter(|p| super::includes::is_requirements_file(p))
                .cloned(),
        );
        let texts = &mut self.texts;
        let mut read = |p: &str| {
            if let Some(t) = texts.get(p) {
                return Some(t.clone());
            }
            let entry = tree.get_path(std::path::Path::new(p)).ok()?;
            let text = text_of(repo, entry.id()).ok()??;
            texts.insert(p.to_owned(), text.clone());
            Some(text)
        };
        super::includes::closure(&roots, &mut read);
    }
}

/// The files detection names as inputs below the root, read wherever they are: a workspace
/// member's `Cargo.toml`, Python's requirements files. An input the tree did not read would
/// look absent on the base, and every worktree would seem to change it.
fn read_anywhere(path: &str) -> bool {
    path.ends_with("/Cargo.toml") || super::includes::is_requirements_file(path)
}

/// The text of blob `id`, when it is one of at most [`MAX_FILE_BYTES`].
fn text_of(repo: &git2::Repository, id: git2::Oid) -> Result<Option<String>, git2::Error> {
    let blob = repo.find_blob(id)?;
    if blob.size() > MAX_FILE_BYTES {
        return Ok(None);
    }
    Ok(std::str::from_utf8(blob.content()).ok().map(str::to_owned))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A commit of `files`, in a repository in `dir`.
    fn commit(dir: &std::path::Path, files: &[(&str, &str)]) -> (git2::Repository, git2::Oid) {
        let repo = git2::Repository::init(dir).unwrap();
        let mut index = repo.index().unwrap();
        for (path, text) in files {
            let full = dir.join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(&full, text).unwrap();
            index.add_path(std::path::Path::new(path)).unwrap();
        }
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let me = git2::Signature::now("Me", "me@example.com").unwrap();
        let oid = repo.commit(None, &me, &me, "init", &tree, &[]).unwrap();
        drop(tree);
        (repo, oid)
    }

    /// An unchanged checkout is the base: every input detection names has its text in the
    /// tree, so no worktree seems to change what it did not.
    #[test]
    fn every_input_detection_names_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, oid) = commit(
            dir.path(),
            &[
                ("Cargo.toml", "[workspace]\nmembers = [\"crates/a\"]\n"),
                (
                    "crates/a/Cargo.toml",
                    "[package]\nname = \"a\"\nversion = \"0.1.0\"\n",
                ),
                ("crates/a/src/lib.rs", ""),
                ("pyproject.toml", "[project]\nname = \"p\"\n"),
                ("requirements/dev.txt", "-r ../docs/requirements.txt\n"),
                ("docs/requirements.txt", "sphinx\n"),
                ("tox.ini", "[testenv]\ndeps = -rtests/requirements.txt\n"),
                ("tests/requirements.txt", "pytest-cov\n"),
                ("package.json", "{\"name\": \"n\", \"version\": \"1.0.0\"}"),
                ("go.mod", "module example.com/m\n\ngo 1.22\n"),
            ],
        );
        let tree = Tree::of_commit(&repo, oid).unwrap();
        let found = super::super::detect::detect(&tree);
        assert_eq!(found.len(), 4, "{found:?}");
        for input in found.iter().flat_map(|f| &f.inputs) {
            if tree.paths().contains(input) {
                assert!(
                    tree.read(input).is_some(),
                    "{input} is an input the tree did not read"
                );
            }
        }
    }

    #[test]
    fn requirements_files_and_what_they_include_are_read_wherever_they_are() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, oid) = commit(
            dir.path(),
            &[
                ("pyproject.toml", "[project]\nname = \"p\"\n"),
                (
                    "requirements/dev.txt",
                    "-r ../docs/requirements.txt\n-c ../ci/pins.txt\n",
                ),
                ("docs/requirements.txt", "Sphinx\n-r ../docs\n"),
                ("ci/pins.txt", "sphinx==8.1.3\n"),
                ("tox.ini", "[testenv]\ndeps = -rtests/requirements.txt\n"),
                ("tests/requirements.txt", "pytest-cov\n"),
                ("docs/other.txt", "not read\n"),
                ("src/p/data.txt", "not read\n"),
            ],
        );
        let tree = Tree::of_commit(&repo, oid).unwrap();
        assert_eq!(
            tree.read("pyproject.toml").as_deref(),
            Some("[project]\nname = \"p\"\n")
        );
        assert!(tree.read("requirements/dev.txt").is_some());
        assert_eq!(
            tree.read("docs/requirements.txt").as_deref(),
            Some("Sphinx\n-r ../docs\n")
        );
        assert_eq!(tree.read("ci/pins.txt").as_deref(), Some("sphinx==8.1.3\n"));
        assert_eq!(
            tree.read("tests/requirements.txt").as_deref(),
            Some("pytest-cov\n")
        );
        assert_eq!(tree.read("docs/other.txt"), None);
        assert_eq!(tree.read("src/p/data.txt"), None);
        assert_eq!(tree.paths().len(), 8);
    }
}
