//! Agents with the tools the best coding agents have, against the real bot (fake GitHub,
//! scripted model): the repository's instructions for coding agents reach every role, the
//! nearest last and only where they apply; a shell in the role's own sandbox lets the Builder
//! reproduce, run one test and fix, while a command that floods its output or hangs is cut or
//! killed, and one that writes a locked test, reaches the network or strays outside the role's
//! scope fails or is put back as the gates would have it.

use crate::ecosystems::CA_BUNDLE;
use crate::support;

use serde_json::{Value, json};
use support::fake_llm::{Script, Step};
use support::hive::*;
use support::leaks::tool_answers;
use vibeloop::ticket::TaskState;

const ROOT: &str = "ROOT-RULE: keep functions small.\n";
const PKG: &str = "PKG-RULE: pkg/ holds helpers only.\n";
const DOCS: &str = "DOCS-RULE: docs are written in British English.\n";
const COPILOT: &str = "COPILOT-RULE: run the tests with unittest.\n";

fn plan(refs: &[&str]) -> String {
    let mut p: Value = serde_json::from_str(&plan_json()).unwrap();
    p["ticket"]["context_refs"] = json!(refs);
    p.to_string()
}

/// The system prompt of `role`'s first request.
fn system(w: &World, role: &str) -> String {
    let requests = w.llm.requests(role);
    let first = requests
        .first()
        .unwrap_or_else(|| panic!("the {role} was never asked"));
    first["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Asserts that `text` holds `rules` in this order, and none of `absent`.
fn holds_in_order(who: &str, text: &str, rules: &[&str], absent: &[&str]) {
    let mut at = 0;
    for r in rules {
        let found = text[at..].find(r.trim());
        assert!(
            found.is_some(),
            "{who}: {r:?} missing or out of order in:\n{text}"
        );
        at += found.unwrap_or_default();
    }
    for r in absent {
        assert!(
            !text.contains(r.trim()),
            "{who}: {r:?} should not apply:\n{text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn each_role_is_given_the_repository_instructions_that_apply_nearest_last() {
    let mut files = calc(HIVE_YML);
    files.extend([
        ("AGENTS.md", ROOT.to_owned()),
        ("pkg/AGENTS.md", PKG.to_owned()),
        (
            "pkg/util.py",
            "def twice(x):\n    return 2 * x\n".to_owned(),
        ),
        ("docs/AGENTS.md", DOCS.to_owned()),
        ("docs/guide.md", "# Guide\n".to_owned()),
        (".github/copilot-instructions.md", COPILOT.to_owned()),
    ]);
    let mut builder = vec![Step::tool("read_file", json!({ "path": "docs/guide.md" }))];
    builder.extend(writes("calc.py", CALC_FIXED, "add() adds now."));
    let script = Script::from([
        (
            "architect".to_owned(),
            vec![Step::say(&plan(&["calc.py", "pkg/util.py"]))],
        ),
        ("breaker".to_owned(), breaker_after(vec![])),
        ("builder".to_owned(), builder),
        ("critic".to_owned(), vec![Step::say(&approve_json())]),
    ]);
    let w = World::start(script, &files).await;
    w.label().await;
    let t = w.waiting_for_approval().await;
    assert_eq!(t.state, TaskState::AwaitingVerification);

    // The Architect plans the whole repository: the root's files and Copilot's.
    holds_in_order(
        "architect",
        &system(&w, "architect"),
        &[ROOT, COPILOT],
        &[PKG, DOCS],
    );
    // The Breaker and the Builder work on the plan's files: pkg/'s comes after the root's.
    for role in ["breaker", "builder"] {
        let text = system(&w, role);
        holds_in_order(role, &text, &[ROOT, PKG, COPILOT], &[DOCS]);
        assert!(
            text.contains("They are data"),
            "{role}: not fenced as data:\n{text}"
        );
    }
    // Opening a file elsewhere brings that directory's instructions with the tool's answer.
    let answers = tool_answers(&w, "builder");
    assert!(
        answers[0].starts_with("docs/guide.md") && answers[0].contains(DOCS.trim()),
        "{answers:?}"
    );
    assert!(!answers[1].contains("RULE"), "shown once: {answers:?}");
    // The Critic reviews the change's files against the root's instructions.
    holds_in_order(
        "critic",
        &system(&w, "critic"),
        &[ROOT, COPILOT],
        &[PKG, DOCS],
    );

    let status = w.status_comment();
    assert!(
        status.contains(
            "| Instructions read | `.github/copilot-instructions.md`, `AGENTS.md`, `docs/AGENTS.md`, `pkg/AGENTS.md` |"
        ),
        "{status}"
    );
}

fn shell(command: &str) -> Step {
    Step::tool("shell", json!({ "command": command }))
}

/// A Builder that works as people do: reproduce, run one test, try what it may not, fix with a
/// command, run the tests. A Breaker that runs its new test alone and strays outside its tests.
fn shell_script() -> Script {
    let breaker = vec![
        Step::tool(
            "write_file",
            json!({ "path": "test_add_more.py", "content": NEW_TESTS }),
        ),
        shell("python3 -m unittest -v test_add_more"),
        shell("echo '# the Breaker was here' >> calc.py"),
        Step::say("A test for negative numbers."),
    ];
    let builder = vec![
        shell("python3 -c 'from calc import add; print(\"add(2, 3) =\", add(2, 3))'"),
        shell("python3 -m unittest -v test_calc.AddTest.test_adds"),
        shell("yes 0123456789 | head -c 10000000"),
        Step::tool(
            "shell",
            json!({ "command": "sleep 600", "timeout_seconds": 2 }),
        ),
        shell("echo 'broken' > test_calc.py"),
        shell("python3 -c 'import socket; socket.create_connection((\"1.1.1.1\", 80), timeout=3)'"),
        shell("sed -i 's/a - b/a + b/' calc.py"),
        shell("python3 -m unittest -v test_calc"),
        Step::say("add() adds now."),
    ];
    Script::from([
        ("architect".to_owned(), vec![Step::say(&plan_json())]),
        ("breaker".to_owned(), breaker),
        ("builder".to_owned(), builder),
        ("critic".to_owned(), vec![Step::say(&approve_json())]),
    ])
}

#[tokio::test(flavor = "multi_thread")]
async fn a_builder_reproduces_runs_one_test_and_fixes_with_a_shell_in_its_sandbox() {
    let docker = vec![
        ("VIBELOOP_SANDBOX".to_owned(), "docker".to_owned()),
        (
            "VIBELOOP_SANDBOX_CA_BUNDLE".to_owned(),
            CA_BUNDLE.to_owned(),
        ),
    ];
    let w = World::start_with(shell_script(), &calc(HIVE_YML), docker).await;
    w.label().await;
    let t = w.waiting_for_approval().await;
    assert_eq!(t.state, TaskState::AwaitingVerification);

    let b = tool_answers(&w, "builder");
    assert_eq!(b.len(), 8, "{b:#?}");
    // Reproduced: the bug, printed.
    assert!(
        b[0].starts_with("exit code 0 after") && b[0].contains("add(2, 3) = -1"),
        "{}",
        b[0]
    );
    // One test, run alone, failing.
    assert!(
        b[1].starts_with("exit code 1 after") && b[1].contains("test_adds"),
        "{}",
        b[1]
    );
    // 10 MB of output: its head and tail, and its size.
    assert!(
        b[2].starts_with("exit code 0 after")
            && b[2].contains("10000000 bytes")
            && b[2].contains("not shown"),
        "{}",
        &b[2][..b[2].len().min(600)]
    );
    assert!(b[2].len() < 25_000, "{}", b[2].len());
    // A command that hangs is killed at the limit the model set.
    assert!(
        b[3].starts_with("killed at its time limit of 2 s"),
        "{}",
        b[3]
    );
    // The tests are locked for the Builder, in its sandbox as in the gates: the write is put
    // back and said.
    assert!(
        b[4].starts_with("exit code 0 after")
            && b[4].contains("were put back")
            && b[4].contains("test_calc.py"),
        "{}",
        b[4]
    );
    // No network.
    assert!(
        b[5].starts_with("exit code 1 after") && b[5].contains("Errno"),
        "{}",
        b[5]
    );
    // The fix, made with a command, and the tests passing.
    assert!(b[6].starts_with("exit code 0 after"), "{}", b[6]);
    assert!(
        b[7].starts_with("exit code 0 after") && b[7].contains("OK"),
        "{}",
        b[7]
    );
    assert_eq!(
        w.gh.file_on_branch(REPO, "feat/T-1", "calc.py").as_deref(),
        Some(CALC_FIXED)
    );
    assert_eq!(
        w.gh.file_on_branch(REPO, "feat/T-1", "test_calc.py")
            .as_deref(),
        Some(TESTS)
    );

    // The Breaker saw its new test fail alone; what it wrote outside its tests was put back.
    let k = tool_answers(&w, "breaker");
    assert!(
        k[1].starts_with("exit code 1 after") && k[1].contains("test_negative"),
        "{}",
        k[1]
    );
    assert!(
        k[2].contains("were put back") && k[2].contains("calc.py"),
        "{}",
        k[2]
    );
    assert_eq!(
        w.gh.file_on_branch(REPO, "test/T-1", "calc.py").as_deref(),
        Some(CALC_BUGGY)
    );

    // Each command and its status is on the timeline.
    let store = w.bot.store().await;
    let events = store.events(t.key).await.unwrap();
    let shells: Vec<(String, String)> = events
        .iter()
        .filter(|(_, kind, d)| {
            kind == "tool_complete" && d["name"] == "shell" && d["role"] == "builder"
        })
        .map(|(_, _, d)| {
            let s = |k: &str| d[k].as_str().unwrap_or_default().to_owned();
            (s("args"), s("outcome"))
        })
        .collect();
    assert_eq!(shells.len(), 8, "{shells:#?}");
    assert!(
        shells[1]
            .0
            .contains("command=python3 -m unittest -v test_calc.AddTest.test_adds")
            && shells[1].1.starts_with("exit code 1 after"),
        "{shells:#?}"
    );
    assert!(
        shells[3].1.starts_with("killed at its time limit of 2 s"),
        "{shells:#?}"
    );
}

#[test]
fn gates_explain_lists_the_instruction_files_and_what_each_governs() {
    let (_d, repo) = crate::ecosystems::project(&[
        ("AGENTS.md", ROOT),
        ("pkg/AGENTS.md", PKG),
        (".github/copilot-instructions.md", COPILOT),
        (
            ".github/instructions/py.instructions.md",
            "---\napplyTo: \"**/*.py\"\n---\nUse type hints.\n",
        ),
        ("calc.py", CALC_BUGGY),
    ]);
    let envs = tempfile::tempdir().unwrap();
    let (code, out) = crate::ecosystems::gates(&repo, envs.path(), &["--explain"]);
    assert_eq!(code, 0, "{out}");
    let listed = "Instructions for coding agents, given to every role where they apply:\n  \
                  AGENTS.md (every file)\n  \
                  pkg/AGENTS.md (files under pkg/)\n  \
                  .github/copilot-instructions.md (every file)\n  \
                  .github/instructions/py.instructions.md (files matching **/*.py)\n";
    assert!(out.contains(listed), "{out}");
}
