//! Quality gates. The pipeline ([`pipeline`]) runs test → lint → typecheck → build → security on
//! a commit, each result with each test's outcome read from the runner's output
//! ([`test_results`]), the check run's annotations read from any tool's output ([`annotate`])
//! and a report's title and summary ([`report`]). The security gate ([`security`])
//! is built in and deterministic; so is [`complexity`], which the lint gate adds when a limit is
//! set. The [`acceptance`] criteria (coverage, warnings, documentation) follow the gates when
//! the repository sets any. [`redproof`] checks that the Breaker's tests fail on the base.
//! Only what the bot observed is reported; who hears it (check runs on GitHub) is the caller's.

/// The output a runner printed, captured in our images (`tests/fixtures/tool-output/runners/`):
/// what the readers of test results are tested on.
#[cfg(test)]
macro_rules! runner_output {
    ($name:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/tool-output/runners/",
            $name,
            ".txt"
        ))
    };
}

pub mod acceptance;
pub mod annotate;
mod aside;
pub mod baseline;
pub mod changes;
pub mod complexity;
pub mod debt;
pub mod expect;
pub mod grammar;
pub mod pipeline;
pub mod redproof;
pub mod report;
pub mod security;
pub mod steering;
pub mod test_results;

use std::time::Duration;

use serde::Serialize;

use crate::annotation::Annotation;
use crate::sandbox::{CommandOutput, SandboxError};
use report::TestCounts;

/// How a gate's note starts that says which of a change's dependency files made its
/// environment, and how it was set up.
pub const ENVIRONMENT_NOTE: &str = "Environment: ";

/// The gates, in pipeline order.
pub const ORDER: [&str; 5] = ["test", "lint", "typecheck", "build", "security"];

/// Whether `name` is a check this pipeline reports: a gate, or the acceptance criteria.
pub fn is_check(name: &str) -> bool {
    ORDER.contains(&name) || name == acceptance::GATE
}

/// How a gate ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    #[default]
    Passed,
    Failed,
    TimedOut,
    OutOfMemory,
    /// No command configured (or the security gate is off).
    Skipped,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Passed => "passed",
            Status::Failed => "failed",
            Status::TimedOut => "timed out",
            Status::OutOfMemory => "out of memory",
            Status::Skipped => "skipped",
        }
    }

    fn of(output: &CommandOutput) -> Self {
        if output.oom_killed {
            Status::OutOfMemory
        } else if output.timed_out {
            Status::TimedOut
        } else if output.success() {
            Status::Passed
        } else {
            Status::Failed
        }
    }
}

/// The outcome of one gate.
#[derive(Debug, Clone, Serialize)]
pub struct GateResult {
    pub gate: &'static str,
    pub status: Status,
    pub command: Option<String>,
    #[serde(skip)]
    pub output: Option<CommandOutput>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counts: Option<TestCounts>,
    /// The tests that failed, as the runner names them (the test gate); the unmet criteria
    /// (acceptance).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failing: Vec<String>,
    pub annotations: Vec<Annotation>,
    /// Lines for the summary beyond the command's own output (the security gate's checks).
    pub notes: Vec<String>,
    #[serde(serialize_with = "millis")]
    pub duration: Duration,
    pub check_run_url: Option<String>,
    /// The Breaker's tests with their verdicts at the base and here (the test gate, when the
    /// change has a Breaker).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub verdicts: Vec<expect::TestVerdict>,
    /// The tests the change is judged by that were not seen passing, each with why (the test
    /// gate): "`tests/t.py::test_x` did not run: skipped (conftest.py: …)".
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub misses: Vec<String>,
    /// Why the gate passed but counts only once a person approves (the test gate, when the
    /// change edits files that steer the tests): shown as "action required", never as green.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held: Option<String>,
}

fn millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_millis() as u64)
}

impl GateResult {
    pub fn skipped(gate: &'static str, why: &str) -> Self {
        Self {
            gate,
            status: Status::Skipped,
            command: None,
            output: None,
            counts: None,
            failing: vec![],
            annotations: vec![],
            notes: vec![why.to_owned()],
            duration: Duration::ZERO,
            check_run_url: None,
            verdicts: vec![],
            misses: vec![],
            held: None,
        }
    }

    /// Passed or skipped: nothing holds the change back. A skipped gate did not pass — it
    /// checked nothing — and every report says so; see [`GateResult::skipped`].
    pub fn ok(&self) -> bool {
        matches!(self.status, Status::Passed | Status::Skipped)
    }

    pub fn is_skipped(&self) -> bool {
        self.status == Status::Skipped
    }

    /// "passed (3 tests)", "failed: exit code 1 (1 of 2 tests failed)", "failed: 2 findings".
    pub fn describe(&self) -> String {
        let counts = self
            .counts
            .map(|c| format!(" ({})", c.describe()))
            .unwrap_or_default();
        let findings = match self.annotations.len() {
            0 => String::new(),
            1 => ", 1 finding".into(),
            n => format!(", {n} findings"),
        };
        match (self.status, &self.output) {
            (Status::Passed, _) if self.held.is_some() => {
                format!("passed{counts}, held for a person: {}", HELD)
            }
            (Status::Passed, _) => format!("passed{counts}"),
            (Status::Skipped, _) => "skipped".into(),
            (_, Some(out)) if self.misses.iter().any(|m| m.starts_with(LOCK_REFUSED)) => format!(
                "failed: the run changed the locked tests ({}), so its results are refused",
                out.put_back.join(", ")
            ),
            (_, Some(out)) if out.success() && !self.misses.is_empty() => format!(
                "failed: {} test(s) the change is judged by not seen passing",
                self.misses.iter().filter(|m| m.starts_with('`')).count()
            ),
            (_, Some(out)) => format!("failed: {}{counts}{findings}", out.describe()),
            (_, None) => format!("failed{findings}"),
        }
    }
}

/// Why a held test gate waits for a person, in short.
pub const HELD: &str = "the change edits files that steer the tests";

/// How the test gate's finding begins when its run changed the locked tests.
pub(crate) const LOCK_REFUSED: &str = "The test run changed the locked tests";

/// "2 passed, 2 skipped, 1 failed": how a set of gates went, skipped apart from passed.
pub fn tally(results: &[GateResult]) -> String {
    let count = |f: &dyn Fn(&GateResult) -> bool| results.iter().filter(|r| f(r)).count();
    let held = count(&|r| r.held.is_some());
    let passed = count(&|r| r.status == Status::Passed) - held;
    let skipped = count(&|r| r.is_skipped());
    let failed = results.len() - passed - held - skipped;
    match held {
        0 => format!("{passed} passed, {skipped} skipped, {failed} failed"),
        _ => {
            format!("{passed} passed, {held} held for a person, {skipped} skipped, {failed} failed")
        }
    }
}

/// What the pipeline runs on.
pub struct Inputs<'a> {
    /// The repository's config, read from the base branch.
    pub config: &'a crate::config::repo::HiveConfig,
    /// The sandbox of the worktree holding `head` checked out.
    pub sandbox: &'a crate::sandbox::Sandbox,
    /// The worktree on the host (paths in tool output may start with it).
    pub worktree: &'a std::path::Path,
    /// A git repository holding `base`, `head` and `tests`.
    pub git_dir: &'a std::path::Path,
    pub base: &'a crate::ids::CommitSha,
    pub head: &'a crate::ids::CommitSha,
    /// The Breaker's commit, when there is one: its tests are what the test lock compares with.
    pub tests: Option<&'a crate::ids::CommitSha>,
    /// Lines added to every gate's summary (what the ticket spent so far, say).
    pub notes: Vec<String>,
    /// Tests that already failed on the base before any change (the baseline): the test gate
    /// does not hold them against the change.
    pub known_failures: &'a [String],
    /// The tests the test gate must see passing, by name (none for a preview).
    pub expect: &'a expect::Expect,
}

/// Errors of a gate run (the gates' own failures are results, not errors).
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    #[error("git: {0}")]
    Git(#[from] git2::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_green_is_said_and_counted_apart_from_a_pass() {
        let mut test = GateResult::skipped("test", "");
        test.status = Status::Passed;
        test.held = Some(format!("{HELD}: `conftest.py` (added)"));
        assert_eq!(
            test.describe(),
            "passed, held for a person: the change edits files that steer the tests"
        );
        assert!(test.ok(), "a held green does not send the Builder back");
        let mut lint = GateResult::skipped("lint", "");
        lint.status = Status::Passed;
        let build = GateResult::skipped("build", "");
        assert_eq!(
            tally(&[test, lint.clone(), build]),
            "1 passed, 1 held for a person, 1 skipped, 0 failed"
        );
        assert_eq!(tally(&[lint]), "1 passed, 0 skipped, 0 failed");
    }
}
