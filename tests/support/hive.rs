//! A whole hive for end-to-end tests: the fake GitHub with a small Python repository and an
//! issue, the fake model server with a script per role, and the real bot binary pointed at
//! both. [`calc`] is the repository most tests use; [`happy_script`] the script of a ticket
//! that goes through without a hitch.

use std::time::Duration;

use serde_json::{Value, json};

use super::bot::{Bot, BotEnv, app_public_key};
use super::fake_github::{self, FakeGitHub};
use super::fake_llm::{FakeLlm, Script, Step};
use vibeloop::ids::RepoName;
use vibeloop::ticket::TaskState;

pub const REPO: &str = "acme/widgets";
pub const INSTALLATION: u64 = 7;
pub const APP_ID: u64 = 4242;
pub const SECRET: &str = "webhook-secret-for-tests";
pub const MAINTAINER: &str = "maintainer";
pub const WAIT: Duration = Duration::from_secs(120);

pub const CALC_BUGGY: &str = "def add(a, b):\n    return a - b\n";
pub const CALC_FIXED: &str = "def add(a, b):\n    return a + b\n";
pub const CALC_WRONG: &str = "def add(a, b):\n    return a * b\n";
pub const TESTS: &str = "import unittest\n\nfrom calc import add\n\n\nclass AddTest(unittest.TestCase):\n    def test_adds(self):\n        self.assertEqual(add(2, 3), 5)\n";
pub const NEW_TESTS: &str = "import unittest\n\nfrom calc import add\n\n\nclass AddMore(unittest.TestCase):\n    def test_negative(self):\n        self.assertEqual(add(-2, -3), -5)\n";
pub const HIVE_YML: &str = "gates: { test: \"python3 -m unittest -v\" }\n";

/// The files of the repository: a bug, a test that shows it, the config.
pub fn calc(hive_yml: &str) -> Vec<(&'static str, String)> {
    vec![
        ("calc.py", CALC_BUGGY.into()),
        ("test_calc.py", TESTS.into()),
        (".github/hive.yml", hive_yml.into()),
    ]
}

pub fn plan_json() -> String {
    json!({
        "ticket": { "type": "bugfix", "goal": "add(a, b) returns the sum a + b", "context_refs": ["calc.py"] },
        "plan": {
            "title": "Make add() add",
            "description": "add() subtracts its arguments; it must return their sum.",
            "steps": [{ "input": "calc.py", "output": "add returns a + b", "validation_criteria": "test_add_more and test_calc pass" }],
            "dependencies": [],
        },
        "open_questions": [],
    })
    .to_string()
}

pub fn approve_json() -> String {
    json!({ "verdict": "approve", "summary": "Correct and minimal.", "comments": [] }).to_string()
}

pub fn writes(path: &str, content: &str, then: &str) -> Vec<Step> {
    vec![
        Step::tool("write_file", json!({ "path": path, "content": content })),
        Step::say(then),
    ]
}

/// Writes each of `files`, and is done.
pub fn writing(files: &[(&str, &str)]) -> Vec<Step> {
    let mut steps: Vec<Step> = files
        .iter()
        .map(|(p, t)| Step::tool("write_file", json!({ "path": p, "content": t })))
        .collect();
    steps.push(Step::say("Done."));
    steps
}

/// The Breaker's steps: `first`, then its usual failing test.
pub fn breaker_after(first: Vec<Step>) -> Vec<Step> {
    let mut steps = first;
    steps.extend(writes(
        "test_add_more.py",
        NEW_TESTS,
        "A test for negative numbers.",
    ));
    steps
}

/// Architect plans, Breaker writes a failing test, Builder fixes, Critic approves.
pub fn happy_script() -> Script {
    Script::from([
        ("architect".to_owned(), vec![Step::say(&plan_json())]),
        ("breaker".to_owned(), breaker_after(vec![])),
        (
            "builder".to_owned(),
            writes("calc.py", CALC_FIXED, "add() adds now."),
        ),
        ("critic".to_owned(), vec![Step::say(&approve_json())]),
    ])
}

/// A bot and what it is pointed at. Fields drop in this order: the bot first (stopped, its
/// containers removed) while its data directory still exists, the directory last.
pub struct World {
    pub bot: Bot,
    pub gh: FakeGitHub,
    pub llm: FakeLlm,
    pub env: BotEnv,
    pub issue: u64,
    pub dir: tempfile::TempDir,
}

impl World {
    pub async fn start(script: Script, files: &[(&str, String)]) -> World {
        Self::start_with(script, files, vec![]).await
    }

    pub async fn start_with(
        script: Script,
        files: &[(&str, String)],
        extra: Vec<(String, String)>,
    ) -> World {
        Self::start_prepared(script, files, extra, |_| {}).await
    }

    /// Like [`World::start_with`], with `prepare` called on the bot's data directory (made,
    /// empty) before the bot starts: a test mounts a small file system there, say.
    pub async fn start_prepared(
        script: Script,
        files: &[(&str, String)],
        extra: Vec<(String, String)>,
        prepare: impl FnOnce(&std::path::Path),
    ) -> World {
        Self::launch(script, files, extra, prepare, false).await
    }

    /// Like [`World::start_with`], with the bot started as a new user starts it: in a working
    /// directory of its own (`<tmp>/home`), on the default data directory `./.vibeloop`.
    pub async fn start_in_a_working_directory(
        script: Script,
        files: &[(&str, String)],
        extra: Vec<(String, String)>,
    ) -> World {
        Self::launch(script, files, extra, |_| {}, true).await
    }

    async fn launch(
        script: Script,
        files: &[(&str, String)],
        extra: Vec<(String, String)>,
        prepare: impl FnOnce(&std::path::Path),
        in_working_directory: bool,
    ) -> World {
        let dir = tempfile::tempdir().unwrap();
        let gh = FakeGitHub::start(fake_github::Options {
            app_id: APP_ID,
            public_key_pem: app_public_key(),
            git_root: dir.path().join("github"),
            token_ttl: Duration::from_secs(3600),
        })
        .await;
        gh.add_installation(INSTALLATION, "acme");
        let refs: Vec<(&str, &str)> = files.iter().map(|(p, c)| (*p, c.as_str())).collect();
        gh.add_repo(INSTALLATION, REPO, &refs);
        gh.set_permission(REPO, MAINTAINER, "write");
        let issue = gh.add_issue(
            REPO,
            "add() subtracts",
            "`add(2, 3)` returns -1; it should return 5.",
        );
        let llm = FakeLlm::start(script).await;
        let cwd = in_working_directory.then(|| dir.path().join("home"));
        let data_dir = match &cwd {
            // Made by the bot itself, as on a new user's machine.
            Some(cwd) => {
                std::fs::create_dir_all(cwd).unwrap();
                cwd.join(".vibeloop")
            }
            None => {
                let data_dir = dir.path().join("data");
                std::fs::create_dir_all(&data_dir).unwrap();
                prepare(&data_dir);
                data_dir
            }
        };
        let env = BotEnv {
            data_dir,
            github_api_url: gh.url.clone(),
            llm_url: llm.url.clone(),
            webhook_secret: SECRET.into(),
            app_id: Some(APP_ID),
            extra,
            cwd,
        };
        let bot = Bot::start(&env).await;
        gh.set_webhook(&bot.url, SECRET);
        World {
            dir,
            gh,
            llm,
            bot,
            env,
            issue,
        }
    }

    pub async fn label(&self) {
        let sent = self.gh.label_issue(REPO, self.issue, "hive").await;
        assert_eq!(sent.status, 202, "{}", sent.text);
    }

    pub async fn ticket(&self) -> Option<vibeloop::store::tickets::Ticket> {
        let store = self.bot.store().await;
        let t = store
            .ticket_for_issue(&RepoName::parse(REPO).unwrap(), self.issue)
            .await
            .unwrap();
        store.close().await;
        t
    }

    /// Waits until the ticket is in `state`.
    pub async fn wait_state(&self, state: TaskState) -> vibeloop::store::tickets::Ticket {
        self.wait_state_within(state, WAIT).await
    }

    /// Waits until the ticket is in `state`, for at most `timeout` (a compiled ecosystem's
    /// ticket builds its environment and every attempt).
    pub async fn wait_state_within(
        &self,
        state: TaskState,
        timeout: Duration,
    ) -> vibeloop::store::tickets::Ticket {
        self.bot
            .wait_until(&format!("the ticket to be {state}"), timeout, || async {
                self.ticket().await.filter(|t| t.state == state)
            })
            .await
    }

    /// The bot's Docker backend (the same instance label, so it sees the bot's containers).
    pub async fn docker(&self) -> vibeloop::sandbox::docker::DockerBackend {
        let kind = Some(vibeloop::sandbox::Kind::Docker);
        match vibeloop::sandbox::Backend::detect(&self.env.data_dir, kind).await {
            Ok((vibeloop::sandbox::Backend::Docker(d), _)) => d,
            _ => panic!("a Docker engine answers (this test needs one)"),
        }
    }

    /// Asserts that `main` holds each file with its text.
    pub fn assert_on_main(&self, files: &[(&str, &str)]) {
        for (path, text) in files {
            assert_eq!(
                self.gh.file_on_branch(REPO, "main", path).as_deref(),
                Some(*text),
                "{path} on main"
            );
        }
    }

    /// The status comment's body.
    pub fn status_comment(&self) -> String {
        self.gh
            .comments(REPO, self.issue)
            .into_iter()
            .find(|c| c.body.contains("<!-- vibeloop:status"))
            .map(|c| c.body)
            .unwrap_or_default()
    }

    /// A maintainer comments on the issue.
    pub async fn say(&self, body: &str) -> u64 {
        self.say_as(MAINTAINER, body).await
    }

    pub async fn say_as(&self, user: &str, body: &str) -> u64 {
        let (id, sent) = self.gh.comment_on(REPO, self.issue, user, body).await;
        assert_eq!(sent.status, 202, "{}", sent.text);
        id
    }

    /// The bot's reply to a comment's command line.
    pub async fn reply_to(&self, comment: u64) -> String {
        self.reply_on(self.issue, comment).await
    }

    /// The bot's reply to the command line of a comment on issue or pull request `number`.
    pub async fn reply_on(&self, number: u64, comment: u64) -> String {
        let marker = format!("<!-- vibeloop:reply comment:{comment}#");
        self.bot
            .wait_until("the bot's reply", WAIT, || async {
                self.gh
                    .comments(REPO, number)
                    .into_iter()
                    .find(|c| c.body.contains(&marker))
                    .map(|c| c.body)
            })
            .await
    }

    /// Every checkpoint of the ticket, as `node` names.
    pub async fn checkpoints(&self) -> Vec<String> {
        let Some(t) = self.ticket().await else {
            return vec![];
        };
        let store = self.bot.store().await;
        let cps = store.checkpoints(t.key).await.unwrap();
        store.close().await;
        cps.into_iter().map(|c| c.node).collect()
    }
}

/// The JSON value of a request's tool result `i`.
pub fn json_of(v: &Value) -> Value {
    serde_json::from_str(v.as_str().unwrap_or("null")).unwrap_or(Value::Null)
}

/// The test command, and the plan waits for a person's approval before any code is written.
pub const PLAN_APPROVAL_YML: &str =
    "gates: { test: \"python3 -m unittest -v\" }\nreview: { require_plan_approval: true }\n";

/// The test gate, with the Critic's approval enough to merge.
pub const AUTO_YML: &str =
    "gates: { test: \"python3 -m unittest -v\" }\nreview: { require_human_approval: false }\n";

/// A second bug beside calc's, `mul()` adds: the script that fixes it beside the happy one,
/// and the repository with it under `hive_yml`, main green (each issue's failing test comes
/// from its own Breaker). Its issue: [`MUL_ISSUE`].
pub fn mul_world(hive_yml: &str) -> (Script, Vec<(&'static str, String)>) {
    const MUL_BUGGY: &str = "def mul(a, b):\n    return a + b\n";
    let mut plan: serde_json::Value = serde_json::from_str(&plan_json()).unwrap();
    plan["ticket"]["context_refs"] = serde_json::json!(["mul.py"]);
    plan["plan"]["title"] = "Make mul() multiply".into();
    let script = script_with(vec![
        ("architect|mul()", vec![Step::say(&plan.to_string())]),
        (
            "breaker|mul()",
            writes("test_mul.py", MUL_TESTS, "A test for mul()."),
        ),
        (
            "builder|mul()",
            writes("mul.py", MUL_FIXED, "mul() multiplies."),
        ),
    ]);
    let mut files: Vec<_> = calc(hive_yml)
        .into_iter()
        .filter(|(p, _)| *p != "test_calc.py")
        .collect();
    files.push(("mul.py", MUL_BUGGY.into()));
    (script, files)
}

/// The issue [`mul_world`] fixes: title and body.
pub const MUL_ISSUE: (&str, &str) = ("mul() adds", "`mul(3, 4)` returns 7; it should return 12.");
pub const MUL_FIXED: &str = "def mul(a, b):\n    return a * b\n";
const MUL_TESTS: &str = "import unittest\n\nfrom mul import mul\n\n\nclass MulTest(unittest.TestCase):\n    def test_mul(self):\n        self.assertEqual(mul(3, 4), 12)\n";

/// The happy script with other steps for some roles (`role` or `role|text` keys).
pub fn script_with(changes: Vec<(&str, Vec<Step>)>) -> Script {
    let mut s = happy_script();
    for (key, steps) in changes {
        s.insert(key.to_owned(), steps);
    }
    s
}

/// The text of a role's conversations' first user messages.
pub fn tasks_of(llm: &FakeLlm, role: &str) -> Vec<String> {
    llm.requests(role)
        .iter()
        .filter(|r| {
            r["messages"]
                .as_array()
                .is_some_and(|m| m.iter().filter(|m| m["role"] == "assistant").count() == 0)
        })
        .filter_map(|r| {
            r["messages"]
                .as_array()?
                .iter()
                .find(|m| m["role"] == "user")?["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

impl World {
    /// The conclusions of the check runs named `name`, oldest first.
    pub fn conclusions(&self, name: &str) -> Vec<String> {
        self.gh
            .check_runs(REPO)
            .into_iter()
            .filter(|c| c.name == name)
            .map(|c| c.conclusion.unwrap_or_default())
            .collect()
    }

    /// Waits until the bot opened its pull request from `feat/T-1`.
    pub async fn first_pull(&self) -> super::fake_github::Pull {
        self.bot
            .wait_until("a pull request from feat/T-1", WAIT, || async {
                self.gh
                    .pulls(REPO)
                    .into_iter()
                    .find(|p| p.head == "feat/T-1")
            })
            .await
    }

    /// Waits until the Critic approved and the ticket asks a person to approve the merge.
    pub async fn waiting_for_approval(&self) -> vibeloop::store::tickets::Ticket {
        self.bot
            .wait_until("the approval prompt", WAIT, || async {
                self.ticket().await.filter(|t| {
                    t.state == TaskState::AwaitingVerification
                        && t.detail
                            .as_deref()
                            .unwrap_or("")
                            .contains("The Critic approves.")
                })
            })
            .await
    }

    /// Waits until the bot has handled a delivery; its stored row.
    pub async fn handled(
        &self,
        sent: &super::payloads::Sent,
    ) -> vibeloop::store::deliveries::Delivery {
        let store = self.bot.store().await;
        let d = self
            .bot
            .wait_until(
                &format!("delivery {} handled", sent.delivery),
                WAIT,
                || async {
                    store
                        .delivery(&sent.delivery)
                        .await
                        .unwrap()
                        .filter(|d| d.status != "queued")
                },
            )
            .await;
        store.close().await;
        d
    }

    /// Every side effect on GitHub happened once: a resumed step found what it had done.
    pub fn assert_each_side_effect_once(&self) {
        let comments = self.gh.comments(REPO, self.issue);
        assert_eq!(
            comments.len(),
            1,
            "one status comment and nothing else: {comments:?}"
        );
        assert!(comments[0].body.contains("<!-- vibeloop:status T-1 -->"));
        assert_eq!(
            self.gh.reactions(REPO),
            vec![(self.issue, "eyes".to_owned())]
        );
        let pulls = self.gh.pulls(REPO);
        assert_eq!(pulls.len(), 1, "{pulls:?}");
        assert_eq!(
            self.gh.reviews(REPO, pulls[0].number).len(),
            1,
            "one review"
        );
        let mut runs: Vec<(String, String)> = self
            .gh
            .check_runs(REPO)
            .into_iter()
            .map(|c| (c.external_id.unwrap_or_default(), c.head_sha))
            .collect();
        let all = runs.len();
        runs.sort();
        runs.dedup();
        assert_eq!(
            runs.len(),
            all,
            "a check run was created twice on one commit: {runs:?}"
        );
        let snapshots: Vec<_> = self
            .gh
            .tags(REPO)
            .into_iter()
            .filter(|(t, _)| t.starts_with("auto-v"))
            .collect();
        assert_eq!(snapshots.len(), 1, "{snapshots:?}");
        assert_eq!(
            self.gh.file_on_branch(REPO, "main", "calc.py").as_deref(),
            Some(CALC_FIXED)
        );
        // Landed once, through the pull request's merge.
        let requests = self.gh.requests();
        let merges: Vec<u16> = requests
            .iter()
            .filter(|r| r.method == "PUT" && r.path.ends_with("/merge"))
            .map(|r| r.status)
            .collect();
        let landed = merges.iter().filter(|s| **s == 200 || **s == 502).count();
        assert_eq!(landed, 1, "merged more than once: {merges:?}");
        assert!(self.gh.pulls(REPO)[0].merged);
        super::openapi::assert_requests_valid(&requests);
    }
}
