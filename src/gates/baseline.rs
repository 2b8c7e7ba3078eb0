//! The baseline: the test command on the unchanged base, before any model is asked. Either the
//! tests ran (some may already fail: they are recorded, and later judgements leave them out), or
//! they could not run — a command is missing, a module cannot be imported, the project does not
//! compile — and [`judge`] says which line of the output shows why. Later judgements leave the
//! recorded failures out through [`super::results::TestRun::only_known`].

use super::results::TestRun;
use crate::sandbox::CommandOutput;

/// What the base's tests showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judgement {
    /// The tests ran; `run.failing` already fail on the base.
    Ran(TestRun),
    /// The tests could not run: the line that shows why, for people.
    Broken(String),
}

/// Markers of a line that says why tests could not run, most telling first.
const TELLING: [&str; 16] = [
    "ModuleNotFoundError",
    "ImportError",
    "No module named",
    "error[E",
    "could not compile",
    "command not found",
    ": not found",
    "Cannot find module",
    "cannot find package",
    "no required module provides package",
    "npm ERR!",
    "npm error",
    "No such file or directory",
    "[build failed]",
    "error:",
    "Error:",
];

/// Judges the test command's output on the base.
pub fn judge(output: &CommandOutput) -> Judgement {
    if output.oom_killed || output.timed_out || output.killed.is_some() {
        return Judgement::Broken(output.describe());
    }
    let run = TestRun::read(&output.output);
    if output.success() {
        return Judgement::Ran(run.unwrap_or_default());
    }
    match run {
        // Tests ran and some failed (not only collection or build errors).
        Some(r) if r.counts.passed + r.counts.failed > 0 => Judgement::Ran(r),
        // "no tests ran" (exit code 5, pytest and unittest): a repository without tests yet.
        _ if output.exit_code == Some(5)
            && output.output.to_lowercase().contains("no tests ran") =>
        {
            Judgement::Ran(TestRun::default())
        }
        _ => Judgement::Broken(diagnose(&output.output)),
    }
}

/// The line of `output` that best says why the command failed (at most 300 characters).
pub fn diagnose(output: &str) -> String {
    let lines: Vec<&str> = output
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let line = TELLING
        .iter()
        .find_map(|m| lines.iter().find(|l| l.contains(m)))
        .or(lines.last())
        .copied()
        .unwrap_or("it printed nothing");
    let mut s: String = line.chars().take(300).collect();
    if s.len() < line.len() {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(code: i32, text: &str) -> CommandOutput {
        CommandOutput::exited(code, text)
    }

    #[test]
    fn a_missing_module_is_broken_and_named() {
        let text = "ImportError while importing test module '/work/tests/test_w.py'.\nE   ModuleNotFoundError: No module named 'wcwidth'\n== 1 error in 0.05s ==";
        assert_eq!(
            judge(&out(2, text)),
            Judgement::Broken("E   ModuleNotFoundError: No module named 'wcwidth'".into())
        );
        let cargo = "   Compiling x v0.1.0\nerror[E0432]: unresolved import `itoa`\nerror: could not compile `x`";
        assert!(matches!(judge(&out(101, cargo)), Judgement::Broken(l) if l.contains("E0432")));
        assert!(
            matches!(judge(&out(127, "sh: 1: cargo: not found")), Judgement::Broken(l) if l.contains("cargo: not found"))
        );
    }

    #[test]
    fn failing_tests_on_the_base_are_recorded_not_broken() {
        let text =
            "FAILED tests/test_a.py::test_old - assert 1 == 2\n== 1 failed, 3 passed in 0.1s ==";
        let Judgement::Ran(r) = judge(&out(1, text)) else {
            panic!("not ran")
        };
        assert_eq!(r.failing, ["tests/test_a.py::test_old"]);
        assert_eq!(
            judge(&out(5, "no tests ran in 0.01s")),
            Judgement::Ran(TestRun::default())
        );
    }
}
