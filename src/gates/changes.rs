//! What a change did to a repository's files, read with git2 from two commits (or trees): the
//! files it adds or changes, each with its blobs on both sides and the line numbers it adds. The
//! measures that look only at what a change touched ([`super::complexity`], the acceptance
//! criteria of [`super::acceptance`]) read it.

use git2::{Delta, DiffOptions, Oid, Repository};

/// One file the change added or changed (a regular file on the new side).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    /// Relative to the repository root, `/`-separated.
    pub path: String,
    /// The file's blob on the new side.
    pub blob: Oid,
    /// Its blob on the old side, when it was there (not for an added file).
    pub old: Option<Oid>,
    /// The new side's line numbers (1-based) the change adds, in order.
    pub added: Vec<u32>,
}

/// The files `head` adds or changes relative to `base` (commit or tree ids), in path order.
pub fn changed_files(repo: &Repository, base: Oid, head: Oid) -> Result<Vec<Changed>, git2::Error> {
    let old = repo.find_object(base, None)?.peel_to_tree()?;
    let new = repo.find_object(head, None)?.peel_to_tree()?;
    let mut opts = DiffOptions::new();
    opts.ignore_submodules(true).context_lines(0);
    let diff = repo.diff_tree_to_tree(Some(&old), Some(&new), Some(&mut opts))?;
    let mut files = Vec::new();
    for (i, delta) in diff.deltas().enumerate() {
        if matches!(delta.status(), Delta::Deleted | Delta::Unmodified) {
            continue;
        }
        let file = delta.new_file();
        if !matches!(
            file.mode(),
            git2::FileMode::Blob | git2::FileMode::BlobExecutable
        ) {
            continue;
        }
        let Some(path) = file.path().and_then(|p| p.to_str()).map(str::to_owned) else {
            continue;
        };
        let before = delta.old_file();
        let old = (!matches!(delta.status(), Delta::Added) && !before.id().is_zero())
            .then(|| before.id());
        files.push(Changed {
            path,
            blob: file.id(),
            old,
            added: added_lines(&diff, i)?,
        });
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(files)
}

/// The new-side line numbers that delta `i` of `diff` adds.
fn added_lines(diff: &git2::Diff<'_>, i: usize) -> Result<Vec<u32>, git2::Error> {
    let Some(patch) = git2::Patch::from_diff(diff, i)? else {
        return Ok(Vec::new());
    };
    let mut lines = Vec::new();
    for h in 0..patch.num_hunks() {
        for l in 0..patch.num_lines_in_hunk(h)? {
            let line = patch.line_in_hunk(h, l)?;
            if line.origin() == '+'
                && let Some(n) = line.new_lineno()
            {
                lines.push(n);
            }
        }
    }
    Ok(lines)
}

/// Lines as ranges for people: `[3, 4, 5, 9]` → "3-5, 9".
pub fn ranges(lines: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let start = lines[i];
        let mut end = start;
        while i + 1 < lines.len() && lines[i + 1] == end + 1 {
            i += 1;
            end = lines[i];
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    out.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_read_as_ranges() {
        assert_eq!(ranges(&[3, 4, 5, 9, 11, 12]), "3-5, 9, 11-12");
        assert_eq!(ranges(&[]), "");
    }
}
