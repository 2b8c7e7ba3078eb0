//! A worktree as the bot made it, and how the bot opens it: through the mirror it owns,
//! never through a file code in a sandbox could rewrite; and what a change may not commit (a
//! symbolic link out of the repository).

use std::path::{Path, PathBuf};

use git2::Repository;

use super::WorkspaceError;
use crate::ids::CommitSha;

/// A checked-out branch.
#[derive(Debug, Clone)]
pub struct Worktree {
    pub path: PathBuf,
    pub branch: String,
    /// The commit the branch was made from.
    pub base: CommitSha,
    /// git's administrative directory of the worktree, in the mirror
    /// (`<mirror>/worktrees/<name>`): what the bot opens it through.
    pub admin: PathBuf,
}

impl Worktree {
    /// The repository of this worktree, opened through the mirror: the administrative
    /// directory the bot made, with no discovery and no configuration read from the worktree,
    /// and the work directory set to the path the bot chose. Never through the worktree's
    /// `.git`, which code in a sandbox could point at a git directory of its own (whose
    /// `core.worktree` or `commondir` names any directory of the host); that file is checked to
    /// be what git wrote, and a changed one is [`WorkspaceError::Tampered`].
    ///
    /// A worktree holding a special file (a FIFO, a socket, a device: git tracks none, and
    /// opening one blocks) is refused the same way, before git reads anything of it.
    pub fn open(&self) -> Result<Repository, WorkspaceError> {
        self.check_dot_git()?;
        self.check_special_files()?;
        let git = Repository::open_ext(
            &self.admin,
            git2::RepositoryOpenFlags::NO_SEARCH | git2::RepositoryOpenFlags::BARE,
            std::iter::empty::<&std::ffi::OsStr>(),
        )?;
        git.set_workdir(&self.path, false)?;
        Ok(git)
    }

    /// Checks the branch's head out into a worktree [`register`] made: every file, and the
    /// index. It writes only the worktree's own files (its directory, and the index in its
    /// administrative directory), so it needs no mirror lock: two worktrees of one mirror are
    /// checked out at once.
    pub(super) fn check_out(&self) -> Result<(), WorkspaceError> {
        let git = self.open()?;
        let mut how = git2::build::CheckoutBuilder::new();
        how.force();
        git.checkout_head(Some(&mut how))?;
        Ok(())
    }

    /// The worktree's `.git` is the one-line file git wrote (`gitdir: <admin>`), and no link.
    pub fn check_dot_git(&self) -> Result<(), WorkspaceError> {
        let expected = format!("gitdir: {}", self.admin.display());
        let expected = expected.trim_end_matches('/');
        let found = crate::untrusted::files::read(&self.path, ".git", 4096);
        let same =
            |b: &[u8]| String::from_utf8_lossy(b).trim_end().trim_end_matches('/') == expected;
        match found {
            Ok(bytes) if same(&bytes) => Ok(()),
            Ok(bytes) => {
                let said: String = String::from_utf8_lossy(&bytes).chars().take(200).collect();
                Err(self.tampered(&format!("it now says {:?}", said.trim_end())))
            }
            Err(e) => Err(self.tampered(&e.to_string())),
        }
    }

    /// The paths that differ from the branch's head: tracked files changed or deleted, and new
    /// files git does not ignore (`true` when tracked). Read through the mirror, like every
    /// look the bot takes at a worktree.
    pub fn changes(&self) -> Result<Vec<(String, bool)>, WorkspaceError> {
        let git = self.open()?;
        let mut opts = git2::StatusOptions::new();
        opts.include_untracked(true)
            .recurse_untracked_dirs(true)
            .include_ignored(false)
            .exclude_submodules(true);
        let statuses = git.statuses(Some(&mut opts))?;
        Ok(statuses
            .iter()
            .filter_map(|e| {
                let path = String::from_utf8_lossy(e.path_bytes()).into_owned();
                let new = e.status().contains(git2::Status::WT_NEW);
                (!e.status().is_empty()).then_some((path, !new))
            })
            .collect())
    }

    /// The content of `path` in the branch's head commit, `None` when it has no such file.
    pub fn head_blob(&self, path: &str) -> Result<Option<Vec<u8>>, WorkspaceError> {
        let git = self.open()?;
        let tree = git.head()?.peel_to_tree()?;
        match tree.get_path(Path::new(path)) {
            Ok(e) => Ok(Some(e.to_object(&git)?.peel_to_blob()?.content().to_vec())),
            Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The paths of the submodules in the branch's head commit (see [`submodules_at`]).
    pub fn submodules(&self) -> Result<Vec<String>, WorkspaceError> {
        let git = self.open()?;
        let head = git.head()?.peel_to_commit()?.id();
        submodules_at(&git, head)
    }

    /// No FIFO, socket or device anywhere in the worktree (the `.git` apart).
    pub fn check_special_files(&self) -> Result<(), WorkspaceError> {
        match crate::untrusted::files::special_files(&self.path, 5) {
            Ok(found) if found.is_empty() => Ok(()),
            Ok(found) => Err(WorkspaceError::Tampered(format!(
                "The worktree of {} holds special files that only a program in the sandbox could have made: {}. \
                 The bot's git will not open them (one would block it); remove them and keep to plain files",
                self.branch,
                found.join(", ")
            ))),
            Err(e) => Err(self.tampered(&format!("it cannot be walked: {e}"))),
        }
    }

    fn tampered(&self, why: &str) -> WorkspaceError {
        WorkspaceError::Tampered(format!(
            "{}/.git was changed by what ran in the sandbox ({why}); the bot's git will not follow it",
            self.path.display()
        ))
    }
}

/// Makes the empty directory `path` worktree `name` of the bare mirror `git`, on the local
/// branch `branch`, with nothing checked out: the files `git worktree add` writes
/// (gitrepository-layout(5)), the administrative directory `<mirror>/worktrees/<name>`
/// (`gitdir`, `commondir`, `HEAD`) and the worktree's `.git`. libgit2's `git_worktree_add`
/// writes the same and then checks out, which a caller holding the mirror's lock would hold
/// it through; [`Worktree::check_out`] does that after. The administrative directory.
pub(super) fn register(
    git: &Repository,
    name: &str,
    path: &Path,
    branch: &str,
) -> Result<PathBuf, WorkspaceError> {
    let common = std::fs::canonicalize(git.path())?;
    let admin = common.join("worktrees").join(name);
    std::fs::create_dir_all(common.join("worktrees"))?;
    std::fs::create_dir(&admin)?;
    std::fs::create_dir(path)?;
    let path = std::fs::canonicalize(path)?;
    std::fs::write(admin.join("commondir"), "../..\n")?;
    let dot_git = path.join(".git");
    std::fs::write(admin.join("gitdir"), format!("{}\n", dot_git.display()))?;
    std::fs::write(admin.join("HEAD"), format!("ref: refs/heads/{branch}\n"))?;
    std::fs::write(&dot_git, format!("gitdir: {}\n", admin.display()))?;
    Ok(admin)
}

/// Every symbolic link `index` adds or changes (against `HEAD`) stays inside the repository:
/// its target is relative and never climbs above the repository's root. Links the branch had
/// already are people's, and stay.
pub(super) fn refuse_links_out(
    git: &Repository,
    index: &git2::Index,
) -> Result<(), WorkspaceError> {
    let head = git.head()?.peel_to_tree()?;
    for entry in index.iter() {
        if entry.mode != 0o120000 {
            continue;
        }
        let path = Path::new(std::str::from_utf8(&entry.path).unwrap_or_default());
        if head.get_path(path).is_ok_and(|e| e.id() == entry.id) {
            continue;
        }
        let blob = git.find_blob(entry.id)?;
        let target = String::from_utf8_lossy(blob.content()).into_owned();
        let path = String::from_utf8_lossy(&entry.path).into_owned();
        if link_leaves(&path, &target) {
            return Err(WorkspaceError::Tampered(format!(
                "{path} is a symbolic link to {target}, out of the repository: not committed"
            )));
        }
    }
    Ok(())
}

/// Whether a link at `path` (repository-relative) to `target` leads out of the repository.
pub(super) fn link_leaves(path: &str, target: &str) -> bool {
    if target.starts_with('/') {
        return true;
    }
    let mut depth: i64 = path.matches('/').count() as i64;
    for part in target.split('/') {
        match part {
            ".." => depth -= 1,
            "" | "." => {}
            _ => depth += 1,
        }
        if depth < 0 {
            return true;
        }
    }
    false
}

/// What checking out `tree` takes: bytes (each file rounded up to 4 KiB blocks, a block per
/// directory) and files and directories; links and submodules count one inode and no block.
pub(super) fn checkout_size(
    git: &Repository,
    tree: &git2::Tree,
) -> Result<(u64, u64), git2::Error> {
    const BLOCK: u64 = 4096;
    let odb = git.odb()?;
    // The worktree's own directory: one inode, one block.
    let (mut bytes, mut files) = (BLOCK, 1u64);
    let mut failed = None;
    tree.walk(git2::TreeWalkMode::PreOrder, |_, entry| {
        files += 1;
        if entry.kind() == Some(git2::ObjectType::Tree) {
            bytes += BLOCK;
        }
        if entry.kind() == Some(git2::ObjectType::Blob) && entry.filemode() != 0o120000 {
            match odb.read_header(entry.id()) {
                Ok((size, _)) => bytes += (size as u64).div_ceil(BLOCK) * BLOCK,
                Err(e) => {
                    failed = Some(e);
                    return git2::TreeWalkResult::Abort;
                }
            }
        }
        git2::TreeWalkResult::Ok
    })?;
    match failed {
        Some(e) => Err(e),
        None => Ok((bytes, files)),
    }
}

/// The paths of the submodules in `commit` (`tests/toml-test`): the bot does not check them
/// out, so a sandbox sees each as an empty directory.
pub fn submodules_at(git: &Repository, commit: git2::Oid) -> Result<Vec<String>, WorkspaceError> {
    let tree = git.find_commit(commit)?.tree()?;
    let mut found = Vec::new();
    tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
        if entry.filemode() == i32::from(git2::FileMode::Commit) {
            found.push(format!("{dir}{}", entry.name().unwrap_or_default()));
        }
        git2::TreeWalkResult::Ok
    })?;
    Ok(found)
}
