//! What a run keeps as memory, and when; the rules of how it rises and falls are the store's
//! ([`crate::store::memory`]). The Architect's plan is kept Ephemeral and rises to Derived when
//! the plan validates ([`super::plan`]). Then only observed facts, small: the names of the tests
//! the Breaker added, once their red proof holds (Derived); the files the attempt changed with
//! their role, as its Encounter starts (Ephemeral); the gate commands that passed, when the
//! Encounter passes — and with it everything the ticket holds rises to Verified. A failed step
//! demotes what it produced: a red proof that fails, the tests; an Encounter that fails, a
//! Critic's veto or gates that fail after the rebase, the attempt. The Critic's comments are
//! opinions, held at Derived ([`super::review`]). The merge raises what was Verified to
//! Canonical ([`super::land`]); a ticket that ends Failed has all of it demoted by the store.

use super::ctx::{Ctx, git};
use crate::gates::GateResult;
use crate::gates::test_results::TestRun;
use crate::hive::job::JobError;
use crate::ids::CommitSha;
use crate::pathset::PathSet;
use crate::store::memory::Memo;
use crate::ticket::{MemoryKind, MemoryStability};

/// The memory step of the Breaker's tests.
pub(super) const TESTS_STEP: &str = "tests";
/// The memory step of the Critic's review.
pub(super) const REVIEW_STEP: &str = "review";
/// Files of one attempt kept with their role, at most.
const MAX_FILES: usize = 20;
/// Test names kept per ticket, at most.
const MAX_TEST_NAMES: usize = 10;

/// The Breaker's tests (`files`) held their red proof, whose run printed `output`: the names of
/// the tests that failed on the base and did not fail there before are kept (Derived), about
/// the test files and the plan's `context_refs`, replacing what earlier tests of the ticket
/// left.
pub(super) async fn remember_tests(
    cx: &Ctx<'_, '_>,
    files: &[String],
    output: &str,
) -> Result<(), JobError> {
    cx.demote_memory(TESTS_STEP).await?;
    let known = cx.flow.known_failures();
    let test_set = cx.env.config.test_paths();
    let files: Vec<String> = files
        .iter()
        .filter(|f| test_set.contains(f))
        .take(MAX_FILES)
        .cloned()
        .collect();
    let Some(text) = tests_memo(&cx.run.ticket.id.to_string(), &files, output, &known) else {
        return Ok(());
    };
    // About the test files, and the files the plan said the change is about: what they test.
    let mut paths = files;
    if let Some(bp) = &cx.flow.plan.blueprint {
        let refs = bp.ticket.context_refs.iter().take(MAX_FILES);
        paths.extend(
            refs.filter(|r| !paths.contains(r))
                .cloned()
                .collect::<Vec<_>>(),
        );
    }
    let memo = Memo {
        kind: MemoryKind::TestNames,
        step: TESTS_STEP,
        text: &text,
        paths: &paths,
    };
    cx.remember(&memo, MemoryStability::Derived).await
}

/// The attempt in progress changed `base`..`head`: each file (at most [`MAX_FILES`]) is kept
/// with its role as Ephemeral memory of the attempt, for its Encounter to decide.
pub(super) async fn remember_change(
    cx: &Ctx<'_, '_>,
    base: &CommitSha,
    head: &CommitSha,
) -> Result<(), JobError> {
    let (b, h) = (base.oid(), head.oid());
    let files = git(cx, move |ws, g| ws.changed_paths(g, b, h)).await?;
    let tests = cx.env.config.test_paths();
    let (id, step) = (cx.run.ticket.id, cx.attempt_step());
    for path in files.iter().take(MAX_FILES) {
        let text = format!(
            "`{}` is {} ({id} changed it)",
            path.replace('`', "'"),
            file_role(&tests, path)
        );
        let memo = Memo {
            kind: MemoryKind::FileRole,
            step: &step,
            text: &text,
            paths: std::slice::from_ref(path),
        };
        cx.remember(&memo, MemoryStability::Ephemeral).await?;
    }
    Ok(())
}

/// The attempt's gates passed: the commands that ran and passed are kept, and everything the
/// ticket holds rises to Verified (up to each entry's ceiling).
pub(super) async fn gates_passed(cx: &Ctx<'_, '_>, gates: &[GateResult]) -> Result<(), JobError> {
    let step = cx.attempt_step();
    for g in gates.iter().filter(|g| g.ok() && !g.is_skipped()) {
        let Some(command) = &g.command else {
            continue;
        };
        let text = format!(
            "`{}` is this repository's {} command",
            command.replace('`', "'"),
            g.gate
        );
        let memo = Memo {
            kind: MemoryKind::GateCommand,
            step: &step,
            text: &text,
            paths: &[],
        };
        cx.remember(&memo, MemoryStability::Verified).await?;
    }
    cx.promote_memory(MemoryStability::Verified).await
}

/// The attempt in progress failed (its Encounter, a Critic's veto, the gates after the
/// rebase): what it produced is demoted.
pub(super) async fn attempt_failed(cx: &Ctx<'_, '_>) -> Result<(), JobError> {
    cx.demote_memory(&cx.attempt_step()).await
}

/// The test-names entry of ticket `id`: the tests that failed in `output` and not among
/// `known` (at most [`MAX_TEST_NAMES`]), in `files`. `None` when it would say nothing.
fn tests_memo(id: &str, files: &[String], output: &str, known: &[String]) -> Option<String> {
    let names: Vec<String> = TestRun::read(output)
        .map(|r| r.failing)
        .unwrap_or_default()
        .into_iter()
        .filter(|n| !known.contains(n))
        .map(|n| n.chars().take(120).collect())
        .collect();
    let shown = names.len().min(MAX_TEST_NAMES);
    let mut text = match (files.is_empty(), shown) {
        (true, 0) => return None,
        (false, 0) => format!("{id} added tests"),
        _ => format!("{id} added the tests {}", names[..shown].join(", ")),
    };
    if names.len() > shown {
        text.push_str(&format!(" and {} more", names.len() - shown));
    }
    if !files.is_empty() {
        let quoted: Vec<String> = files
            .iter()
            .map(|f| format!("`{}`", f.replace('`', "'")))
            .collect();
        text.push_str(&format!(" in {}", quoted.join(", ")));
    }
    Some(text)
}

/// What a file is to the repository: `test` (the configured test paths), `config`, `docs`, or
/// `source`.
fn file_role(tests: &PathSet, path: &str) -> &'static str {
    let name = path.rsplit('/').next().unwrap_or(path);
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    let config_ext = matches!(
        ext.as_deref(),
        Some("toml" | "yml" | "yaml" | "json" | "ini" | "cfg" | "conf" | "lock" | "mod" | "sum")
    );
    let config_name = matches!(
        name,
        "Makefile" | "Dockerfile" | "Containerfile" | "Gemfile" | "Rakefile" | "setup.py"
    ) || name.starts_with("requirements")
        || name.starts_with('.');
    if tests.contains(path) {
        "test"
    } else if path.starts_with(".github/") || config_ext || config_name {
        "config"
    } else if path.starts_with("docs/") || matches!(ext.as_deref(), Some("md" | "rst" | "adoc")) {
        "docs"
    } else {
        "source"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_have_a_role() {
        let tests = PathSet::new(&["tests/**".into(), "**/test_*.py".into()]);
        let role = |p: &str| file_role(&tests, p);
        assert_eq!(role("calc/add.py"), "source");
        assert_eq!(role("tests/test_add.py"), "test");
        assert_eq!(role("test_calc.py"), "test");
        assert_eq!(role("pyproject.toml"), "config");
        assert_eq!(role(".github/hive.yml"), "config");
        assert_eq!(role("requirements-dev.txt"), "config");
        assert_eq!(role("go.mod"), "config");
        assert_eq!(role("README.md"), "docs");
        assert_eq!(role("docs/guide.txt"), "docs");
    }

    #[test]
    fn the_tests_memo_names_the_new_failures_only() {
        let out = "FAIL: test_negative (test_add_more.AddMore.test_negative)\nFAIL: test_adds (test_calc.AddTest.test_adds)\n\
                   ----------------------------------------------------------------------\nRan 2 tests in 0.001s\n\nFAILED (failures=2)\n";
        let files = ["test_add_more.py".to_owned()];
        assert_eq!(
            tests_memo("T-1", &files, out, &["test_calc.AddTest.test_adds".into()]).as_deref(),
            Some("T-1 added the tests test_add_more.AddMore.test_negative in `test_add_more.py`")
        );
        assert_eq!(
            tests_memo("T-1", &files, "no summary", &[]).as_deref(),
            Some("T-1 added tests in `test_add_more.py`")
        );
        assert_eq!(tests_memo("T-1", &[], "no summary", &[]), None);
        let many: String = (0..12)
            .map(|i| format!("FAIL: t{i} (m.C.t{i})\n"))
            .collect();
        let many = format!("{many}Ran 12 tests in 0.1s\n\nFAILED (failures=12)\n");
        let memo = tests_memo("T-2", &[], &many, &[]).unwrap();
        assert!(memo.ends_with("m.C.t9 and 2 more"), "{memo}");
    }
}
