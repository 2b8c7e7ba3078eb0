//! A hostile repository, end to end in Docker sandboxes: symbolic links out of the worktree
//! (to the bot's data directory, a directory next to it, `/etc`, `/proc/self/environ`, up
//! through `..`) that the agents' tools, the prompt builder and the tests themselves try to
//! follow; and tests that fork-bomb or fill the disk. Nothing outside the worktree is read or
//! written, the tests see no network, no secret reaches a model prompt, GitHub or the log, and
//! a test that hits a
//! sandbox limit stops the ticket with a report that says which limit — the bot stays healthy
//! and leaves no container or junk behind.

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::json;
use support::fake_llm::Step;
use support::hive::*;
use support::leaks;
use vibeloop::ticket::TaskState;

const LLM_KEY: &str = "sk-hostile-repo-key-0123456789abcdef";
const CANARY: &str = "CANARY-7f3e9c-outside-the-repository";

/// The test gate also runs `peek.py`, which tries the links from inside the sandbox.
const GATES_YML: &str = "gates: { test: \"python3 -m unittest -v; s=$?; echo PEEK-START; python3 peek.py; exit $s\" }\n";

const PEEK: &str = "\
import os
print('NETWORK', sorted(os.listdir('/sys/class/net')))
for p in ['environ', 'secret.txt', 'data/vibeloop.db', 'outside/secret.txt']:
    try:
        print(p, 'READ', open(p, 'rb').read(300))
    except Exception as e:
        print(p, 'REFUSED', type(e).__name__)
for p in ['outside/pwned', 'data/pwned', 'etc/pwned']:
    try:
        open(p, 'w').write('x')
        print(p, 'WROTE')
    except Exception as e:
        print(p, 'REFUSED', type(e).__name__)
";

fn docker_env() -> Vec<(String, String)> {
    vec![
        ("VIBELOOP_SANDBOX".into(), "docker".into()),
        ("VIBELOOP_LLM_API_KEY".into(), LLM_KEY.into()),
    ]
}

/// Agents that try every way out between doing their work (three refusals in a row would end
/// a run, so the work goes in between).
fn escaping_script() -> support::fake_llm::Script {
    let read = |p: &str| Step::tool("read_file", json!({ "path": p }));
    script_with(vec![
        (
            "breaker",
            breaker_after(vec![
                read("secret.txt"),
                Step::tool("list_files", json!({ "path": "up" })),
            ]),
        ),
        (
            "builder",
            vec![
                read("environ"),
                read("data/vibeloop.db"),
                Step::tool(
                    "write_file",
                    json!({ "path": "calc.py", "content": CALC_FIXED }),
                ),
                Step::tool(
                    "write_file",
                    json!({ "path": "outside/pwned.py", "content": "x = 1\n" }),
                ),
                Step::tool(
                    "apply_patch",
                    json!({ "patch": "--- /dev/null\n+++ b/etc/pwned\n@@ -0,0 +1 @@\n+x\n" }),
                ),
                read("calc.py"),
                Step::tool(
                    "move_file",
                    json!({ "from": "calc.py", "to": "up/stolen.py" }),
                ),
                Step::tool(
                    "search_files",
                    json!({ "pattern": "CANARY", "path": "outside" }),
                ),
                Step::say("add() adds now."),
            ],
        ),
    ])
}

/// Every path under `root` whose name starts with one of `names` (links not followed).
fn found(root: &Path, names: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(root) else {
        return out;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if names.iter().any(|n| name.starts_with(n)) {
            out.push(e.path());
        }
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(found(&e.path(), names));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn links_out_of_the_repository_lead_nowhere() {
    let mut files = calc(GATES_YML);
    files.push(("peek.py", PEEK.into()));
    let w = World::start_with(escaping_script(), &files, docker_env()).await;
    w.llm.require_key(LLM_KEY);
    let outside = w.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), CANARY).unwrap();
    let (outside_s, data_s) = (
        outside.display().to_string(),
        w.env.data_dir.display().to_string(),
    );
    let secret_s = format!("{outside_s}/secret.txt");
    let links = [
        ("outside", outside_s.as_str()),
        ("secret.txt", secret_s.as_str()),
        ("data", data_s.as_str()),
        ("environ", "/proc/self/environ"),
        ("etc", "/etc"),
        ("up", "../../../../../../.."),
        // The Builder's prompt addition: its text would go into the system prompt.
        (".github/hive/builder.md", "/proc/self/environ"),
    ];
    let git = git2::Repository::open_bare(w.gh.bare_path(REPO)).unwrap();
    support::repos::commit_links(&git, "main", &links, "Links out");
    w.label().await;
    let t = w.waiting_for_approval().await;
    assert_eq!(t.state, TaskState::AwaitingVerification);

    // Every way out came back to the agents as a refusal; the fix went in.
    let builder = leaks::refusals(&w, "builder");
    assert_eq!(builder.len(), 6, "{builder:?}");
    let breaker = leaks::refusals(&w, "breaker");
    assert_eq!(breaker.len(), 2, "{breaker:?}");
    for (kind, message) in builder.iter().chain(&breaker) {
        assert_eq!(kind, "bad_path", "{message}");
    }
    let branch = "feat/T-1";
    assert_eq!(
        w.gh.file_on_branch(REPO, branch, "calc.py").as_deref(),
        Some(CALC_FIXED)
    );
    // The links are as the maintainer made them.
    assert_eq!(
        w.gh.file_on_branch(REPO, branch, "secret.txt").as_deref(),
        Some(secret_s.as_str())
    );

    // Nothing outside the worktree was written, by the tools or by the tests.
    let outside_now: Vec<_> = std::fs::read_dir(&outside).unwrap().flatten().collect();
    assert_eq!(outside_now.len(), 1);
    assert_eq!(
        std::fs::read_to_string(outside.join("secret.txt")).unwrap(),
        CANARY
    );
    assert!(!Path::new("/etc/pwned").exists());
    let strays = found(w.dir.path(), &["pwned", "stolen"]);
    assert!(strays.is_empty(), "{strays:?}");

    // Inside the sandbox, the links point into the container: nothing of the host is there.
    let test_run =
        w.gh.check_runs(REPO)
            .into_iter()
            .filter(|c| c.name == "hive/test")
            .find_map(|c| c.summary.filter(|s| s.contains("PEEK-START")))
            .expect("the test gate's summary shows what peek.py saw");
    for p in ["secret.txt", "data/vibeloop.db", "outside/secret.txt"] {
        assert!(
            test_run.contains(&format!("{p} REFUSED")),
            "{p}:\n{test_run}"
        );
    }
    for p in ["outside/pwned", "data/pwned", "etc/pwned"] {
        assert!(
            test_run.contains(&format!("{p} REFUSED")),
            "{p}:\n{test_run}"
        );
    }

    // And no network: the loopback interface is all the sandbox has.
    assert!(test_run.contains("NETWORK ['lo']"), "{test_run}");

    // The prompt addition behind a link was not read: no environment in the system prompt.
    let builder_system = w.llm.requests("builder")[0]["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    for name in ["VIBELOOP_", "GITHUB_", "PATH="] {
        assert!(!builder_system.contains(name), "{name}:\n{builder_system}");
    }
    leaks::assert_nothing_leaked(
        &w,
        &[
            ("the model's key", LLM_KEY),
            ("a file outside the repository", CANARY),
        ],
    );
}

/// A repository whose existing test `body` misbehaves, under `limits`; the ticket must stop at
/// the baseline for a person with a report naming `reason`, before any model call, the bot
/// healthy and nothing left behind.
async fn a_hostile_test_stops_the_ticket(body: &str, limits: &str, reason: &str) {
    let hostile = format!(
        "import itertools, os, unittest\n\n\nclass Hostile(unittest.TestCase):\n    def test_it(self):\n{body}"
    );
    let yml = format!(
        "gates: {{ test: \"python3 -m unittest -v\" }}\nlimits: {{ max_retries: 0, {limits} }}\n"
    );
    let mut files = calc(&yml);
    files.push(("test_hostile.py", hostile));
    let w = World::start_with(happy_script(), &files, docker_env()).await;
    w.label().await;
    // The base's own tests misbehave: the baseline stops the ticket before any model call.
    let t = w.wait_state(TaskState::HumanNeeded).await;
    let why = t.detail.unwrap_or_default();
    assert!(
        why.contains(reason) && why.contains("sandbox limit") && why.contains("before any change"),
        "{why}"
    );
    assert!(why.contains("/hive retry"), "{why}");
    for role in ["architect", "breaker", "builder"] {
        assert!(
            w.llm.requests(role).is_empty(),
            "the {role} asked the model"
        );
    }

    // The bot is healthy and took the next request; no container and no junk are left.
    let health = reqwest::get(format!("{}/healthz", w.bot.url))
        .await
        .unwrap();
    assert!(health.status().is_success());
    let docker = w.docker().await;
    w.bot
        .wait_until("the ticket's containers to go", WAIT, || async {
            docker.containers().await.unwrap().is_empty().then_some(())
        })
        .await;
    let junk = found(&w.env.data_dir, &["fill-"]);
    assert!(
        junk.is_empty(),
        "{} files left, e.g. {:?}",
        junk.len(),
        junk.first()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn tests_that_fill_the_disk_are_killed_at_the_limit() {
    let body = "        for i in itertools.count():\n            with open(f'fill-{i}.bin', 'wb') as f:\n                f.write(bytes(4 << 20))\n";
    a_hostile_test_stops_the_ticket(
        body,
        "disk_mb: 64",
        "the worktree's disk is full: its commands wrote 64 MiB (limits.disk_mb)",
    )
    .await;
}

/// Each file's modification time set back after it is written, as `touch -d 2000-01-01`
/// does: the writes still count (issue 42, part 4).
#[tokio::test(flavor = "multi_thread")]
async fn writes_whose_times_are_set_back_are_still_killed_at_the_limit() {
    let body = "        for i in range(6):\n            name = f'fill-{i}.bin'\n            with open(name, 'wb') as f:\n                f.write(bytes(32 << 20))\n            os.utime(name, (946684800, 946684800))\n";
    a_hostile_test_stops_the_ticket(
        body,
        "disk_mb: 64",
        "the worktree's disk is full: its commands wrote 64 MiB (limits.disk_mb)",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn tests_that_fork_bomb_meet_the_pids_limit_and_the_timeout() {
    let body = "        while True:\n            try:\n                os.fork()\n            except OSError:\n                pass\n";
    a_hostile_test_stops_the_ticket(body, "pids: 64, timeout_seconds: 5", "timed out after").await;
}
