//! A stateful fake GitHub over real HTTP on 127.0.0.1, for the REST subset Vibeloop uses plus
//! git smart-HTTP (through `git http-backend`) over bare repositories.
//!
//! Like GitHub it checks the app's JWT (RS256, against the app's public key; `iat`/`exp`
//! sane) on installation-token requests, mints repository-scoped tokens that expire, refuses API
//! calls, fetches and pushes without a valid token, records every request, and can inject
//! faults (an HTTP status, optionally with `Retry-After`, optionally after doing the work — the
//! ambiguous failure that makes naive retries duplicate things).
//!
//! REST routes (in `rest/`): issues, issue comments and their reactions, labels, collaborator
//! permission; check runs and commit statuses; pull requests with their files, reviews and
//! review comments; and the git database — refs, annotated tags, commits, compare — computed from
//! and applied to the real bare repository with git2, so git clients see every change. Branch
//! protection ([`Protection`]) is enforced on `PATCH`/`DELETE …/git/refs`, not on git pushes.
//! The tests' side (users, their comments and reviews, buttons pressed, a maintainer's pushes,
//! each with the signed webhook GitHub would send) is in `helpers.rs`.
//!
//! Where GitHub's behaviour is not documented, the fake picks:
//! * collaborator permission: a role set with [`FakeGitHub::set_permission`] answers its legacy
//!   base permission (`maintain` → `write`, `triage` → `read`) with `role_name` = the role; a
//!   user that exists but holds no role answers `permission: "none"`, `role_name: "none"`; an
//!   unknown login is 404 `"<login> is not a user"`.
//! * the bot ([`BOT_LOGIN`]) authors every pull request made through the API, so `APPROVE` and
//!   `REQUEST_CHANGES` on them are GitHub's 422 (`"Can not approve your own pull request"`).
//! * `draft` is set on create only; `PATCH …/pulls/{n}` ignores it as GitHub does (ready for
//!   review is a GraphQL mutation).
//! * protected-branch refusals use GitHub's push wording: `Required status check "X" is
//!   expected.` (missing or pending) / `is failing.`, `N of M required status checks are
//!   expected.`, `Cannot force-push to this protected branch`, `Cannot change this locked
//!   branch`, `Changes must be made through a pull request.`; a check passes when its latest
//!   check run on the new head is `success`/`neutral`/`skipped` or its latest status `success`.

mod by_hand;
mod gitops;
mod helpers;
mod hooks;
mod oauth;
mod rest;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

pub use helpers::Protection;
pub use rest::json::user_json;

/// The app's bot user: the author of everything done with an installation token.
pub const BOT_LOGIN: &str = "vibeloop[bot]";

/// One request as the fake received it.
#[derive(Debug, Clone, Serialize)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub query: String,
    pub body: Option<Value>,
    pub status: u16,
}

/// A fault to inject into the next matching requests.
#[derive(Debug, Clone)]
pub struct Fault {
    pub method: &'static str,
    /// Matches when the request path ends with this.
    pub path_suffix: String,
    pub status: u16,
    pub retry_after: Option<u64>,
    /// Do the work first, then answer with the fault (GitHub did it; the caller cannot tell).
    pub after_effect: bool,
    pub times: u32,
}

impl Fault {
    /// Answer the next `method` request to a path ending in `path_suffix` with `status`.
    pub fn new(method: &'static str, path_suffix: &str, status: u16) -> Self {
        Self {
            method,
            path_suffix: path_suffix.into(),
            status,
            retry_after: None,
            after_effect: false,
            times: 1,
        }
    }

    /// Do the work first, then fail.
    pub fn after_effect(mut self) -> Self {
        self.after_effect = true;
        self
    }

    pub fn retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    pub fn times(mut self, n: u32) -> Self {
        self.times = n;
        self
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Comment {
    pub id: u64,
    pub issue: u64,
    pub body: String,
    pub user: String,
}

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
}

/// A commit status (`POST /repos/{o}/{r}/statuses/{sha}`).
#[derive(Debug, Clone, Serialize)]
pub struct CommitStatus {
    pub sha: String,
    pub context: String,
    pub state: String,
    pub description: Option<String>,
}

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
    pub annotations: Vec<Value>,
    /// The buttons (`actions`) last set on the run: `{label, description, identifier}`.
    pub actions: Vec<Value>,
}

#[derive(Debug, Clone)]
pub struct Issue {
    pub number: u64,
    pub title: String,
    pub body: String,
    /// Closed, by a merged pull request that closes it.
    pub closed: bool,
}

#[derive(Debug, Default)]
pub struct Repo {
    pub installation: u64,
    pub issues: BTreeMap<u64, Issue>,
    pub pulls: Vec<Pull>,
    pub check_runs: Vec<CheckRun>,
    pub comments: Vec<Comment>,
    /// `(issue, content)`
    pub reactions: Vec<(u64, String)>,
    /// `(comment id, content)`: reactions to issue comments.
    pub comment_reactions: Vec<(u64, String)>,
    /// Labels on each issue or pull request, in the order they were added.
    pub labels: BTreeMap<u64, Vec<String>>,
    /// user → role (`admin`, `maintain`, `write`, `triage`, `read`, `none`).
    pub permissions: BTreeMap<String, String>,
    pub reviews: Vec<Review>,
    pub review_comments: Vec<ReviewComment>,
    pub statuses: Vec<CommitStatus>,
    /// branch → its protection rule.
    pub protections: BTreeMap<String, Protection>,
    next_number: u64,
}

#[derive(Debug, Clone)]
struct Token {
    installation: u64,
    /// Repository names the token is limited to; `None` means all of the installation's.
    repos: Option<Vec<String>>,
    expires_at: chrono::DateTime<chrono::Utc>,
}

pub struct State {
    app_id: u64,
    public_key: jsonwebtoken::DecodingKey,
    /// installation id → account login
    installations: BTreeMap<u64, String>,
    repos: BTreeMap<String, Repo>,
    tokens: BTreeMap<String, Token>,
    requests: Vec<Recorded>,
    faults: Vec<Fault>,
    /// Every webhook sent, as GitHub's delivery log keeps them.
    hook_deliveries: Vec<hooks::HookDelivery>,
    /// Added before every REST answer (not git's), to make each step of a client take a while.
    latency: Duration,
    next_id: u64,
    token_ttl: chrono::TimeDelta,
    /// JWT claims of every token request, for tests of the app's JWT.
    pub jwt_claims: Vec<Value>,
    /// Where signed webhooks go: `(receiver base URL, secret)`.
    webhook: Option<(String, String)>,
    /// Logins that exist on this GitHub (permission-level lookups of others are 404).
    pub users: BTreeSet<String>,
    /// App-manifest codes not yet exchanged → the App the exchange answers (`rest/apps.rs`).
    manifest_codes: BTreeMap<String, Value>,
    /// The App's OAuth client and the sign-ins in progress (`oauth.rs`).
    oauth: oauth::OAuthApp,
}

impl State {
    fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }
}

/// What a fake needs to know of the app.
pub struct Options {
    pub app_id: u64,
    pub public_key_pem: String,
    /// Where the bare repositories live (`<root>/<owner>/<name>.git`).
    pub git_root: PathBuf,
    pub token_ttl: Duration,
}

/// A running fake GitHub.
pub struct FakeGitHub {
    pub url: String,
    pub addr: SocketAddr,
    pub git_root: PathBuf,
    state: Arc<Mutex<State>>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for FakeGitHub {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl FakeGitHub {
    pub async fn start(opts: Options) -> Self {
        Self::start_on("127.0.0.1:0".parse().unwrap(), opts).await
    }

    pub async fn start_on(addr: SocketAddr, opts: Options) -> Self {
        std::fs::create_dir_all(&opts.git_root).unwrap();
        let state = Arc::new(Mutex::new(State {
            app_id: opts.app_id,
            public_key: jsonwebtoken::DecodingKey::from_rsa_pem(opts.public_key_pem.as_bytes())
                .expect("public key PEM"),
            installations: BTreeMap::new(),
            repos: BTreeMap::new(),
            tokens: BTreeMap::new(),
            requests: Vec::new(),
            faults: Vec::new(),
            hook_deliveries: Vec::new(),
            latency: Duration::ZERO,
            next_id: 1000,
            token_ttl: chrono::TimeDelta::from_std(opts.token_ttl).unwrap(),
            jwt_claims: Vec::new(),
            webhook: None,
            users: BTreeSet::from([BOT_LOGIN.to_owned()]),
            manifest_codes: BTreeMap::new(),
            oauth: oauth::OAuthApp::default(),
        }));
        let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = rest::router(state.clone(), opts.git_root.clone());
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self {
            url: format!("http://{addr}"),
            addr,
            git_root: opts.git_root,
            state,
            server,
        }
    }

    /// The fake's state, for direct inspection.
    pub fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }

    pub fn add_installation(&self, id: u64, account: &str) {
        self.state().installations.insert(id, account.to_owned());
    }

    /// Creates bare repository `full_name` with `files` committed on `main`, visible to
    /// `installation`.
    pub fn add_repo(&self, installation: u64, full_name: &str, files: &[(&str, &str)]) -> PathBuf {
        let path = self.git_root.join(format!("{full_name}.git"));
        crate::support::repos::seed_bare(&path, "main", files);
        self.register_repo(installation, full_name);
        path
    }

    /// Registers an existing bare repository (`<git_root>/<full_name>.git`) with `installation`.
    pub fn register_repo(&self, installation: u64, full_name: &str) {
        self.state().repos.insert(
            full_name.to_owned(),
            Repo {
                installation,
                next_number: 0,
                ..Repo::default()
            },
        );
    }

    /// Sends webhooks to `receiver` (the bot's base URL), signed with `secret`.
    pub fn set_webhook(&self, receiver: &str, secret: &str) {
        self.state().webhook = Some((receiver.to_owned(), secret.to_owned()));
    }

    /// Sends a signed delivery of `event` to the configured receiver.
    pub async fn send_webhook(&self, event: &str, body: &[u8]) -> crate::support::payloads::Sent {
        self.deliver(event, body, None).await
    }

    /// Puts `label` on issue `number` of `repo` (stored, see [`FakeGitHub::labels`]): GitHub
    /// sends `issues.labeled`.
    pub async fn label_issue(
        &self,
        repo: &str,
        number: u64,
        label: &str,
    ) -> crate::support::payloads::Sent {
        let (installation, issue) = {
            let mut st = self.state();
            let r = st.repos.get_mut(repo).expect("repo added");
            let labels = r.labels.entry(number).or_default();
            if !labels.iter().any(|l| l == label) {
                labels.push(label.to_owned());
            }
            (r.installation, r.issues[&number].clone())
        };
        let body = crate::support::payloads::issues_labeled(
            repo,
            Some(installation),
            number,
            &issue.title,
            &issue.body,
            label,
        );
        self.send_webhook("issues", &body).await
    }

    pub fn add_issue(&self, repo: &str, title: &str, body: &str) -> u64 {
        let mut st = self.state();
        let r = st.repos.get_mut(repo).expect("repo added");
        r.next_number += 1;
        let number = r.next_number;
        r.issues.insert(
            number,
            Issue {
                closed: false,
                number,
                title: title.into(),
                body: body.into(),
            },
        );
        number
    }

    pub fn comments(&self, repo: &str, issue: u64) -> Vec<Comment> {
        self.state().repos[repo]
            .comments
            .iter()
            .filter(|c| c.issue == issue)
            .cloned()
            .collect()
    }

    /// The pull requests of `repo`; an open one's `head_sha` follows its branch, as on GitHub.
    pub fn pulls(&self, repo: &str) -> Vec<Pull> {
        let bare = self.bare_path(repo);
        let mut st = self.state();
        let r = st.repos.get_mut(repo).expect("repo added");
        rest::refresh_heads(r, &bare);
        r.pulls.clone()
    }

    pub fn check_runs(&self, repo: &str) -> Vec<CheckRun> {
        self.state().repos[repo].check_runs.clone()
    }

    pub fn reactions(&self, repo: &str) -> Vec<(u64, String)> {
        self.state().repos[repo].reactions.clone()
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state().requests.clone()
    }

    /// Every REST answer from now on comes `latency` late.
    pub fn set_latency(&self, latency: Duration) {
        self.state().latency = latency;
    }

    pub fn inject(&self, fault: Fault) {
        self.state().faults.push(fault);
    }

    /// Makes every token minted so far expire now.
    /// Every installation token the fake has handed out.
    pub fn minted_tokens(&self) -> Vec<String> {
        self.state().tokens.keys().cloned().collect()
    }

    pub fn expire_tokens(&self) {
        let past = chrono::Utc::now() - chrono::TimeDelta::seconds(1);
        for t in self.state().tokens.values_mut() {
            t.expires_at = past;
        }
    }

    /// A token the fake minted, valid for `repo`, for tests that talk git directly.
    pub fn mint_token(&self, installation: u64) -> String {
        let mut st = self.state();
        let token = format!("ghs_test{}", st.next_id());
        let expires_at = chrono::Utc::now() + st.token_ttl;
        st.tokens.insert(
            token.clone(),
            Token {
                installation,
                repos: None,
                expires_at,
            },
        );
        token
    }

    pub fn bare_path(&self, repo: &str) -> PathBuf {
        self.git_root.join(format!("{repo}.git"))
    }

    /// The text of `path` on `branch` of `repo`, if both exist.
    pub fn file_on_branch(&self, repo: &str, branch: &str, path: &str) -> Option<String> {
        crate::support::repos::read_file(&self.bare_path(repo), branch, path)
    }

    pub fn branch_sha(&self, repo: &str, branch: &str) -> Option<String> {
        crate::support::repos::branch_sha(&self.bare_path(repo), branch)
    }
}

/// Where the bare repository of `full_name` lives.
pub fn repo_dir(root: &Path, full_name: &str) -> PathBuf {
    root.join(format!("{full_name}.git"))
}
