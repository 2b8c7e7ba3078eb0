//! Red proof: the Breaker's tests, run against the base commit, must fail — and fail as test
//! failures, not as collection, import or syntax errors (a test that cannot run proves
//! nothing). The hive reports it as check run `hive/red-proof`.

use std::time::Duration;

use serde::Serialize;

use super::GateError;
use super::report::code_block;
use super::results::TestRun;
use crate::sandbox::{CommandOutput, Sandbox};

/// What running the new tests on the base showed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// Tests failed as tests: the proof holds.
    Red { failed: u64, total: u64 },
    /// The tests pass on the base: they do not capture the issue.
    Green,
    /// The tests did not run properly; `reason` says how.
    Broken { reason: String },
}

impl Verdict {
    pub fn holds(&self) -> bool {
        matches!(self, Verdict::Red { .. })
    }

    pub fn describe(&self) -> String {
        match self {
            Verdict::Red { failed, total } => {
                format!("holds: {failed} of {total} tests fail on the base, as they should")
            }
            Verdict::Green => {
                "fails: the tests pass on the base, so they do not capture the issue".into()
            }
            Verdict::Broken { reason } => {
                format!("fails: the tests did not run properly ({reason})")
            }
        }
    }
}

/// Classifies a test run on the base. `known` are the tests that failed on the base before any
/// change (the baseline): failing only there proves nothing.
pub fn classify(output: &CommandOutput, known: &[String]) -> Verdict {
    if output.oom_killed || output.timed_out || output.killed.is_some() {
        return Verdict::Broken {
            reason: output.describe(),
        };
    }
    if output.success() {
        return Verdict::Green;
    }
    let run = TestRun::read(&output.output);
    if run.as_ref().is_some_and(|r| r.only_known(known)) {
        return Verdict::Green;
    }
    match run.map(|r| r.counts) {
        Some(c) if c.errors > 0 => Verdict::Broken {
            reason: format!("{} error(s) while collecting or setting up tests", c.errors),
        },
        Some(c) if c.failed > 0 => Verdict::Red {
            failed: c.failed,
            total: c.total(),
        },
        Some(_) => Verdict::Broken {
            reason: format!("{} but no test failed", output.describe()),
        },
        None => Verdict::Broken {
            reason: format!("{} and no test summary was printed", output.describe()),
        },
    }
}

/// Runs `test_command` in `sandbox` (a worktree of the base with the new tests in it).
pub async fn run(
    sandbox: &Sandbox,
    test_command: &str,
    timeout: Duration,
    known: &[String],
) -> Result<(Verdict, CommandOutput), GateError> {
    let output = sandbox.exec(test_command, timeout).await?;
    Ok((classify(&output, known), output))
}

/// The red proof as a report: whether it holds, a title and a Markdown summary with the tail of
/// the output (the hive posts it as check run `hive/red-proof` on the Breaker's commit).
pub fn report(verdict: &Verdict, output: &CommandOutput) -> (bool, String, String) {
    let summary = format!(
        "The new tests ran against the base branch: red proof **{}**.\n\nLast 40 lines of output:\n\n{}\n",
        verdict.describe(),
        code_block(&output.tail(40))
    );
    (
        verdict.holds(),
        format!("hive/red-proof {}", verdict.describe()),
        summary,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(code: i32, text: &str) -> CommandOutput {
        CommandOutput::exited(code, text)
    }

    fn classify_(o: &CommandOutput) -> Verdict {
        classify(o, &[])
    }

    #[test]
    fn failures_only_where_the_base_already_failed_prove_nothing() {
        let o = out(
            1,
            "FAILED tests/test_a.py::test_old - x\n== 1 failed, 1 passed in 0.1s ==",
        );
        assert_eq!(
            classify(&o, &["tests/test_a.py::test_old".to_owned()]),
            Verdict::Green
        );
        assert!(classify(&o, &["other".to_owned()]).holds());
    }

    #[test]
    fn failures_as_tests_hold() {
        let v = classify_(&out(1, "F.\n=== 1 failed, 1 passed in 0.1s ==="));
        assert_eq!(
            v,
            Verdict::Red {
                failed: 1,
                total: 2
            }
        );
        assert!(v.holds());
        let v = classify_(&out(
            1,
            "F\n----\nRan 1 test in 0.0s\n\nFAILED (failures=1)\n",
        ));
        assert!(v.holds(), "{v:?}");
    }

    #[test]
    fn passing_or_broken_tests_do_not() {
        assert_eq!(
            classify_(&out(0, "=== 2 passed in 0.1s ===")),
            Verdict::Green
        );
        let collection = "ERROR tests/test_x.py - SyntaxError\n!!! Interrupted: 1 error during collection !!!\n=== 1 error in 0.1s ===";
        assert!(matches!(
            classify_(&out(2, collection)),
            Verdict::Broken { .. }
        ));
        let import = "E\n----\nRan 1 test in 0.0s\n\nFAILED (errors=1)\n";
        assert!(matches!(classify_(&out(1, import)), Verdict::Broken { .. }));
        assert!(matches!(
            classify_(&out(127, "sh: 1: pytest: not found")),
            Verdict::Broken { .. }
        ));
        let mut t = out(0, "");
        t.timed_out = true;
        assert!(matches!(classify_(&t), Verdict::Broken { .. }));
    }
}
