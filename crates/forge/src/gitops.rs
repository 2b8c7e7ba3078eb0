//! What the forge computes from (and does to) the real bare repositories with git2: resolving
//! refs, reading files, diffs per file as GitHub lists them, ahead/behind, ref updates and tag
//! objects.

use std::path::Path;

use git2::{Delta, DiffFindOptions, DiffOptions, ObjectType, Oid, Repository};

pub fn open(bare: &Path) -> Option<Repository> {
    Repository::open_bare(bare).ok()
}

/// The branch HEAD names, if it names one.
pub fn head_branch(repo: &Repository) -> Option<String> {
    let head = repo.find_reference("HEAD").ok()?;
    let target = head.symbolic_target()?;
    target.strip_prefix("refs/heads/").map(str::to_owned)
}

/// The text of `path` at `reference` (a branch name or SHA) of bare repository `bare`.
pub fn read_file(bare: &Path, reference: &str, path: &str) -> Option<String> {
    let repo = open(bare)?;
    let entry = tree_at(&repo, bare, reference)?
        .get_path(Path::new(path))
        .ok()?;
    let blob = entry.to_object(&repo).ok()?.peel_to_blob().ok()?;
    Some(String::from_utf8_lossy(blob.content()).into_owned())
}

/// The entries of directory `path` at `reference`, as `(name, is a directory)`; `None` when it
/// is no directory there.
pub fn list_dir(bare: &Path, reference: &str, path: &str) -> Option<Vec<(String, bool)>> {
    let repo = open(bare)?;
    let root = tree_at(&repo, bare, reference)?;
    let tree = match path.trim_matches('/') {
        "" => root,
        p => root
            .get_path(Path::new(p))
            .ok()?
            .to_object(&repo)
            .ok()?
            .into_tree()
            .ok()?,
    };
    Some(
        tree.iter()
            .map(|e| {
                let name = e.name().unwrap_or_default().to_owned();
                (name, e.kind() == Some(ObjectType::Tree))
            })
            .collect(),
    )
}

/// The tree of the commit `reference` (a branch name or SHA) names.
fn tree_at<'r>(repo: &'r Repository, bare: &Path, reference: &str) -> Option<git2::Tree<'r>> {
    repo.revparse_single(&resolve(bare, reference)?)
        .ok()?
        .peel_to_commit()
        .ok()?
        .tree()
        .ok()
}

/// The commit `branch` of bare repository `bare` points at.
pub fn branch_sha(bare: &Path, branch: &str) -> Option<String> {
    let repo = open(bare)?;
    let r = repo.find_reference(&format!("refs/heads/{branch}")).ok()?;
    Some(r.peel_to_commit().ok()?.id().to_string())
}

/// A branch name or SHA, as a full SHA.
pub fn resolve(bare: &Path, reference: &str) -> Option<String> {
    branch_sha(bare, reference)
        .or_else(|| has_commit(bare, reference).then(|| reference.to_owned()))
}

/// `sha` is a commit of bare repository `bare`.
pub fn has_commit(bare: &Path, sha: &str) -> bool {
    let Some(repo) = open(bare) else {
        return false;
    };
    Oid::from_str(sha)
        .ok()
        .and_then(|oid| repo.find_commit(oid).ok())
        .is_some()
}

/// A branch name, tag name, `heads/x`/`tags/x`, or (abbreviated) SHA, as a commit.
pub fn resolve_commit(repo: &Repository, reference: &str) -> Option<Oid> {
    let candidates = [
        format!("refs/heads/{reference}"),
        format!("refs/tags/{reference}"),
        format!("refs/{reference}"),
    ];
    for name in &candidates {
        if let Ok(r) = repo.find_reference(name) {
            return r.peel_to_commit().ok().map(|c| c.id());
        }
    }
    let hex = reference.len() >= 4
        && reference.len() <= 40
        && reference.chars().all(|c| c.is_ascii_hexdigit());
    if !hex {
        return None;
    }
    repo.revparse_single(reference)
        .ok()?
        .peel_to_commit()
        .ok()
        .map(|c| c.id())
}

/// One changed file, as GitHub's `diff-entry`, plus the lines a review comment may target.
#[derive(Debug, Clone)]
pub struct FileDiff {
    pub filename: String,
    pub previous_filename: Option<String>,
    /// `added`, `removed`, `modified`, `renamed`
    pub status: &'static str,
    pub additions: usize,
    pub deletions: usize,
    /// The hunks (`@@ … @@` headers and lines), without the `diff --git`/`---`/`+++` header.
    pub patch: Option<String>,
    pub sha: Option<String>,
    /// New-file line numbers shown in the diff (context and added): `side: RIGHT`.
    pub right_lines: Vec<u32>,
    /// Old-file line numbers shown in the diff (context and deleted): `side: LEFT`.
    pub left_lines: Vec<u32>,
}

/// The files changed from `from` to `to` (`from` = `None`: from the empty tree).
pub fn diff_files(repo: &Repository, from: Option<Oid>, to: Oid) -> Vec<FileDiff> {
    let tree_of = |oid: Oid| repo.find_commit(oid).and_then(|c| c.tree()).ok();
    let old = from.and_then(tree_of);
    let new = tree_of(to);
    let mut opts = DiffOptions::new();
    opts.context_lines(3);
    let Ok(mut diff) = repo.diff_tree_to_tree(old.as_ref(), new.as_ref(), Some(&mut opts)) else {
        return Vec::new();
    };
    let _ = diff.find_similar(Some(DiffFindOptions::new().renames(true)));
    let mut out = Vec::new();
    for idx in 0..diff.deltas().len() {
        let Some(delta) = diff.get_delta(idx) else {
            continue;
        };
        let status = match delta.status() {
            Delta::Added => "added",
            Delta::Deleted => "removed",
            Delta::Renamed => "renamed",
            Delta::Copied => "copied",
            _ => "modified",
        };
        let path = |f: git2::DiffFile<'_>| {
            f.path()
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        let filename = path(delta.new_file());
        let previous = path(delta.old_file());
        let sha = [delta.new_file().id(), delta.old_file().id()]
            .into_iter()
            .find(|id| !id.is_zero())
            .map(|id| id.to_string());
        let mut fd = FileDiff {
            previous_filename: (status == "renamed").then_some(previous),
            filename,
            status,
            additions: 0,
            deletions: 0,
            patch: None,
            sha,
            right_lines: Vec::new(),
            left_lines: Vec::new(),
        };
        if let Ok(Some(patch)) = git2::Patch::from_diff(&diff, idx) {
            let mut text = String::new();
            for h in 0..patch.num_hunks() {
                let Ok((hunk, n)) = patch.hunk(h) else {
                    continue;
                };
                text.push_str(&String::from_utf8_lossy(hunk.header()));
                for l in 0..n {
                    let Ok(line) = patch.line_in_hunk(h, l) else {
                        continue;
                    };
                    let origin = line.origin();
                    if matches!(origin, '+' | '-' | ' ') {
                        text.push(origin);
                    }
                    text.push_str(&String::from_utf8_lossy(line.content()));
                    match origin {
                        '+' => fd.additions += 1,
                        '-' => fd.deletions += 1,
                        _ => {}
                    }
                    if let Some(n) = line.new_lineno().filter(|_| origin != '-') {
                        fd.right_lines.push(n);
                    }
                    if let Some(n) = line.old_lineno().filter(|_| origin != '+') {
                        fd.left_lines.push(n);
                    }
                }
            }
            if !delta.new_file().is_binary() && !delta.old_file().is_binary() {
                fd.patch = Some(text.trim_end_matches('\n').to_owned());
            }
        }
        out.push(fd);
    }
    out
}

/// How `head` relates to `base`, as GitHub's compare (three-dot) reports it.
pub struct Comparison {
    pub merge_base: Oid,
    pub ahead_by: usize,
    pub behind_by: usize,
    /// Commits on `head` not on `base`, oldest first.
    pub commits: Vec<Oid>,
    pub files: Vec<FileDiff>,
}

impl Comparison {
    pub fn status(&self) -> &'static str {
        match (self.ahead_by, self.behind_by) {
            (0, 0) => "identical",
            (_, 0) => "ahead",
            (0, _) => "behind",
            _ => "diverged",
        }
    }
}

pub fn compare(repo: &Repository, base: Oid, head: Oid) -> Option<Comparison> {
    let merge_base = repo.merge_base(base, head).ok()?;
    let (ahead_by, behind_by) = repo.graph_ahead_behind(head, base).ok()?;
    let mut walk = repo.revwalk().ok()?;
    walk.push(head).ok()?;
    walk.hide(base).ok()?;
    walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::REVERSE)
        .ok()?;
    let commits = walk.filter_map(Result::ok).collect();
    Some(Comparison {
        merge_base,
        ahead_by,
        behind_by,
        commits,
        files: diff_files(repo, Some(merge_base), head),
    })
}

/// `true` when `new` contains `old` (updating `old` to `new` is a fast forward).
pub fn is_fast_forward(repo: &Repository, old: Oid, new: Oid) -> bool {
    old == new || repo.graph_descendant_of(new, old).unwrap_or(false)
}

/// The object a full ref name points at, and that object's type (`commit`, `tag`, …).
pub fn read_ref(repo: &Repository, full: &str) -> Option<(Oid, &'static str)> {
    let r = repo.find_reference(full).ok()?;
    let oid = r.target()?;
    let kind = repo.find_object(oid, None).ok()?.kind()?;
    Some((oid, kind_name(kind)))
}

pub fn kind_name(kind: ObjectType) -> &'static str {
    match kind {
        ObjectType::Commit => "commit",
        ObjectType::Tag => "tag",
        ObjectType::Tree => "tree",
        ObjectType::Blob => "blob",
        ObjectType::Any => "any",
    }
}

/// The type of object `oid`, if it exists.
pub fn object_kind(repo: &Repository, oid: Oid) -> Option<&'static str> {
    Some(kind_name(repo.find_object(oid, None).ok()?.kind()?))
}

/// Points `full` at `oid` (creating or moving it).
pub fn set_ref(repo: &Repository, full: &str, oid: Oid, log: &str) -> Result<(), git2::Error> {
    repo.reference(full, oid, true, log).map(|_| ())
}

pub fn delete_ref(repo: &Repository, full: &str) -> Result<(), git2::Error> {
    repo.find_reference(full)?.delete()
}

/// Writes an annotated tag object (no ref, as GitHub's `POST /git/tags`).
pub fn create_tag_object(
    repo: &Repository,
    name: &str,
    target: Oid,
    message: &str,
    tagger: &git2::Signature<'_>,
) -> Result<Oid, git2::Error> {
    let obj = repo.find_object(target, None)?;
    repo.tag_annotation_create(name, &obj, tagger, message)
}

/// `(tag name, commit SHA it points to)` for every `refs/tags/*`, annotated tags peeled.
pub fn tags(repo: &Repository) -> Vec<(String, String)> {
    let Ok(refs) = repo.references_glob("refs/tags/*") else {
        return Vec::new();
    };
    let mut out: Vec<(String, String)> = refs
        .filter_map(Result::ok)
        .filter_map(|r| {
            let name = r.name()?.strip_prefix("refs/tags/")?.to_owned();
            let sha = r.peel_to_commit().ok()?.id().to_string();
            Some((name, sha))
        })
        .collect();
    out.sort();
    out
}

/// How a pull request lands on its base (`merge_method` of `PUT …/pulls/{n}/merge`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LandMethod {
    /// A merge commit with the base and the head as parents.
    Merge,
    /// One new commit on the base with the merged tree.
    Squash,
    /// Each commit of the head replayed on the base, committed anew.
    Rebase,
}

/// Lands `head` on `base` by `method`: the new tip of the base, or `None` when the two conflict
/// (GitHub's "not mergeable"). `message` is used by merge and squash; a rebase keeps each
/// commit's own. `by` is the author of a merge or squash commit; `committer` commits them all
/// (GitHub's web-flow identity), so even a rebase that could fast-forward makes new commits.
pub fn land(
    repo: &Repository,
    base: Oid,
    head: Oid,
    method: LandMethod,
    message: &str,
    by: &git2::Signature<'_>,
    committer: &git2::Signature<'_>,
) -> Result<Option<Oid>, git2::Error> {
    let base_c = repo.find_commit(base)?;
    let head_c = repo.find_commit(head)?;
    if method == LandMethod::Rebase {
        let mut walk = repo.revwalk()?;
        walk.push(head)?;
        walk.hide(base)?;
        walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::REVERSE)?;
        let mut onto = base_c;
        for oid in walk {
            let c = repo.find_commit(oid?)?;
            if c.parent_count() > 1 {
                // GitHub cannot rebase merge commits either.
                return Ok(None);
            }
            let mut index = repo.cherrypick_commit(&c, &onto, 0, None)?;
            if index.has_conflicts() {
                return Ok(None);
            }
            let tree = repo.find_tree(index.write_tree_to(repo)?)?;
            let message = c.message().unwrap_or_default();
            let new = repo.commit(None, &c.author(), committer, message, &tree, &[&onto])?;
            onto = repo.find_commit(new)?;
        }
        return Ok(Some(onto.id()));
    }
    let mut index = repo.merge_commits(&base_c, &head_c, None)?;
    if index.has_conflicts() {
        return Ok(None);
    }
    let tree = repo.find_tree(index.write_tree_to(repo)?)?;
    let parents: Vec<&git2::Commit<'_>> = match method {
        LandMethod::Merge => vec![&base_c, &head_c],
        _ => vec![&base_c],
    };
    repo.commit(None, by, committer, message, &tree, &parents)
        .map(Some)
}
