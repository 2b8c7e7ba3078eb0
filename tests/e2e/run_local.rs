//! `vibeloop run`: the real binary runs the whole hive on a local repository — plan, tests
//! first, code, gates in Docker, the Critic, with `--approve` the merge and tag — against the
//! fake model server, with no GitHub; the person's repository and its remote are left exactly as
//! they were. Bad input is refused before anything starts.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use support::fake_llm::FakeLlm;
use support::fake_llm::Step;
use support::hive::{CALC_FIXED, HIVE_YML, NEW_TESTS, calc, happy_script, script_with};
use vibeloop::ticket::TaskState;

const GOAL: &str = "Make add() add\n\nadd(a, b) subtracts its arguments; it must return their sum.";
const MODEL: &str = "fake-model";

/// A working repository like a person's: `calc` committed on `main`, an `origin` it was
/// pushed to, an uncommitted edit and an untracked file.
struct Checkout {
    _dir: tempfile::TempDir,
    path: PathBuf,
    origin: PathBuf,
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=Me", "-c", "user.email=me@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn checkout(hive_yml: &str) -> Checkout {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("calc");
    std::fs::create_dir_all(path.join(".github")).unwrap();
    git(&path, &["init", "-q", "-b", "main"]);
    for (name, text) in calc(hive_yml) {
        std::fs::write(path.join(name), text).unwrap();
    }
    git(&path, &["add", "-A"]);
    git(&path, &["commit", "-qm", "calc"]);
    let origin = dir.path().join("origin.git");
    git(dir.path(), &["init", "-q", "--bare", "origin.git"]);
    git(
        &path,
        &["remote", "add", "origin", origin.to_str().unwrap()],
    );
    git(&path, &["push", "-q", "origin", "main"]);
    std::fs::write(path.join("calc.py"), "# my edit, not committed\n").unwrap();
    std::fs::write(path.join("notes.txt"), "untracked\n").unwrap();
    Checkout {
        _dir: dir,
        path,
        origin,
    }
}

/// Everything of a repository a run could change: its refs, HEAD, and its files.
fn snapshot(path: &Path) -> (String, String, Vec<(String, String)>) {
    let refs = git(path, &["for-each-ref", "--format=%(refname) %(objectname)"]);
    let head = std::fs::read_to_string(path.join(".git/HEAD")).unwrap_or_default();
    let mut files: Vec<(String, String)> = ignore::WalkBuilder::new(path)
        .hidden(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .map(|e| {
            let text = std::fs::read_to_string(e.path()).unwrap_or_default();
            (e.path().display().to_string(), text)
        })
        .collect();
    files.sort();
    (refs, head, files)
}

async fn model() -> FakeLlm {
    let llm = FakeLlm::start(happy_script()).await;
    llm.set_models(&[MODEL]);
    llm
}

/// Runs `vibeloop run` with `args` against the model at `llm_url`.
async fn run(llm_url: &str, args: &[&str]) -> Output {
    run_with(llm_url, Some(MODEL), args).await
}

/// Runs `vibeloop run` with `args` against `model` (`None`: the default) at `llm_url`.
async fn run_with(llm_url: &str, model: Option<&str>, args: &[&str]) -> Output {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_vibeloop"));
    cmd.arg("run")
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("VIBELOOP_LLM_BASE_URL", llm_url)
        .kill_on_drop(true);
    if let Some(model) = model {
        cmd.env("VIBELOOP_LLM_MODEL", model);
    }
    let cmd = cmd.output();
    tokio::time::timeout(Duration::from_secs(300), cmd)
        .await
        .expect("vibeloop run ends within 5 minutes")
        .expect("vibeloop runs")
}

/// Runs `vibeloop run` on `repo` towards [`GOAL`] in `sandbox`, with `--approve` when
/// `approve`, in a new data directory: the output, that directory and its temporary parent.
async fn run_goal(
    llm_url: &str,
    repo: &Path,
    sandbox: &str,
    approve: bool,
) -> (Output, PathBuf, tempfile::TempDir) {
    let data = tempfile::tempdir().unwrap();
    let data_dir = data.path().join("run");
    let mut args = vec![
        "--repo",
        repo.to_str().unwrap(),
        "--goal",
        GOAL,
        "--sandbox",
        sandbox,
        "--data-dir",
        data_dir.to_str().unwrap(),
    ];
    if approve {
        args.push("--approve");
    }
    let out = run(llm_url, &args).await;
    (out, data_dir, data)
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn branch(bare: &Path, name: &str) -> Option<String> {
    support::repos::branch_sha(bare, name)
}

/// The run's ticket, read from the database it left in its data directory.
async fn ticket_of(data: &Path) -> vibeloop::store::tickets::Ticket {
    let url = format!("sqlite://{}", data.join("vibeloop.db").display());
    let store = vibeloop::store::Store::connect(&url).await.unwrap();
    let t = store.tickets().await.unwrap().pop().expect("a ticket");
    store.close().await;
    t
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_goal_becomes_a_tested_reviewed_merged_change_and_nothing_is_pushed() {
    let repo = checkout(HIVE_YML);
    let before = (snapshot(&repo.path), snapshot(&repo.origin));
    let base = git(&repo.path, &["rev-parse", "main"]).trim().to_owned();
    let llm = model().await;
    let (out, data_dir, _data) = run_goal(&llm.url, &repo.path, "docker", true).await;
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");

    // Progress as it happened, then the report.
    for line in [
        "sandbox: docker",
        "T-1 opened: Make add() add",
        "architect at work",
        "breaker write_file content=<",
        "path=test_add_more.py",
        "builder write_file",
        "✓ red_proof",
        "gate test: passed (2 tests)",
        "approved for you (--approve)",
        "✓ snapshot",
        "T-1 completed",
        // The Breaker's one test fails; the other failing test failed before any change.
        "proof:    holds: 1 of 2 tests fail on the base",
        "tests:    test/T-1 at",
        "2 file(s), +9 -1 with the tests; the Builder wrote calc.py",
        "gates:    ✓ test (passed (2 tests))",
        "review:   the Critic approved: Correct and minimal.",
        "landed:   main of the scratch copy at",
        "tagged auto-v",
        "Nothing was pushed",
        "note: uncommitted changes",
    ] {
        assert!(stdout.contains(line), "no {line:?} in:\n{stdout}\n{stderr}");
    }
    let plan_at = stdout.find("architect at work").unwrap();
    let gates_at = stdout.find("gate test:").unwrap();
    let review_at = stdout.find("critic at work").unwrap();
    assert!(
        plan_at < gates_at && gates_at < review_at,
        "out of order:\n{stdout}"
    );

    // Every role really ran against the model.
    for role in ["architect", "breaker", "builder", "critic"] {
        assert!(
            !llm.requests(role).is_empty(),
            "the {role} never asked the model"
        );
    }

    // The work is in the scratch copy: the Breaker's test, the Builder's fix, main merged, a tag.
    let bare = data_dir
        .canonicalize()
        .unwrap()
        .join("forge/local/calc.git");
    let tests = branch(&bare, "test/T-1").expect("test/T-1 in the scratch copy");
    let feat = branch(&bare, "feat/T-1").expect("feat/T-1 in the scratch copy");
    assert_eq!(
        support::repos::read_file(&bare, &tests, "test_add_more.py").as_deref(),
        Some(NEW_TESTS)
    );
    assert_eq!(
        support::repos::read_file(&bare, &feat, "calc.py").as_deref(),
        Some(CALC_FIXED)
    );
    let main = branch(&bare, "main").unwrap();
    assert_ne!(main, base, "main of the scratch copy did not move");
    assert_eq!(
        support::repos::read_file(&bare, "main", "calc.py").as_deref(),
        Some(CALC_FIXED)
    );
    let tags = support::fake_github::gitops::tags(&git2::Repository::open_bare(&bare).unwrap());
    assert!(
        tags.iter()
            .any(|(t, sha)| t.starts_with("auto-v") && *sha == main),
        "{tags:?}"
    );
    assert_eq!(ticket_of(&data_dir).await.state, TaskState::Completed);

    // The person's repository and its remote are exactly as they were.
    assert_eq!(
        (snapshot(&repo.path), snapshot(&repo.origin)),
        before,
        "the run changed the person's repository or pushed to its remote"
    );
    // And the report's command brings the change over when they want it.
    assert!(
        stdout.contains(&format!("fetch {} main", bare.display())),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_approve_the_run_stops_ready_for_approval() {
    let repo = checkout(HIVE_YML);
    let base = git(&repo.path, &["rev-parse", "main"]).trim().to_owned();
    let llm = model().await;
    let (out, data_dir, _data) = run_goal(&llm.url, &repo.path, "local", false).await;
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("T-1 is ready and waits for approval")
            && stdout.contains("next: run again with --approve"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("landed:") && !stdout.contains("✓ merge"),
        "{stdout}"
    );
    // The GitHub wording of the status comment is not shown to a local user.
    assert!(!stdout.contains("comments `/hive approve`"), "{stdout}");
    let bare = data_dir
        .canonicalize()
        .unwrap()
        .join("forge/local/calc.git");
    assert_eq!(branch(&bare, "main"), Some(base), "merged without approval");
    assert!(branch(&bare, "feat/T-1").is_some());
    assert_eq!(
        ticket_of(&data_dir).await.state,
        TaskState::AwaitingVerification
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ticket_that_needs_a_person_ends_the_run_with_its_report_and_exit_1() {
    // The Architect's one call already spends more tokens than the cap allows.
    let yml = "gates: { test: \"python3 -m unittest -v\" }\nbudget: { max_tokens: 100 }\n";
    let repo = checkout(yml);
    let llm = model().await;
    let (out, _, _data) = run_goal(&llm.url, &repo.path, "local", true).await;
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("T-1 stopped: HumanNeeded"), "{stdout}");
    let report = &stdout[stdout.find("T-1 stopped").unwrap()..];
    assert!(
        report.contains("budget") && report.contains("100"),
        "the report does not say why:\n{report}"
    );
    assert!(
        llm.requests("builder").is_empty(),
        "an agent ran over budget"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_before_anything_starts() {
    let repo = checkout(HIVE_YML);
    let repo_arg = repo.path.to_str().unwrap().to_owned();
    let llm = model().await;
    let data = tempfile::tempdir().unwrap();
    let used = data.path().join("used");
    std::fs::create_dir_all(&used).unwrap();
    std::fs::write(used.join("vibeloop.db"), "").unwrap();
    let fresh = data.path().join("fresh");
    let not_a_repo = data.path().join("plain");
    std::fs::create_dir_all(&not_a_repo).unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--repo", &repo_arg, "--goal", "  "], "--goal is empty"),
        (
            vec!["--repo", not_a_repo.to_str().unwrap(), "--goal", GOAL],
            "is not a git repository",
        ),
        (
            vec!["--repo", &repo_arg, "--goal", GOAL, "--base", "nosuch"],
            "branch nosuch has no commit",
        ),
        (
            vec![
                "--repo",
                &repo_arg,
                "--goal",
                GOAL,
                "--data-dir",
                used.to_str().unwrap(),
            ],
            "is not empty",
        ),
        (
            vec!["--repo", &repo_arg, "--goal", GOAL, "--sandbox", "vm"],
            "VIBELOOP_SANDBOX",
        ),
        (vec!["--repo", &repo_arg, "--ask", " "], "--ask is empty"),
        (
            vec!["--repo", &repo_arg, "--ask", "why?", "--approve"],
            "cannot be used with",
        ),
        (
            vec![
                "--repo",
                &repo_arg,
                "--goal",
                GOAL,
                "--plan-only",
                "--approve",
            ],
            "cannot be used with",
        ),
    ];
    for (args, why) in cases {
        let out = run(&llm.url, &args).await;
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stdout}\n{stderr}");
        assert!(stderr.contains(why), "{args:?}: no {why:?} in {stderr}");
    }
    // No model answers: nothing is made, and the fix is named.
    let fresh_arg = fresh.to_str().unwrap();
    let out = run(
        "http://127.0.0.1:9/v1",
        &["--repo", &repo_arg, "--goal", GOAL, "--data-dir", fresh_arg],
    )
    .await;
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("nothing answers at") && stderr.contains("VIBELOOP_LLM_BASE_URL"),
        "{stderr}"
    );
    assert!(
        std::fs::read_dir(&fresh).map_or(true, |mut d| d.next().is_none()),
        "a refused run left files in its data directory"
    );
    assert!(llm.requests("architect").is_empty());
}

/// The README's "try it on a local repository" with no model: the standalone fake model server
/// and the demo script, the default model name, a repository like the README's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_run_demo_works_with_the_standalone_fake_model() {
    let repo = checkout(HIVE_YML);
    let port = support::free_port();
    let _llm = support::KillOnDrop(
        std::process::Command::new(support::built_example("fake_llm"))
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(["--script", "examples/demo-script.json"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let url = format!("http://127.0.0.1:{port}/v1");
    let http = reqwest::Client::new();
    support::poll_until(Duration::from_secs(30), || {
        support::answers_ok(http.get(format!("{url}/models")))
    })
    .await
    .expect("the fake model server answers");
    let data = tempfile::tempdir().unwrap();
    let data_dir = data.path().join("run");
    let out = run_with(
        &url,
        None,
        &[
            "--repo",
            repo.path.to_str().unwrap(),
            "--goal",
            "Make add() add",
            "--sandbox",
            "local",
            "--data-dir",
            data_dir.to_str().unwrap(),
        ],
    )
    .await;
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("T-1 is ready and waits for approval"),
        "{stdout}"
    );
    let bare = data_dir
        .canonicalize()
        .unwrap()
        .join("forge/local/calc.git");
    assert_eq!(
        support::repos::read_file(&bare, "feat/T-1", "calc.py").as_deref(),
        Some(CALC_FIXED)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_answers_and_plan_only_plans_without_building() {
    let repo = checkout(HIVE_YML);
    let repo_arg = repo.path.to_str().unwrap().to_owned();
    let chat = vec![
        Step::tool("read_file", serde_json::json!({ "path": "calc.py" })),
        Step::say("It subtracts at `calc.py:2` (not at `calc.py:7`)."),
    ];
    let llm = FakeLlm::start(script_with(vec![("chat", chat)])).await;
    llm.set_models(&[MODEL]);

    // A question: answered from the committed files, citations checked, nothing built.
    let data = tempfile::tempdir().unwrap();
    let data_dir = data.path().join("ask");
    let args = [
        "--repo",
        &repo_arg,
        "--ask",
        "where is the bug?",
        "--sandbox",
        "local",
        "--data-dir",
        data_dir.to_str().unwrap(),
    ];
    let out = run(&llm.url, &args).await;
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("asked: where is the bug?")
            && stdout.contains("answered")
            && stdout.contains("[`calc.py:2`](")
            && stdout.contains("/blob/")
            && stdout.contains("`calc.py:7` ⚠️")
            && stdout.contains("calc.py has 2 lines")
            && stdout.contains("1 citation(s) checked"),
        "{stdout}"
    );
    for role in ["architect", "breaker", "builder"] {
        assert!(llm.requests(role).is_empty(), "the {role} ran");
    }
    assert!(!data_dir.join("worktrees").exists());

    // Plan only: the plan is printed, the run waits for its approval, nothing is built.
    let plan_dir = data.path().join("plan");
    let args = [
        "--repo",
        &repo_arg,
        "--goal",
        GOAL,
        "--plan-only",
        "--sandbox",
        "local",
        "--data-dir",
        plan_dir.to_str().unwrap(),
    ];
    let out = run(&llm.url, &args).await;
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("T-1 waits for the plan's approval")
            && stdout.contains("plan:     Make add() add")
            && stdout.contains("without --plan-only"),
        "{stdout}"
    );
    assert_eq!(llm.requests("architect").len(), 1);
    assert!(llm.requests("breaker").is_empty() && llm.requests("builder").is_empty());
    assert_eq!(ticket_of(&plan_dir).await.state, TaskState::Blocked);
}
