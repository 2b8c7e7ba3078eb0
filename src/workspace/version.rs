//! The project's version at a commit, as the tools that take it from git tags would find it
//! (setuptools-scm, hatch-vcs, pbr, poetry-dynamic-versioning): a sandbox never sees the
//! bot's git, so the bot reads the tags and passes the version in.

use std::collections::HashMap;

use git2::Repository;

/// The project's version at `commit`, as tools that take it from git tags would find it: the
/// nearest ancestor tagged `v1.2.3` or `1.2.3` gives `1.2.3` on the tag and `1.2.3.postN` N
/// commits after it; `0.0.0` without one. Tags that are not plain versions (the bot's own
/// `auto-v…`, `v2-beta`) are passed over.
pub fn version_at(git: &Repository, commit: git2::Oid) -> String {
    nearest(git, commit).unwrap_or_else(|| "0.0.0".into())
}

fn nearest(git: &Repository, commit: git2::Oid) -> Option<String> {
    let mut tagged: HashMap<git2::Oid, String> = HashMap::new();
    for name in git.tag_names(None).ok()?.iter().flatten() {
        let Some(version) = plain(name) else { continue };
        let Ok(target) = git.revparse_single(&format!("refs/tags/{name}^{{commit}}")) else {
            continue;
        };
        let kept = tagged.entry(target.id()).or_insert_with(|| version.clone());
        if later(&version, kept) {
            *kept = version;
        }
    }
    if tagged.is_empty() {
        return None;
    }
    let mut walk = git.revwalk().ok()?;
    walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::TIME)
        .ok()?;
    walk.push(commit).ok()?;
    let (at, version) = walk
        .flatten()
        .find_map(|oid| tagged.get(&oid).map(|v| (oid, v.clone())))?;
    let (ahead, _) = git.graph_ahead_behind(commit, at).ok()?;
    Some(if ahead == 0 {
        version
    } else {
        format!("{version}.post{ahead}")
    })
}

/// `v1.2.3` or `1.2.3` as `1.2.3`; `None` for any other tag.
fn plain(tag: &str) -> Option<String> {
    let version = tag.strip_prefix('v').unwrap_or(tag);
    let ok = !version.is_empty()
        && version
            .split('.')
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
    ok.then(|| version.to_owned())
}

/// Whether `a` is a later version than `b`, part by part.
fn later(a: &str, b: &str) -> bool {
    let parts = |v: &str| -> Vec<u64> { v.split('.').filter_map(|p| p.parse().ok()).collect() };
    parts(a) > parts(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(git: &Repository, message: &str) -> git2::Oid {
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        let tree = git.treebuilder(None).unwrap().write().unwrap();
        let tree = git.find_tree(tree).unwrap();
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

    fn tag(git: &Repository, name: &str, at: git2::Oid) {
        let object = git.find_object(at, None).unwrap();
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        git.tag(name, &object, &sig, name, false).unwrap();
    }

    #[test]
    fn a_version_is_the_nearest_plain_tag_and_the_commits_since() {
        let dir = tempfile::tempdir().unwrap();
        let git = Repository::init(dir.path()).unwrap();
        let first = commit(&git, "one");
        assert_eq!(version_at(&git, first), "0.0.0", "no tag yet");
        tag(&git, "v1.4.0", first);
        assert_eq!(version_at(&git, first), "1.4.0");
        commit(&git, "two");
        let third = commit(&git, "three");
        assert_eq!(version_at(&git, third), "1.4.0.post2");
        tag(&git, "auto-v7", third);
        assert_eq!(
            version_at(&git, third),
            "1.4.0.post2",
            "the bot's own snapshot tags are not the project's versions"
        );
        tag(&git, "2.0", third);
        assert_eq!(
            version_at(&git, third),
            "2.0",
            "an unprefixed tag counts too"
        );
    }

    #[test]
    fn a_tag_that_is_not_a_plain_version_is_passed_over() {
        let dir = tempfile::tempdir().unwrap();
        let git = Repository::init(dir.path()).unwrap();
        let first = commit(&git, "one");
        tag(&git, "v1.0.0", first);
        let second = commit(&git, "two");
        tag(&git, "v2-beta", second);
        assert_eq!(version_at(&git, second), "1.0.0.post1");
    }
}
