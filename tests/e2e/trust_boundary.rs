//! The sandbox as the trust boundary, each way out played by a hostile Builder against the real
//! bot (fake GitHub, scripted model, real Docker): what its code does in a sandbox never
//! steers the bot's own git to the host's files, never reaches the network while its
//! dependency files are set up, never poisons the environment a later ticket uses, never hides
//! a policy finding, and a dependency file linked to `/dev/zero` is refused with its path.

use crate::ecosystems::CA_BUNDLE;
use crate::support;

use std::path::Path;

use serde_json::json;
use support::fake_llm::{Script, Step};
use support::hive::*;
use vibeloop::ticket::TaskState;

/// A host file no git store and no model may ever hold.
const CANARY: &str = "host-canary-7f3e9b1c: the operator's secret";

/// A Python package with its tests extra (set up with network on the base), one module of
/// arithmetic whose `add` subtracts, and one test.
const PYPROJECT: &str = "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"calc\"\nversion = \"0.1.0\"\n\n[project.optional-dependencies]\ntests = [\"pytest\"]\n";
const OPS_BUGGY: &str = "def add(a, b):\n    return a - b\n";
const OPS_FIXED: &str = "def add(a, b):\n    return a + b\n";
const OPS_TEST: &str = "from calc.ops import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n";
const OPS_MORE: &str =
    "from calc.ops import add\n\n\ndef test_negative():\n    assert add(-2, -3) == -5\n";
/// One attempt: a change the gates refuse goes to a person at once.
const ONE_ATTEMPT: &str = "retry: { max_retries: 0 }\n";

fn package(extra: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
    let mut files = vec![
        ("pyproject.toml", PYPROJECT.to_owned()),
        ("calc/__init__.py", String::new()),
        ("calc/ops.py", OPS_BUGGY.to_owned()),
        ("tests/test_ops.py", OPS_TEST.to_owned()),
        (".github/hive.yml", ONE_ATTEMPT.to_owned()),
    ];
    files.extend(extra.iter().map(|(p, t)| (*p, (*t).to_owned())));
    files
}

fn docker() -> Vec<(String, String)> {
    vec![
        ("VIBELOOP_SANDBOX".into(), "docker".into()),
        ("VIBELOOP_SANDBOX_CA_BUNDLE".into(), CA_BUNDLE.into()),
    ]
}

fn plan(file: &str) -> String {
    json!({
        "ticket": { "type": "bugfix", "goal": "add(a, b) returns a + b", "context_refs": [file] },
        "plan": {
            "title": "Make add() add",
            "description": "add() subtracts; it must add.",
            "steps": [{ "input": file, "output": "add returns a + b", "validation_criteria": "the tests pass" }],
            "dependencies": [],
        },
        "open_questions": [],
    })
    .to_string()
}

/// The Architect plans a change of `calc/ops.py`, the Breaker writes `test`, the Builder takes
/// `builder`'s steps, the Critic approves; each role's steps keyed by `marker` (a word of the
/// issue) when given.
fn script(test: (&str, &str), builder: Vec<Step>, marker: Option<&str>) -> Script {
    script_on("calc/ops.py", test, builder, marker)
}

fn script_on(file: &str, test: (&str, &str), builder: Vec<Step>, marker: Option<&str>) -> Script {
    let key = |role: &str| match marker {
        Some(m) => format!("{role}|{m}"),
        None => role.to_owned(),
    };
    Script::from([
        (key("architect"), vec![Step::say(&plan(file))]),
        (key("breaker"), writes(test.0, test.1, "A test first.")),
        (key("builder"), builder),
        (key("critic"), vec![Step::say(&approve_json())]),
    ])
}

/// Writes `files`, runs the test gate in its own sandbox, and is done.
fn builder_running(files: &[(&str, &str)]) -> Vec<Step> {
    let mut steps = writing(files);
    steps.insert(
        steps.len() - 1,
        Step::tool("run_command", json!({ "name": "test" })),
    );
    steps
}

/// Every git object file under `root` (loose objects: `objects/ab/cdef…`).
fn holds_object(root: &Path, id: &str) -> Vec<std::path::PathBuf> {
    let tail = format!("{}/{}", &id[..2], &id[2..]);
    ignore::WalkBuilder::new(root)
        .standard_filters(false)
        .build()
        .flatten()
        .filter(|e| e.path().to_string_lossy().ends_with(&tail))
        .map(|e| e.into_path())
        .collect()
}

/// Waits until the ticket stops (Failed, HumanNeeded) or its pull request waits for
/// approval; its state.
async fn settled(w: &World) -> TaskState {
    w.bot
        .wait_until("the ticket to settle", WAIT, || async {
            w.ticket().await.map(|t| t.state).filter(|s| {
                matches!(
                    s,
                    TaskState::Failed | TaskState::HumanNeeded | TaskState::AwaitingVerification
                )
            })
        })
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_git_directory_the_sandbox_makes_never_steers_the_bots_git() {
    for sandbox in ["docker", "local"] {
        let dir = tempfile::tempdir().unwrap();
        let canary_dir = dir.path().join("host-canary");
        std::fs::create_dir_all(&canary_dir).unwrap();
        std::fs::write(canary_dir.join("secret.txt"), CANARY).unwrap();
        // Run by the tests, in the Builder's sandbox: `/work/.git` is pointed at a git
        // directory of its own, whose work tree is the host's canary directory.
        let attack = format!(
            "import os\n\n\ndef _escape():\n    try:\n        os.makedirs('evil/objects', exist_ok=True)\n        os.makedirs('evil/refs/heads', exist_ok=True)\n        with open('evil/HEAD', 'w') as f:\n            f.write('ref: refs/heads/main\\n')\n        with open('evil/config', 'w') as f:\n            f.write('[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n\\tworktree = {}\\n')\n        with open('.git', 'w') as f:\n            f.write('gitdir: evil\\n')\n    except OSError as e:\n        print('blocked:', e)\n\n\n_escape()\n\n\n{CALC_FIXED}",
            canary_dir.display()
        );
        let builder = builder_running(&[("calc.py", &attack), ("secret.txt", "innocent\n")]);
        let script = script_on("calc.py", ("test_add_more.py", NEW_TESTS), builder, None);
        let env = vec![("VIBELOOP_SANDBOX".into(), sandbox.into())];
        let w = World::start_with(script, &calc(HIVE_YML), env).await;
        w.label().await;
        let state = settled(&w).await;

        let id = git2::Oid::hash_object(git2::ObjectType::Blob, CANARY.as_bytes())
            .unwrap()
            .to_string();
        let stores = holds_object(w.dir.path(), &id);
        assert!(
            stores.is_empty(),
            "{sandbox}: the canary was hashed into {stores:?}"
        );
        for role in ["architect", "breaker", "builder", "critic"] {
            for r in w.llm.requests(role) {
                assert!(
                    !r.to_string().contains(CANARY),
                    "{sandbox}: the canary reached the {role}"
                );
            }
        }
        match sandbox {
            // The container could not write `.git` (mounted read-only): nothing changed.
            "docker" => assert_eq!(
                state,
                TaskState::AwaitingVerification,
                "{}",
                w.status_comment()
            ),
            // A local process could: the bot saw it, and stopped.
            _ => {
                assert_eq!(state, TaskState::Failed, "{}", w.status_comment());
                let status = w.status_comment();
                assert!(
                    status.contains("/.git was changed by what ran in the sandbox"),
                    "{status}"
                );
            }
        }
        drop(w);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_build_script_the_builder_writes_reaches_no_network_while_it_is_set_up() {
    // Run by setuptools when the change's package is installed: a probe of the network.
    let probe = format!(
        "import socket\nimport sys\n\ntry:\n    socket.create_connection(('{}', 443), timeout=10).close()\n    print('PROBE: connected to the registry')\nexcept OSError as e:\n    print('PROBE: no connection:', e)\nsys.exit(1)\n",
        crate::support::registry::pypi_host()
    );
    let bumped = PYPROJECT.replace("version = \"0.1.0\"", "version = \"0.2.0\"");
    let builder = writing(&[
        ("setup.py", &probe),
        ("pyproject.toml", &bumped),
        ("calc/ops.py", OPS_FIXED),
    ]);
    let script = script(("tests/test_more.py", OPS_MORE), builder, None);
    let w = World::start_with(script, &package(&[]), docker()).await;
    w.label().await;
    settled(&w).await;
    let tests =
        w.gh.check_runs(REPO)
            .into_iter()
            .filter(|c| c.name == "hive/test")
            .filter_map(|c| c.summary)
            .collect::<Vec<_>>()
            .join("\n");
    assert!(tests.contains("PROBE: no connection"), "{tests}");
    assert!(!tests.contains("PROBE: connected"), "{tests}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pth_file_planted_in_the_environment_never_runs_in_a_later_ticket() {
    // Run whenever the first ticket's tests import the change.
    let plant = format!(
        "import glob\nimport os\n\nfor d in glob.glob('/cache/venv/lib/python3*/site-packages'):\n    try:\n        with open(os.path.join(d, 'zz_planted.pth'), 'w') as f:\n            f.write(\"import sys; print('PLANTED-BY-T1', file=sys.stderr)\\n\")\n    except OSError as e:\n        print('plant refused:', e)\n\n\n{OPS_FIXED}"
    );
    let mut script = script(
        ("tests/test_more.py", OPS_MORE),
        builder_running(&[("calc/ops.py", &plant)]),
        Some("(first)"),
    );
    let second = OPS_FIXED.replace("a + b", "b + a");
    script.extend(self::script(
        (
            "tests/test_twice.py",
            "from calc.ops import add\n\n\ndef test_twice():\n    assert add(add(1, 1), 1) == 3\n",
        ),
        writing(&[("calc/ops.py", &second)]),
        Some("(second)"),
    ));
    let mut files = package(&[]);
    files.retain(|(p, _)| *p != ".github/hive.yml");
    let w = World::start_with(script, &files, docker()).await;
    w.gh.edit_issue(
        REPO,
        w.issue,
        "add() subtracts",
        "`add(2, 3)` is -1 (first).",
    )
    .await;
    w.label().await;
    w.waiting_for_approval().await;
    let before = w.gh.check_runs(REPO).len();

    let next =
        w.gh.add_issue(REPO, "add() again", "Check add once more (second).");
    assert_eq!(w.gh.label_issue(REPO, next, "hive").await.status, 202);
    w.bot
        .wait_until("the second ticket's gates", WAIT, || async {
            let runs = w.gh.check_runs(REPO);
            runs[before..]
                .iter()
                .find(|c| c.name == "hive/test" && c.status == "completed")
                .cloned()
        })
        .await;
    for c in &w.gh.check_runs(REPO)[before..] {
        let summary = c.summary.clone().unwrap_or_default();
        assert!(!summary.contains("PLANTED-BY-T1"), "{}: {summary}", c.name);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_finding_is_found_though_the_changes_own_code_tried_to_hide_it() {
    // The change calls eval (banned by default), and its tests, run in the Builder's sandbox,
    // put a `python3` in the environment that reports every policy check clean.
    let hide = "import os\n\nfake = '/cache/venv/bin/python3'\ntry:\n    os.remove(fake)\n    with open(fake, 'w') as f:\n        f.write('#!/bin/sh\\necho \\'{\"done\": 1}\\'\\n')\n    os.chmod(fake, 0o755)\nexcept OSError as e:\n    print('hide refused:', e)\n\n\ndef add(a, b):\n    return eval('a + b')\n";
    let script = script(
        ("tests/test_more.py", OPS_MORE),
        builder_running(&[("calc/ops.py", hide)]),
        None,
    );
    let w = World::start_with(script, &package(&[]), docker()).await;
    w.label().await;
    let state = settled(&w).await;
    assert_eq!(state, TaskState::HumanNeeded, "{}", w.status_comment());
    let security =
        w.gh.check_runs(REPO)
            .into_iter()
            .find(|c| c.name == "hive/security")
            .expect("a security check");
    assert_eq!(
        security.conclusion.as_deref(),
        Some("failure"),
        "{security:?}"
    );
    let summary = security.summary.unwrap_or_default();
    assert!(summary.contains("1 finding(s)"), "{summary}");
    assert!(summary.contains("checked (as committed)"), "{summary}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dependency_file_linked_to_dev_zero_is_refused_with_its_path() {
    // The tests, run in the Builder's sandbox, make requirements.txt a link to /dev/zero.
    let link = format!(
        "import os\n\ntry:\n    os.remove('requirements.txt')\n    os.symlink('/dev/zero', 'requirements.txt')\nexcept OSError as e:\n    print('link refused:', e)\n\n\n{OPS_FIXED}"
    );
    let script = script(
        ("tests/test_more.py", OPS_MORE),
        builder_running(&[("calc/ops.py", &link)]),
        None,
    );
    let files = package(&[("requirements.txt", "pytest\n")]);
    let w = World::start_with(script, &files, docker()).await;
    w.label().await;
    let state = settled(&w).await;
    assert_eq!(state, TaskState::Failed, "{}", w.status_comment());
    let status = w.status_comment();
    assert!(
        status.contains(
            "requirements.txt is a symbolic link to /dev/zero, out of the repository: not committed"
        ),
        "{status}"
    );
}
