//! A GitHub-compatible forge that runs in-process on 127.0.0.1: the REST subset the hive uses,
//! over real bare repositories on disk. `vibeloop run` runs the unchanged hive against it, so a
//! local repository gets branches, a pull request, check runs and a review without GitHub; the
//! test suite's fake GitHub is this forge plus faults, webhooks and people (`tests/support/`).
//!
//! Like GitHub it checks the App's JWT (RS256, against the App's public key; `iat`/`exp` sane)
//! on installation-token requests, mints repository-scoped tokens that expire, and refuses API
//! calls without a valid token. Git itself is not served: clients reach the bare repositories
//! by path (`file://`), or through a git server of their own.
//!
//! REST routes (in [`rest`]): issues, issue comments and their reactions, labels, collaborator
//! permission; check runs and commit statuses; pull requests with their files, reviews and
//! review comments; and the git database — refs, annotated tags, commits, compare — computed from
//! and applied to the bare repository with git2 ([`gitops`]) — and a pull request's merge, by
//! the three methods. No branch is protected and every merge method is allowed: branch
//! protection is what the test suite's fake GitHub adds in front (`tests/support/`).
//!
//! Where GitHub's behaviour is not documented, the forge picks:
//! * collaborator permission: a role in [`Repo::permissions`] answers its legacy base permission
//!   (`maintain` → `write`, `triage` → `read`) with `role_name` = the role; a user that exists but
//!   holds no role answers `permission: "none"`; an unknown login is 404 `"<login> is not a user"`.
//! * the bot ([`BOT_LOGIN`]) authors every pull request made through the API, so `APPROVE` and
//!   `REQUEST_CHANGES` on them are GitHub's 422 (`"Can not approve your own pull request"`).
//! * `draft` is set on create only; `PATCH …/pulls/{n}` ignores it as GitHub does (ready for
//!   review is a GraphQL mutation, `markPullRequestReadyForReview`, the one GraphQL call served).
//! * `PUT …/pulls/{n}/merge` answers as GitHub does: 409 when `sha` is not the head, 405 "Pull
//!   Request is not mergeable" on conflicts or when it is closed; the merge and squash commits
//!   are the bot's, committed by `GitHub`, and a rebase commits each commit anew.

pub mod gitops;
pub mod rest;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::Serialize;

pub use rest::json;

/// The app's bot user: the author of everything done with an installation token.
pub const BOT_LOGIN: &str = "vibeloop[bot]";
/// The slug of the App the forge serves (its check runs' `app`).
pub const APP_SLUG: &str = "vibeloop";

/// An issue comment.
#[derive(Debug, Clone, Serialize)]
pub struct Comment {
    pub id: u64,
    pub issue: u64,
    pub body: String,
    pub user: String,
}

/// A pull request.
#[derive(Debug, Clone, Serialize)]
pub struct Pull {
    pub number: u64,
    pub title: String,
    pub body: String,
    pub head: String,
    pub head_sha: String,
    pub base: String,
    pub state: String,
    /// Set on create only: GitHub's REST `PATCH` ignores `draft` (ready-for-review is GraphQL).
    pub draft: bool,
    /// Who opened it ([`BOT_LOGIN`] for pull requests created through the API).
    pub user: String,
    /// Its head landed on its base.
    pub merged: bool,
    /// The commit its landing put on the base (the merge, squash or last rebased commit).
    pub merge_commit_sha: Option<String>,
    /// Who landed it.
    pub merged_by: Option<String>,
}

/// A pull request review.
#[derive(Debug, Clone, Serialize)]
pub struct Review {
    pub id: u64,
    pub pull: u64,
    pub user: String,
    /// `APPROVED`, `CHANGES_REQUESTED`, `COMMENTED` or `PENDING`, as the REST API spells it.
    pub state: String,
    pub body: String,
    pub commit_id: String,
    pub submitted_at: Option<String>,
}

/// A review comment on a line of a pull request's diff.
#[derive(Debug, Clone, Serialize)]
pub struct ReviewComment {
    pub id: u64,
    pub pull: u64,
    pub review_id: u64,
    pub user: String,
    pub path: String,
    pub line: Option<u64>,
    pub start_line: Option<u64>,
    /// `LEFT` or `RIGHT`
    pub side: String,
    pub body: String,
    pub commit_id: String,
    /// The comment this one answers, in its thread.
    pub in_reply_to: Option<u64>,
}

/// A commit status (`POST /repos/{o}/{r}/statuses/{sha}`).
#[derive(Debug, Clone, Serialize)]
pub struct CommitStatus {
    pub sha: String,
    pub context: String,
    pub state: String,
    pub description: Option<String>,
    pub target_url: Option<String>,
}

/// A check run.
#[derive(Debug, Clone, Serialize)]
pub struct CheckRun {
    pub id: u64,
    pub name: String,
    pub head_sha: String,
    pub external_id: Option<String>,
    pub status: String,
    pub conclusion: Option<String>,
    pub title: Option<String>,
    pub summary: Option<String>,
    pub started_at: Option<String>,
    pub completed_at: Option<String>,
    /// Every status the run was given, in order (`queued`, `in_progress`, `completed`).
    pub statuses: Vec<String>,
    /// Annotations, appended by each create or update as GitHub does.
    pub annotations: Vec<serde_json::Value>,
    /// The buttons (`actions`) last set on the run: `{label, description, identifier}`.
    pub actions: Vec<serde_json::Value>,
    /// The App that reported it, by slug (`github-actions`…); `None`: the App the forge serves.
    pub app: Option<String>,
}

/// An issue.
#[derive(Debug, Clone)]
pub struct Issue {
    pub number: u64,
    pub title: String,
    pub body: String,
    /// Closed, by a merged pull request that closes it.
    pub closed: bool,
    /// Who opened it ([`BOT_LOGIN`] for issues created through the API).
    pub author: String,
}

/// One repository's issues, pull requests and the rest; its git objects live in the bare
/// repository.
#[derive(Debug, Default)]
pub struct Repo {
    /// GitHub's repository id: a new one for each repository created, whatever its name.
    pub id: u64,
    pub installation: u64,
    pub default_branch: String,
    pub issues: BTreeMap<u64, Issue>,
    pub pulls: Vec<Pull>,
    pub check_runs: Vec<CheckRun>,
    pub comments: Vec<Comment>,
    /// `(issue, content)`
    pub reactions: Vec<(u64, String)>,
    /// `(comment id, content)`: reactions to issue comments.
    pub comment_reactions: Vec<(u64, String)>,
    /// `(comment id, content)`: reactions to comments in review threads.
    pub review_comment_reactions: Vec<(u64, String)>,
    /// Labels on each issue or pull request, in the order they were added.
    pub labels: BTreeMap<u64, Vec<String>>,
    /// user → role (`admin`, `maintain`, `write`, `triage`, `read`, `none`).
    pub permissions: BTreeMap<String, String>,
    pub reviews: Vec<Review>,
    pub review_comments: Vec<ReviewComment>,
    pub statuses: Vec<CommitStatus>,
    /// The last issue or pull request number given out.
    last_number: u64,
}

impl Repo {
    /// The next issue or pull request number (they share one sequence, as on GitHub).
    pub fn next_number(&mut self) -> u64 {
        self.last_number += 1;
        self.last_number
    }

    /// Puts `label` on issue or pull request `n`, after its others (once, as GitHub does).
    pub fn add_label(&mut self, n: u64, label: &str) {
        let have = self.labels.entry(n).or_default();
        if !have.iter().any(|l| l == label) {
            have.push(label.to_owned());
        }
    }
}

/// An installation token the forge minted.
#[derive(Debug, Clone)]
struct Token {
    installation: u64,
    /// Repository names the token is limited to; `None` means all of the installation's.
    repos: Option<Vec<String>>,
    expires_at: chrono::DateTime<chrono::Utc>,
}

/// Everything the forge holds besides git objects.
pub struct State {
    pub app_id: u64,
    public_key: jsonwebtoken::DecodingKey,
    /// installation id → account login
    pub installations: BTreeMap<u64, String>,
    /// `owner/name` → repository
    pub repos: BTreeMap<String, Repo>,
    tokens: BTreeMap<String, Token>,
    next_id: u64,
    token_ttl: chrono::TimeDelta,
    /// Logins that exist (permission lookups of others are 404).
    pub users: BTreeSet<String>,
    /// How many repositories were made under each name (a new one under it gets a new id).
    made: BTreeMap<String, u64>,
}

/// The id GitHub gives the repository first created as `full_name` here: a hash of the name, so
/// that payloads made without the forge (`repository.id`) agree with it. The next repository
/// made under a name (`generation` 1, 2…: after a delete or a rename) gets another.
pub fn repository_id(full_name: &str, generation: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in full_name.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    ((h >> 12) + generation * 7919) & ((1 << 52) - 1)
}

impl State {
    /// A fresh id for a comment, review, check run…
    pub fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Mints an installation token for `installation`, limited to `repos` (names) when given.
    pub fn mint_token(&mut self, installation: u64, repos: Option<Vec<String>>) -> String {
        let token = format!("ghs_{:016x}{}", rand::random::<u64>(), self.next_id());
        let expires_at = chrono::Utc::now() + self.token_ttl;
        self.tokens.insert(
            token.clone(),
            Token {
                installation,
                repos,
                expires_at,
            },
        );
        token
    }

    /// When `token` expires, if the forge minted it.
    pub fn token_expiry(&self, token: &str) -> Option<chrono::DateTime<chrono::Utc>> {
        self.tokens.get(token).map(|t| t.expires_at)
    }

    /// Every installation token handed out so far.
    pub fn minted_tokens(&self) -> Vec<String> {
        self.tokens.keys().cloned().collect()
    }

    /// Makes every token minted so far expire now.
    pub fn expire_tokens(&mut self) {
        let past = chrono::Utc::now() - chrono::TimeDelta::seconds(1);
        for t in self.tokens.values_mut() {
            t.expires_at = past;
        }
    }
}

/// What the forge needs to know of the App and the disk.
pub struct Options {
    pub app_id: u64,
    /// The App's public key (PEM): installation-token requests must carry a JWT it verifies.
    pub public_key_pem: String,
    /// Where the bare repositories live (`<root>/<owner>/<name>.git`).
    pub git_root: PathBuf,
    /// How long installation tokens live.
    pub token_ttl: Duration,
}

/// Errors of setting a forge up.
#[derive(Debug, thiserror::Error)]
pub enum ForgeError {
    #[error("the App's public key is not an RSA public key in PEM: {0}")]
    PublicKey(#[from] jsonwebtoken::errors::Error),
    #[error("cannot create {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0} is not a bare git repository: {1}")]
    NotARepository(PathBuf, git2::Error),
}

/// A forge: its state and the bare repositories under one directory. Cheap to clone (shared).
#[derive(Clone)]
pub struct Forge {
    state: Arc<Mutex<State>>,
    git_root: PathBuf,
}

impl Forge {
    pub fn new(opts: Options) -> Result<Self, ForgeError> {
        std::fs::create_dir_all(&opts.git_root).map_err(|source| ForgeError::Io {
            path: opts.git_root.clone(),
            source,
        })?;
        let public_key = jsonwebtoken::DecodingKey::from_rsa_pem(opts.public_key_pem.as_bytes())?;
        let token_ttl =
            chrono::TimeDelta::from_std(opts.token_ttl).unwrap_or(chrono::TimeDelta::hours(1));
        let state = State {
            app_id: opts.app_id,
            public_key,
            installations: BTreeMap::new(),
            repos: BTreeMap::new(),
            tokens: BTreeMap::new(),
            next_id: 1000,
            token_ttl,
            users: BTreeSet::from([BOT_LOGIN.to_owned()]),
            made: BTreeMap::new(),
        };
        Ok(Self {
            state: Arc::new(Mutex::new(state)),
            git_root: opts.git_root,
        })
    }

    /// The REST API, as an axum router to serve (or to wrap).
    pub fn router(&self) -> axum::Router {
        rest::router(self.state.clone(), self.git_root.clone())
    }

    /// Serves the REST API on `listener` until the task is dropped or aborted.
    pub fn serve(&self, listener: tokio::net::TcpListener) -> tokio::task::JoinHandle<()> {
        let app = self.router();
        tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!(error = %e, "the local forge stopped");
            }
        })
    }

    /// The forge's state, for direct inspection and change.
    pub fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data behind: still readable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The state, shared, for routes served next to the forge's.
    pub fn shared(&self) -> Arc<Mutex<State>> {
        self.state.clone()
    }

    pub fn git_root(&self) -> &Path {
        &self.git_root
    }

    /// Where the bare repository of `full_name` lives.
    pub fn bare_path(&self, full_name: &str) -> PathBuf {
        repo_dir(&self.git_root, full_name)
    }

    pub fn add_installation(&self, id: u64, account: &str) {
        self.state().installations.insert(id, account.to_owned());
    }

    /// Serves the existing bare repository `<git_root>/<full_name>.git` to `installation`; its
    /// HEAD names the default branch (`main` when it cannot be read).
    pub fn register_repo(&self, installation: u64, full_name: &str) -> Result<(), ForgeError> {
        let path = self.bare_path(full_name);
        let git = git2::Repository::open_bare(&path)
            .map_err(|e| ForgeError::NotARepository(path.clone(), e))?;
        let default_branch = gitops::head_branch(&git).unwrap_or_else(|| "main".to_owned());
        let mut st = self.state();
        let made = st.made.entry(full_name.to_owned()).or_default();
        let id = repository_id(full_name, *made);
        *made += 1;
        st.repos.insert(
            full_name.to_owned(),
            Repo {
                id,
                installation,
                default_branch,
                ..Repo::default()
            },
        );
        Ok(())
    }

    /// Deletes repository `full_name` (its issues, pulls, checks and git data): a repository
    /// made again under the name is another one, with another id.
    pub fn delete_repo(&self, full_name: &str) {
        self.state().repos.remove(full_name);
        let _ = std::fs::remove_dir_all(self.bare_path(full_name));
    }

    /// Renames (or transfers) repository `from` to `to`: the same repository, with its id,
    /// issues and git data, under another name.
    pub fn rename_repo(&self, from: &str, to: &str) -> Result<(), ForgeError> {
        let target = self.bare_path(to);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|source| ForgeError::Io {
                path: parent.to_owned(),
                source,
            })?;
        }
        std::fs::rename(self.bare_path(from), &target).map_err(|source| ForgeError::Io {
            path: target.clone(),
            source,
        })?;
        let mut st = self.state();
        if let Some(r) = st.repos.remove(from) {
            st.repos.insert(to.to_owned(), r);
        }
        Ok(())
    }

    /// Files issue `title`/`body` on `repo`; returns its number.
    pub fn add_issue(&self, repo: &str, title: &str, body: &str) -> Option<u64> {
        self.add_issue_by(repo, "octocat", title, body)
    }

    /// Issue `title` opened by `author` (a person, or anyone posing as the bot).
    pub fn add_issue_by(&self, repo: &str, author: &str, title: &str, body: &str) -> Option<u64> {
        let mut st = self.state();
        let r = st.repos.get_mut(repo)?;
        let number = r.next_number();
        r.issues.insert(
            number,
            Issue {
                closed: false,
                number,
                title: title.into(),
                body: body.into(),
                author: author.into(),
            },
        );
        Some(number)
    }

    /// Gives `user` role `role` (`admin`, `maintain`, `write`, `triage`, `read`, `none`) on
    /// `repo`, as `GET …/collaborators/{user}/permission` then reports it.
    pub fn set_permission(&self, repo: &str, user: &str, role: &str) {
        let mut st = self.state();
        st.users.insert(user.to_owned());
        if let Some(r) = st.repos.get_mut(repo) {
            r.permissions.insert(user.to_owned(), role.to_owned());
        }
    }

    /// The pull requests of `repo`; an open one's `head_sha` follows its branch, as on GitHub.
    pub fn pulls(&self, repo: &str) -> Vec<Pull> {
        let bare = self.bare_path(repo);
        let mut st = self.state();
        let Some(r) = st.repos.get_mut(repo) else {
            return Vec::new();
        };
        rest::refresh_heads(r, &bare);
        r.pulls.clone()
    }

    pub fn check_runs(&self, repo: &str) -> Vec<CheckRun> {
        self.state()
            .repos
            .get(repo)
            .map(|r| r.check_runs.clone())
            .unwrap_or_default()
    }

    pub fn comments(&self, repo: &str, issue: u64) -> Vec<Comment> {
        self.state()
            .repos
            .get(repo)
            .map(|r| {
                r.comments
                    .iter()
                    .filter(|c| c.issue == issue)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Where the bare repository of `full_name` lives under `root`.
pub fn repo_dir(root: &Path, full_name: &str) -> PathBuf {
    root.join(format!("{full_name}.git"))
}
