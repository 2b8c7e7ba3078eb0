//! Real git repositories for tests, through git2: seed a bare repository with files (and
//! symbolic links); read files and branch heads back (the forge's own readers).

use std::path::Path;

use git2::{Repository, Signature};

/// Creates bare repository `path` with one commit of `files` on `branch` (also HEAD).
pub fn seed_bare(path: &Path, branch: &str, files: &[(&str, &str)]) {
    std::fs::create_dir_all(path).unwrap();
    let repo = Repository::init_bare(path).unwrap();
    commit_files(&repo, branch, files, "Initial commit");
    repo.set_head(&format!("refs/heads/{branch}")).unwrap();
}

/// Commits `files` (added or replaced) on top of `branch` (or as its first commit).
pub fn commit_files(
    repo: &Repository,
    branch: &str,
    files: &[(&str, &str)],
    message: &str,
) -> git2::Oid {
    commit_entries(repo, branch, files, 0o100644, message)
}

/// Commits symbolic links `(path, target)` on top of `branch`, as `git add` of real links does.
pub fn commit_links(
    repo: &Repository,
    branch: &str,
    links: &[(&str, &str)],
    message: &str,
) -> git2::Oid {
    commit_entries(repo, branch, links, 0o120000, message)
}

/// Commits `(path, content)` entries of one git `mode` on top of `branch`.
fn commit_entries(
    repo: &Repository,
    branch: &str,
    files: &[(&str, &str)],
    mode: u32,
    message: &str,
) -> git2::Oid {
    let refname = format!("refs/heads/{branch}");
    let parent = repo
        .find_reference(&refname)
        .ok()
        .and_then(|r| r.peel_to_commit().ok());
    let mut index = git2::Index::new().unwrap();
    if let Some(p) = &parent {
        index.read_tree(&p.tree().unwrap()).unwrap();
    }
    for (name, content) in files {
        let entry = git2::IndexEntry {
            ctime: git2::IndexTime::new(0, 0),
            mtime: git2::IndexTime::new(0, 0),
            dev: 0,
            ino: 0,
            mode,
            uid: 0,
            gid: 0,
            file_size: content.len() as u32,
            id: repo.blob(content.as_bytes()).unwrap(),
            flags: 0,
            flags_extended: 0,
            path: name.as_bytes().to_vec(),
        };
        index.add(&entry).unwrap();
    }
    let tree = repo.find_tree(index.write_tree_to(repo).unwrap()).unwrap();
    let sig = Signature::now("Maintainer", "maintainer@example.com").unwrap();
    let parents: Vec<&git2::Commit> = parent.iter().collect();
    repo.commit(Some(&refname), &sig, &sig, message, &tree, &parents)
        .unwrap()
}

#[allow(unused_imports)]
pub use vibeloop::forge::gitops::{branch_sha, has_commit, read_file, resolve};
