//! The acceptance criteria of `.github/hive.yml` as the check run `hive/acceptance`, after the
//! gates, in a Python package (coverage.py, installed by setup from PyPI) and a Rust crate with
//! a crates.io dependency (rustc's coverage instrumentation read with LLVM's tools, the build
//! gate's warnings, `///` docs): a first attempt that leaves lines no test runs, an undocumented
//! new public item (and, in Rust, a warning) fails the check with each criterion's measure,
//! threshold and verdict, the Builder gets them as findings, and the second attempt lands.

use crate::ecosystems::{CA_BUNDLE, CRATE_FIXED, CRATE_TEST, CRATE_TOML};
use crate::support;

use support::fake_llm::Step;
use support::hive::*;
use vibeloop::ticket::TaskState;

/// `add` fixed, and a new public `subtract` with no docstring that no test runs.
/// (Not `return a - b`: the diff would take the base's line for it.)
const CALC_WITH_EXTRA: &str =
    "def add(a, b):\n    return a + b\n\n\ndef subtract(a, b):\n    return a + -b\n";

fn with_ca_bundle() -> Vec<(String, String)> {
    vec![("VIBELOOP_SANDBOX_CA_BUNDLE".into(), CA_BUNDLE.into())]
}

/// The `hive/acceptance` runs of the Builder's attempts, oldest first (not those after the
/// rebase).
fn acceptance_runs(w: &World) -> Vec<support::fake_github::CheckRun> {
    w.gh.check_runs(REPO)
        .into_iter()
        .filter(|c| c.name == "hive/acceptance")
        .filter(|c| {
            c.external_id
                .as_deref()
                .is_some_and(|e| e.contains(":attempt-"))
        })
        .collect()
}

fn messages(run: &support::fake_github::CheckRun) -> Vec<String> {
    run.annotations
        .iter()
        .map(|a| {
            format!(
                "{}:{}: {}",
                a["path"].as_str().unwrap_or_default(),
                a["start_line"],
                a["message"].as_str().unwrap_or_default()
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_coverage_and_docs_criteria_send_the_builder_back_until_met() {
    let yml = format!(
        "{AUTO_YML}acceptance:\n  coverage: {{ changed_lines: 0.8, project: 0.5 }}\n  docs: true\n"
    );
    let mut files = calc(&yml);
    // A requirements file makes the repository a Python project: setup makes its environment.
    files.push(("requirements.txt", String::new()));
    let script = script_with(vec![
        (
            "builder",
            writes("calc.py", CALC_WITH_EXTRA, "add() adds; subtract() too."),
        ),
        (
            "builder|attempt 2 of",
            writes("calc.py", CALC_FIXED, "Only add(), fixed."),
        ),
    ]);
    let w = World::start_with(script, &files, with_ca_bundle()).await;
    w.label().await;
    w.wait_state(TaskState::Completed).await;

    let runs = acceptance_runs(&w);
    assert_eq!(runs.len(), 2, "{runs:?}");
    let first = &runs[0];
    assert_eq!(first.conclusion.as_deref(), Some("failure"), "{first:?}");
    let summary = first.summary.clone().unwrap_or_default();
    for line in [
        // Lines 2, 5 and 6 are added and measured; 6 (`return a - b`) never runs.
        "Coverage of the changed lines: 66.7 % (2 of 3 lines); threshold 80 %: unmet.",
        "Coverage of the project: ",
        "Documentation of new public items: 0 of 1 documented; threshold all: unmet.",
    ] {
        assert!(summary.contains(line), "no {line:?} in:\n{summary}");
    }
    let found = messages(first);
    assert!(
        found
            .iter()
            .any(|m| m.starts_with("calc.py:6: Line(s) 6 that the change adds are run by no test")),
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .any(|m| m.starts_with("calc.py:5: `subtract` is new and public but undocumented")),
        "{found:?}"
    );
    // The Builder heard each unmet criterion and where.
    let tasks = tasks_of(&w.llm, "builder");
    assert!(
        tasks[1].contains("hive/acceptance: Coverage of the changed lines: 66.7 %")
            && tasks[1].contains("`subtract` is new and public but undocumented"),
        "{}",
        tasks[1]
    );
    let second = &runs[1];
    assert_eq!(second.conclusion.as_deref(), Some("success"), "{second:?}");
    let summary = second.summary.clone().unwrap_or_default();
    assert!(
        summary
            .contains("Coverage of the changed lines: 100 % (1 of 1 lines); threshold 80 %: met.")
            && summary.contains("the change adds no public item"),
        "{summary}"
    );
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "calc.py").as_deref(),
        Some(CALC_FIXED)
    );
    // What the coverage tool wrote is in no commit.
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", ".vibeloop/coverage/python.lcov"),
        None
    );
}

/// `show` fixed, and a new public `twice` with no doc comment, an unused variable and no test.
const CRATE_WITH_EXTRA: &str = "/// `n` in decimal.\npub fn show(n: u64) -> String {\n    itoa::Buffer::new().format(n).to_owned()\n}\n\npub fn twice(n: u64) -> u64 {\n    let unused = 1;\n    n * 2\n}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_coverage_warnings_and_docs_criteria_send_the_builder_back_until_met() {
    let yml = "review: { require_human_approval: false }\n\
               acceptance:\n  coverage: { changed_lines: 0.8 }\n  no_warnings: true\n  docs: true\n";
    let files: Vec<(&str, String)> = vec![
        ("Cargo.toml", CRATE_TOML.into()),
        ("src/lib.rs", crate::ecosystems::CRATE_BUGGY.into()),
        (".gitignore", "/target\n".into()),
        (".github/hive.yml", yml.into()),
    ];
    let plan = plan_json().replace("calc.py", "src/lib.rs");
    let script = script_with(vec![
        ("architect", vec![Step::say(&plan)]),
        (
            "breaker",
            writes("tests/show.rs", CRATE_TEST, "A test of show(42)."),
        ),
        (
            "builder",
            writes(
                "src/lib.rs",
                CRATE_WITH_EXTRA,
                "show() fixed; twice() added.",
            ),
        ),
        (
            "builder|attempt 2 of",
            writes("src/lib.rs", CRATE_FIXED, "Only show(), fixed."),
        ),
        ("critic", vec![Step::say(&approve_json())]),
    ]);
    let w = World::start_with(script, &files, with_ca_bundle()).await;
    w.label().await;
    w.wait_state_within(TaskState::Completed, std::time::Duration::from_secs(600))
        .await;

    let runs = acceptance_runs(&w);
    assert_eq!(runs.len(), 2, "{runs:?}");
    let first = &runs[0];
    assert_eq!(first.conclusion.as_deref(), Some("failure"), "{first:?}");
    let summary = first.summary.clone().unwrap_or_default();
    for line in [
        "Coverage of the changed lines: ",
        "threshold 80 %: unmet.",
        "Build warnings on the files the change touches: 1 (1 in the whole build); threshold none: unmet.",
        "Documentation of new public items: 0 of 1 documented; threshold all: unmet.",
    ] {
        assert!(summary.contains(line), "no {line:?} in:\n{summary}");
    }
    let found = messages(first);
    for want in [
        "src/lib.rs:7: unused variable",
        "src/lib.rs:6: `twice` is new and public but undocumented: add a `///` comment",
    ] {
        assert!(
            found.iter().any(|m| m.starts_with(want)),
            "no {want:?} in {found:?}"
        );
    }
    assert!(
        found
            .iter()
            .any(|m| m.contains("that the change adds are run by no test")
                && m.starts_with("src/lib.rs:")),
        "{found:?}"
    );
    let tasks = tasks_of(&w.llm, "builder");
    assert!(
        tasks[1].contains("hive/acceptance: Build warnings"),
        "{}",
        tasks[1]
    );
    let second = &runs[1];
    assert_eq!(second.conclusion.as_deref(), Some("success"), "{second:?}");
    let summary = second.summary.clone().unwrap_or_default();
    assert!(
        summary
            .contains("Coverage of the changed lines: 100 % (1 of 1 lines); threshold 80 %: met.")
            && summary.contains("Build warnings on the files the change touches: 0"),
        "{summary}"
    );
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "src/lib.rs").as_deref(),
        Some(CRATE_FIXED)
    );
}
