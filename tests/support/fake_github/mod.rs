//! The test suite's fake GitHub: Vibeloop's own forge ([`vibeloop::forge`]: the REST subset the
//! bot uses over real bare repositories, with the App's JWT and installation tokens checked)
//! served over real HTTP on 127.0.0.1, plus what only tests need, in [`layer`]: git smart HTTP
//! (through `git http-backend`, the installation token as the password), every request
//! recorded, injected faults (an HTTP status, optionally with `Retry-After`, optionally after
//! doing the work — the ambiguous failure that makes naive retries duplicate things) and
//! latency, signed webhooks with GitHub's delivery log ([`hooks`]), branch protection
//! ([`protection`]), merge queues ([`queue`]), the App-manifest exchange ([`apps`]) and OAuth sign-in ([`oauth`]). The people — users, their comments and reviews,
//! buttons pressed, a maintainer's pushes and merges — are in `helpers.rs` and `by_hand.rs`;
//! another CI's checks and statuses in `ci.rs`.

mod apps;
mod by_hand;
mod ci;
mod helpers;
mod hooks;
mod layer;
mod oauth;
mod protection;
mod queue;
mod rulesets;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use vibeloop::forge::Forge;

// Each test binary uses a different part of the forge's vocabulary.
#[allow(unused_imports)]
pub use ci::JobRun;
#[allow(unused_imports)]
pub use protection::Protection;
#[allow(unused_imports)]
pub use rulesets::{Rule, Ruleset};
#[allow(unused_imports)]
pub use vibeloop::forge::json::user_json;
#[allow(unused_imports)]
pub use vibeloop::forge::{
    BOT_LOGIN, CheckRun, Comment, CommitStatus, Issue, Pull, Repo, Review, ReviewComment, State,
    gitops,
};

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
    /// Do the work, then answer as usual but this late (`status` 0: no fault status).
    pub late: Option<Duration>,
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
            late: None,
        }
    }

    /// Do the next `method` request to a path ending in `path_suffix`, then answer it `delay`
    /// late: what the caller did is on GitHub before the caller knows it.
    pub fn late(method: &'static str, path_suffix: &str, delay: Duration) -> Self {
        Self {
            late: Some(delay),
            after_effect: true,
            ..Self::new(method, path_suffix, 0)
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

/// What the fake keeps beside the forge's state: the tests' side.
#[derive(Default)]
pub struct Extras {
    pub requests: Vec<Recorded>,
    faults: Vec<Fault>,
    /// Every webhook sent, as GitHub's delivery log keeps them.
    hook_deliveries: Vec<hooks::HookDelivery>,
    /// Added before every REST answer (not git's), to make each step of a client take a while.
    latency: Duration,
    /// JWT claims of every App request the forge accepted, for tests of the app's JWT.
    pub jwt_claims: Vec<Value>,
    /// Where signed webhooks go: `(receiver base URL, secret)`.
    webhook: Option<(String, String)>,
    /// App-manifest codes not yet exchanged → the App the exchange answers (`apps.rs`).
    manifest_codes: std::collections::BTreeMap<String, Value>,
    /// The App's OAuth client and the sign-ins in progress (`oauth.rs`).
    oauth: oauth::OAuthApp,
    /// Branch protection and the merge methods repositories turn off (`protection.rs`).
    pub rules: protection::Rules,
    /// GitHub Actions' jobs: logs, scripted re-runs, downloads (`ci.rs`).
    pub actions: ci::Actions,
    /// Merge queues (`queue.rs`).
    queue: queue::Queue,
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
    forge: Forge,
    extras: Arc<Mutex<Extras>>,
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
        let forge = Forge::new(vibeloop::forge::Options {
            app_id: opts.app_id,
            public_key_pem: opts.public_key_pem,
            git_root: opts.git_root.clone(),
            token_ttl: opts.token_ttl,
        })
        .expect("forge");
        let extras = Arc::new(Mutex::new(Extras::default()));
        let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = layer::router(&forge, extras.clone());
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self {
            url: format!("http://{addr}"),
            addr,
            git_root: opts.git_root,
            forge,
            extras,
            server,
        }
    }

    /// The forge's state, for direct inspection.
    pub fn state(&self) -> MutexGuard<'_, State> {
        self.forge.state()
    }

    fn shared(&self) -> layer::Shared {
        layer::Shared::new(&self.forge, self.extras.clone())
    }

    /// The tests' side of the fake.
    pub fn extras(&self) -> MutexGuard<'_, Extras> {
        self.extras.lock().unwrap()
    }

    pub fn add_installation(&self, id: u64, account: &str) {
        self.forge.add_installation(id, account);
    }

    /// Creates bare repository `full_name` with `files` committed on `main`, visible to
    /// `installation`.
    pub fn add_repo(&self, installation: u64, full_name: &str, files: &[(&str, &str)]) -> PathBuf {
        let path = self.bare_path(full_name);
        crate::support::repos::seed_bare(&path, "main", files);
        self.register_repo(installation, full_name);
        path
    }

    /// Deletes repository `full_name`: one made again under the name is another repository,
    /// with another id.
    pub fn delete_repo(&self, full_name: &str) {
        self.forge.delete_repo(full_name);
    }

    /// Renames (or transfers) repository `from` to `to`: the same repository and id.
    pub fn rename_repo(&self, from: &str, to: &str) {
        self.forge.rename_repo(from, to).expect("renamed");
    }

    /// Registers an existing bare repository (`<git_root>/<full_name>.git`) with `installation`.
    pub fn register_repo(&self, installation: u64, full_name: &str) {
        self.forge
            .register_repo(installation, full_name)
            .expect("bare repository");
    }

    /// Sends webhooks to `receiver` (the bot's base URL), signed with `secret`.
    pub fn set_webhook(&self, receiver: &str, secret: &str) {
        self.extras().webhook = Some((receiver.to_owned(), secret.to_owned()));
    }

    /// Sends a signed delivery of `event` to the configured receiver.
    pub async fn send_webhook(&self, event: &str, body: &[u8]) -> crate::support::payloads::Sent {
        self.deliver(event, body, None).await
    }

    /// A maintainer ([`LABELLER`], given the maintain role where they hold none) puts `label`
    /// on issue `number` of `repo` (stored, see [`FakeGitHub::labels`]): GitHub sends
    /// `issues.labeled`.
    pub async fn label_issue(
        &self,
        repo: &str,
        number: u64,
        label: &str,
    ) -> crate::support::payloads::Sent {
        ensure_role(&mut self.state(), repo, LABELLER, "maintain");
        self.label_issue_as(repo, number, label, LABELLER).await
    }

    /// `sender` puts `label` on issue `number`, whatever their permission.
    pub async fn label_issue_as(
        &self,
        repo: &str,
        number: u64,
        label: &str,
        sender: &str,
    ) -> crate::support::payloads::Sent {
        let (installation, issue) = {
            let mut st = self.state();
            st.users.insert(sender.to_owned());
            let r = st.repos.get_mut(repo).expect("repo added");
            r.add_label(number, label);
            (r.installation, r.issues[&number].clone())
        };
        let body = crate::support::payloads::issues_labeled_by(
            repo,
            Some(installation),
            number,
            &issue.title,
            &issue.body,
            label,
            sender,
        );
        self.send_webhook("issues", &body).await
    }

    pub fn add_issue(&self, repo: &str, title: &str, body: &str) -> u64 {
        self.forge.add_issue(repo, title, body).expect("repo added")
    }

    /// An issue `author` opened (no webhook).
    pub fn add_issue_by(&self, repo: &str, author: &str, title: &str, body: &str) -> u64 {
        self.forge
            .add_issue_by(repo, author, title, body)
            .expect("repo added")
    }

    pub fn comments(&self, repo: &str, issue: u64) -> Vec<Comment> {
        self.forge.comments(repo, issue)
    }

    /// The pull requests of `repo`; an open one's `head_sha` follows its branch, as on GitHub.
    pub fn pulls(&self, repo: &str) -> Vec<Pull> {
        self.forge.pulls(repo)
    }

    pub fn check_runs(&self, repo: &str) -> Vec<CheckRun> {
        self.forge.check_runs(repo)
    }

    pub fn reactions(&self, repo: &str) -> Vec<(u64, String)> {
        self.state().repos[repo].reactions.clone()
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.extras().requests.clone()
    }

    /// JWT claims of every App request the fake accepted.
    pub fn jwt_claims(&self) -> Vec<Value> {
        self.extras().jwt_claims.clone()
    }

    /// Every REST answer from now on comes `latency` late.
    pub fn set_latency(&self, latency: Duration) {
        self.extras().latency = latency;
    }

    pub fn inject(&self, fault: Fault) {
        self.extras().faults.push(fault);
    }

    /// GitHub works again: the faults not yet used are dropped.
    pub fn clear_faults(&self) {
        self.extras().faults.clear();
    }

    /// Every installation token the fake has handed out.
    pub fn minted_tokens(&self) -> Vec<String> {
        self.state().minted_tokens()
    }

    /// Makes every token minted so far expire now.
    pub fn expire_tokens(&self) {
        self.state().expire_tokens();
    }

    /// A token valid for every repository of `installation`, for tests that talk git directly.
    pub fn mint_token(&self, installation: u64) -> String {
        self.state().mint_token(installation, None)
    }

    pub fn bare_path(&self, repo: &str) -> PathBuf {
        self.forge.bare_path(repo)
    }

    /// The text of `path` on `branch` of `repo`, if both exist.
    pub fn file_on_branch(&self, repo: &str, branch: &str, path: &str) -> Option<String> {
        crate::support::repos::read_file(&self.bare_path(repo), branch, path)
    }

    /// Whether `branch`'s head is commit `sha` or descends from it.
    pub fn branch_contains(&self, repo: &str, branch: &str, sha: &str) -> bool {
        let git = git2::Repository::open_bare(self.bare_path(repo)).expect("bare repository");
        let (Some(head), Ok(sha)) = (self.branch_sha(repo, branch), git2::Oid::from_str(sha))
        else {
            return false;
        };
        let head = git2::Oid::from_str(&head).expect("a commit id");
        head == sha || git.graph_descendant_of(head, sha).unwrap_or(false)
    }

    pub fn branch_sha(&self, repo: &str, branch: &str) -> Option<String> {
        crate::support::repos::branch_sha(&self.bare_path(repo), branch)
    }
}

/// Who labels issues in the tests unless a test says otherwise: a maintainer.
pub const LABELLER: &str = "maintainer";

/// Gives `user` `role` on `repo` unless they hold one there already.
fn ensure_role(st: &mut State, repo: &str, user: &str, role: &str) {
    st.users.insert(user.to_owned());
    if let Some(r) = st.repos.get_mut(repo) {
        r.permissions
            .entry(user.to_owned())
            .or_insert_with(|| role.to_owned());
    }
}

/// Where the bare repository of `full_name` lives.
pub fn repo_dir(root: &Path, full_name: &str) -> PathBuf {
    vibeloop::forge::repo_dir(root, full_name)
}
