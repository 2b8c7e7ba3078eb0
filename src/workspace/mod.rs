//! Git on disk, through git2: one bare mirror per repository under `<data>/mirrors`, one
//! worktree per branch under `<data>/worktrees`, commits authored as the app, pushes; read-only
//! snapshots of a commit's files under `<data>/snapshots` ([`Snapshot`]). A worktree is
//! registered under its mirror's lock and checked out outside it: checkouts of one mirror run at
//! once.
//!
//! Credentials: the installation token is handed to libgit2 only through the credential
//! callback, so it never appears in a remote URL, a config file, argv or a log line.
//! Every function here blocks; async callers use `tokio::task::spawn_blocking`.

use std::cell::Cell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use git2::{
    BranchType, Cred, FetchOptions, IndexAddOption, RemoteCallbacks, Repository, Signature,
    WorktreePruneOptions,
};
use secrecy::{ExposeSecret as _, SecretString};

mod author;
mod changes;
mod push;
mod replay;
mod snapshot;
mod version;
mod worktree;

pub use author::Author;
pub use changes::{Conflict, Merged, PersonCommit, Squashed};
pub use replay::{Change, Content, Replay, to_replay};
pub use snapshot::Snapshot;
pub use version::version_at;
pub use worktree::{Worktree, submodules_at};
use worktree::{checkout_size, link_leaves, refuse_links_out};

use crate::ids::{CommitSha, RepoName};
use crate::sandbox::disk;

/// The user name GitHub expects with an installation token over HTTPS.
const TOKEN_USER: &str = "x-access-token";

/// Errors callers branch on.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("git: {0}")]
    Git(#[from] git2::Error),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    #[error("branch {0} does not exist on the remote")]
    MissingBranch(String),
    #[error("the remote refused {reference}: {message}")]
    PushRejected { reference: String, message: String },
    /// GitHub's rules refused the push (`GH013` for a ruleset, `GH006` for a protected
    /// branch), in the remote's own words: trying again changes nothing until a person
    /// changes the rules or the bot's place in them.
    #[error(
        "GitHub's rules refused the push to {reference} ({code}): {} Trying again changes nothing: change the rule, or add the App to the ruleset's bypass list.",
        rules.join(" ")
    )]
    RuleViolation {
        reference: String,
        code: String,
        rules: Vec<String>,
    },
    /// A push with a lease found the remote branch elsewhere than expected (someone pushed).
    #[error(
        "{branch} is at {found} on the remote, not at {expected} as last pushed; not overwritten"
    )]
    LeaseBroken {
        branch: String,
        expected: String,
        found: String,
    },
    /// Something in the sandbox changed what the bot's git relies on (the worktree's `.git`),
    /// or wrote what must not be committed (a link out of the repository).
    #[error("{0}")]
    Tampered(String),
}

/// The mirrors and worktrees of one data directory.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    git_url: url::Url,
    /// One lock per mirror: fetches, pushes and worktree changes of one repository take turns
    /// (libgit2 locks each file it writes and fails, rather than waits, when another holds it).
    locks: Arc<Mutex<HashMap<String, Arc<Mutex<()>>>>>,
    /// Each worktree on a disk of its own ([`crate::sandbox::disk`]), when this process can
    /// mount one.
    disks: bool,
}

/// Holds a mirror's lock while alive.
struct MirrorGuard(Arc<Mutex<()>>);

impl MirrorGuard {
    fn hold<T>(&self, f: impl FnOnce() -> T) -> T {
        let _held = self.0.lock().unwrap_or_else(|e| e.into_inner());
        f()
    }
}

/// The `Authorization` header that gives `token` with a fetch's or push's first request, so
/// that each one costs one round trip to the forge, not a refusal and a second ask. It is the
/// token, encoded: a secret here, handed only to libgit2's request headers.
fn auth_header(token: &SecretString) -> SecretString {
    use base64::Engine as _;
    let pair = format!("{TOKEN_USER}:{}", token.expose_secret());
    let encoded = base64::engine::general_purpose::STANDARD.encode(pair.as_bytes());
    SecretString::from(format!("Authorization: Basic {encoded}"))
}

/// How a fetch gives `token`: in the first request's header, and to a refusal's second ask;
/// never to another host a redirect names ([`git2::RemoteRedirect::None`]).
fn fetch_options(token: &SecretString) -> FetchOptions<'_> {
    let mut opts = FetchOptions::new();
    opts.follow_redirects(git2::RemoteRedirect::None);
    opts.custom_headers(&[auth_header(token).expose_secret()]);
    opts.remote_callbacks(callbacks(Some(token)));
    opts
}

fn callbacks(token: Option<&SecretString>) -> RemoteCallbacks<'_> {
    let mut cb = RemoteCallbacks::new();
    let tries = Cell::new(0);
    cb.credentials(move |_url, _user, _allowed| {
        tries.set(tries.get() + 1);
        match token {
            // libgit2 asks again after a refusal; a second ask means the token was refused.
            Some(t) if tries.get() <= 1 => Cred::userpass_plaintext(TOKEN_USER, t.expose_secret()),
            _ => Err(git2::Error::from_str(
                "the remote refused the installation token",
            )),
        }
    });
    cb
}

impl Workspace {
    /// `root` is the data directory; `git_url` the base for `https://host/owner/name.git`.
    /// Repositories keep libgit2's owner validation: the bot opens its worktrees through the
    /// mirror it owns ([`Worktree::open`]), whoever owns their files.
    pub fn new(root: &Path, git_url: &url::Url) -> Self {
        Self {
            root: root.to_owned(),
            git_url: git_url.clone(),
            locks: Arc::default(),
            disks: false,
        }
    }

    /// Puts each worktree made from now on on a disk of its own, sized to its checkout and
    /// the room its commands may write ([`crate::sandbox::disk`]); `on` comes from
    /// [`crate::sandbox::disk::probe`].
    pub fn with_disks(mut self, on: bool) -> Self {
        self.disks = on;
        self
    }

    fn mirror_lock(&self, repo: &RepoName) -> MirrorGuard {
        let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
        MirrorGuard(locks.entry(repo.as_str().to_owned()).or_default().clone())
    }

    /// Removes the lock files a killed process left in the mirrors (`refs/heads/x.lock`,
    /// `packed-refs.lock`, a worktree's `index.lock`…): libgit2 refuses to write where one is,
    /// so a bot killed mid-write would fail every later write there. Call it before any git work
    /// of this process: a data directory belongs to one process, so no lock is live then. No
    /// file of a bare mirror ends in `.lock` otherwise (git refuses such ref names). The paths
    /// removed.
    pub fn clear_stale_locks(&self) -> Vec<PathBuf> {
        let mut removed = Vec::new();
        let mut dirs = vec![self.root.join("mirrors")];
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                let path = e.path();
                match e.file_type() {
                    Ok(t) if t.is_dir() => dirs.push(path),
                    Ok(t)
                        if t.is_file()
                            && path.extension().is_some_and(|x| x == "lock")
                            && std::fs::remove_file(&path).is_ok() =>
                    {
                        removed.push(path)
                    }
                    _ => {}
                }
            }
        }
        removed
    }

    pub fn mirror_path(&self, repo: &RepoName) -> PathBuf {
        self.root
            .join("mirrors")
            .join(repo.owner())
            .join(format!("{}.git", repo.name()))
    }

    /// Where facts about the base of `repo` are kept, by `name` (a baseline of one commit):
    /// the bot's own files, which no sandbox sees.
    pub fn facts_path(&self, repo: &RepoName, name: &str) -> PathBuf {
        self.root
            .join("facts")
            .join(repo.owner())
            .join(repo.name())
            .join(name)
    }

    pub fn worktree_path(&self, repo: &RepoName, branch: &str) -> PathBuf {
        self.disk_root(repo, branch).join(disk::TREE)
    }

    /// The directory holding a branch's worktree: its disk's mount when it has one.
    fn disk_root(&self, repo: &RepoName, branch: &str) -> PathBuf {
        self.root
            .join("worktrees")
            .join(repo.owner())
            .join(repo.name())
            .join(branch.replace('/', "-"))
    }

    fn remote_url(&self, repo: &RepoName) -> String {
        format!(
            "{}/{}/{}.git",
            self.git_url.as_str().trim_end_matches('/'),
            repo.owner(),
            repo.name()
        )
    }

    /// Opens (creating if needed) the bare mirror and fetches every branch into
    /// `refs/remotes/origin/*`.
    pub fn sync_mirror(
        &self,
        repo: &RepoName,
        token: &SecretString,
    ) -> Result<Repository, WorkspaceError> {
        self.mirror_lock(repo)
            .hold(|| self.sync_mirror_locked(repo, token))
    }

    fn sync_mirror_locked(
        &self,
        repo: &RepoName,
        token: &SecretString,
    ) -> Result<Repository, WorkspaceError> {
        let path = self.mirror_path(repo);
        let git = match Repository::open_bare(&path) {
            Ok(g) => g,
            Err(_) => {
                std::fs::create_dir_all(&path)?;
                Repository::init_bare(&path)?;
                self.borrow_local_objects(repo, &path)?;
                Repository::open_bare(&path)?
            }
        };
        let url = self.remote_url(repo);
        match git.find_remote("origin") {
            Ok(r) if r.url() == Some(url.as_str()) => {}
            Ok(_) => git.remote_set_url("origin", &url)?,
            Err(_) => {
                git.remote_with_fetch("origin", &url, "+refs/heads/*:refs/remotes/origin/*")?;
            }
        }
        {
            let mut remote = git.find_remote("origin")?;
            let mut opts = fetch_options(token);
            opts.prune(git2::FetchPrune::On);
            // Tags too: snapshots are numbered from the ones that exist.
            remote.fetch(
                &[
                    "+refs/heads/*:refs/remotes/origin/*",
                    "+refs/tags/*:refs/tags/*",
                ],
                Some(&mut opts),
                None,
            )?;
        }
        Ok(git)
    }

    /// A new mirror of a repository on this machine (a `file://` forge: `vibeloop run`) borrows
    /// its objects (git's alternates), so that the first fetch finds every commit there and
    /// copies nothing: a long history costs no packing.
    fn borrow_local_objects(&self, repo: &RepoName, mirror: &Path) -> Result<(), WorkspaceError> {
        if self.git_url.scheme() != "file" {
            return Ok(());
        }
        let Ok(remote) = url::Url::parse(&self.remote_url(repo)) else {
            return Ok(());
        };
        let Ok(objects) = remote.to_file_path().map(|p| p.join("objects")) else {
            return Ok(());
        };
        if objects.is_dir() {
            std::fs::write(
                mirror.join("objects/info/alternates"),
                format!("{}\n", objects.display()),
            )?;
        }
        Ok(())
    }

    /// The commit `origin/<branch>` points at in the mirror.
    pub fn remote_head(&self, git: &Repository, branch: &str) -> Result<CommitSha, WorkspaceError> {
        let reference = git
            .find_reference(&format!("refs/remotes/origin/{branch}"))
            .map_err(|_| WorkspaceError::MissingBranch(branch.to_owned()))?;
        Ok(reference.peel_to_commit()?.id().into())
    }

    /// A file's text at `origin/<branch>`, or `None` when the file does not exist there.
    pub fn read_remote_file(
        &self,
        git: &Repository,
        branch: &str,
        path: &str,
    ) -> Result<Option<String>, WorkspaceError> {
        let sha = self.remote_head(git, branch)?;
        let tree = git
            .find_commit(git2::Oid::from_str(sha.as_str())?)?
            .tree()?;
        let entry = match tree.get_path(Path::new(path)) {
            Ok(e) => e,
            Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let blob = entry.to_object(git)?.peel_to_blob()?;
        Ok(Some(String::from_utf8_lossy(blob.content()).into_owned()))
    }

    /// Checks out `branch`, freshly made from `origin/<base>`, in its own worktree, with
    /// `room_mb` MiB its commands may write (`limits.disk_mb`). A worktree or branch left
    /// from an earlier run is replaced.
    pub fn fresh_worktree(
        &self,
        repo: &RepoName,
        git: &Repository,
        branch: &str,
        (base, room_mb): (&str, u64),
    ) -> Result<Worktree, WorkspaceError> {
        let base_commit = git
            .find_reference(&format!("refs/remotes/origin/{base}"))
            .map_err(|_| WorkspaceError::MissingBranch(base.to_owned()))?
            .peel_to_commit()?;
        self.worktree_at(repo, git, branch, (base_commit.id(), room_mb))
    }

    /// Checks out `branch`, made (or reset) to `commit`, in its own worktree, with `room_mb`
    /// MiB its commands may write (`limits.disk_mb`); `base` of the result is `commit`. With
    /// `room_mb` 0 no command runs in it (a model only reads it): a plain directory, no disk.
    pub fn worktree_at(
        &self,
        repo: &RepoName,
        git: &Repository,
        branch: &str,
        at: (git2::Oid, u64),
    ) -> Result<Worktree, WorkspaceError> {
        let wt = self
            .mirror_lock(repo)
            .hold(|| self.worktree_at_locked(repo, git, branch, at))?;
        wt.check_out()?;
        Ok(wt)
    }

    fn worktree_at_locked(
        &self,
        repo: &RepoName,
        git: &Repository,
        branch: &str,
        (commit, room_mb): (git2::Oid, u64),
    ) -> Result<Worktree, WorkspaceError> {
        let name = branch.replace('/', "-");
        let path = self.worktree_path(repo, branch);
        self.remove_worktree(git, &name, &path)?;
        let commit = git.find_commit(commit)?;
        git.branch(branch, &commit, true)?;
        let root = self.disk_root(repo, branch);
        if self.disks && room_mb > 0 {
            let (bytes, files) = checkout_size(git, &commit.tree()?)?;
            disk::make(&root, disk::Size::for_checkout(bytes, files, room_mb))?;
        } else {
            std::fs::create_dir_all(&root)?;
        }
        let admin = worktree::register(git, &name, &path, branch)?;
        Ok(Worktree {
            path,
            branch: branch.to_owned(),
            base: commit.id().into(),
            admin,
        })
    }

    /// Removes a worktree and its local branch (for scratch branches).
    pub fn drop_scratch(&self, repo: &RepoName, branch: &str) -> Result<(), WorkspaceError> {
        self.mirror_lock(repo).hold(|| {
            self.drop_worktree_locked(repo, branch)?;
            let git = Repository::open_bare(self.mirror_path(repo))?;
            if let Ok(mut b) = git.find_branch(branch, BranchType::Local) {
                b.delete()?;
            }
            Ok(())
        })
    }

    fn remove_worktree(
        &self,
        git: &Repository,
        name: &str,
        path: &Path,
    ) -> Result<(), WorkspaceError> {
        if let Ok(wt) = git.find_worktree(name) {
            let mut opts = WorktreePruneOptions::new();
            opts.valid(true).locked(true).working_tree(true);
            wt.prune(Some(&mut opts))?;
        }
        if path.exists() {
            std::fs::remove_dir_all(path)?;
        }
        if let Some(root) = path.parent() {
            disk::release(root)?;
        }
        // What an add interrupted by a crash leaves: git's administrative directory for the
        // worktree, too incomplete to be found as one, but in the way of the next add.
        let admin = git.path().join("worktrees").join(name);
        if admin.exists() {
            std::fs::remove_dir_all(&admin)?;
        }
        Ok(())
    }

    /// Removes the worktree of `branch`, keeping the branch.
    pub fn drop_worktree(&self, repo: &RepoName, branch: &str) -> Result<(), WorkspaceError> {
        self.mirror_lock(repo)
            .hold(|| self.drop_worktree_locked(repo, branch))
    }

    fn drop_worktree_locked(&self, repo: &RepoName, branch: &str) -> Result<(), WorkspaceError> {
        let git = Repository::open_bare(self.mirror_path(repo))?;
        self.remove_worktree(
            &git,
            &branch.replace('/', "-"),
            &self.worktree_path(repo, branch),
        )
    }

    /// Commits every change in the worktree (new, changed and deleted files, `.gitignore`
    /// respected). `None` when there was nothing to commit.
    pub fn commit_all(
        &self,
        wt: &Worktree,
        message: &str,
        author: &Author,
    ) -> Result<Option<CommitSha>, WorkspaceError> {
        let git = wt.open()?;
        let mut index = git.index()?;
        index.add_all(["*"], IndexAddOption::DEFAULT, None)?;
        Self::commit_index(&git, index, message, author, &|_| true)
    }

    /// Commits an agent's work: changes to tracked files and deletions, and of the new files
    /// only those in `written` (what its tools wrote; `.gitignore` respected). Whatever else a
    /// command left in the worktree — caches, build output, a test's junk — stays out, and so
    /// does every path `within` refuses (what the agent may not change, whatever changed it).
    pub fn commit_written(
        &self,
        wt: &Worktree,
        message: &str,
        author: &Author,
        written: &[String],
        within: &dyn Fn(&str) -> bool,
    ) -> Result<Option<CommitSha>, WorkspaceError> {
        let git = wt.open()?;
        let mut index = git.index()?;
        for rel in written.iter().filter(|r| within(r)) {
            let path = Path::new(rel);
            // Reached through no link: libgit2 would read a file behind a linked directory.
            let Ok(Some(at)) = crate::untrusted::files::resolve(&wt.path, rel) else {
                continue;
            };
            let is_file = std::fs::symlink_metadata(at)
                .is_ok_and(|m| m.is_file() || m.file_type().is_symlink());
            if is_file && !git.is_path_ignored(path)? {
                index.add_path(path)?;
            }
        }
        Self::commit_index(&git, index, message, author, within)
    }

    /// Stages changes and deletions of tracked files `within` allows on top of `index`, then
    /// commits it; a symbolic link that leads out of the repository is refused.
    fn commit_index(
        git: &Repository,
        mut index: git2::Index,
        message: &str,
        author: &Author,
        within: &dyn Fn(&str) -> bool,
    ) -> Result<Option<CommitSha>, WorkspaceError> {
        // 0 stages the path, a positive answer leaves it as the index has it.
        let mut keep = |path: &Path, _: &[u8]| i32::from(!within(&path.to_string_lossy()));
        index.update_all(["*"], Some(&mut keep))?;
        refuse_links_out(git, &index)?;
        index.write()?;
        let tree_id = index.write_tree()?;
        let head = git.head()?.peel_to_commit()?;
        if head.tree_id() == tree_id {
            return Ok(None);
        }
        let tree = git.find_tree(tree_id)?;
        let sig = Signature::now(&author.name, &author.email)?;
        let message = author.message(message);
        let oid = git.commit(Some("HEAD"), &sig, &sig, &message, &tree, &[&head])?;
        Ok(Some(oid.into()))
    }

    /// Removes the mirror of `repo` and its worktrees: another repository holds its name now,
    /// and the one before's objects, branches and files are not to be taken for its.
    pub fn forget(&self, repo: &RepoName) -> Result<(), WorkspaceError> {
        let gone = |path: PathBuf| match std::fs::remove_dir_all(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        };
        let worktrees = self
            .root
            .join("worktrees")
            .join(repo.owner())
            .join(repo.name());
        self.mirror_lock(repo).hold(|| {
            // Each worktree's disk first: a mount is not removed with its directory.
            disk::release_all(&worktrees)?;
            Ok(gone(self.mirror_path(repo)).and(gone(worktrees))?)
        })
    }
}
