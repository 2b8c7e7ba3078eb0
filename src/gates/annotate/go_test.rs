//! `go test` output: the log lines of tests that passed or were skipped. Under `-v`, `t.Log`
//! prints `    calc_test.go:13: …` for every test, and the fallback would take each such line
//! of a passing test for a failure; only a failed test's lines (and what is not a test's log:
//! compile errors, panics) are findings.
//!
//! ```text
//! === RUN   TestSkipped
//!     calc_test.go:18: later                  (dropped: the test was skipped)
//! --- SKIP: TestSkipped (0.00s)
//! === RUN   TestTable/big
//!     calc_test.go:29: Add(100, 1) = 101, want 102
//!     --- FAIL: TestTable/big (0.00s)
//! ```

use std::collections::{HashMap, HashSet};

/// The indices of `lines` that are the logs of a test that passed or was skipped; `None` when
/// `lines` are not `go test` output.
pub(super) fn passed_logs(lines: &[&str]) -> Option<HashSet<usize>> {
    let mut seen_go = false;
    let mut current: Option<&str> = None;
    let mut logs: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut dropped = HashSet::new();
    for (at, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        if let Some(name) = ["=== RUN ", "=== CONT ", "=== PAUSE ", "=== NAME "]
            .iter()
            .find_map(|p| t.strip_prefix(p))
        {
            seen_go = true;
            current = Some(name.trim());
        } else if let Some((word, name)) = verdict(t) {
            seen_go = true;
            let theirs = logs.remove(name).unwrap_or_default();
            if word == "FAIL" {
                // Without `-v` the logs follow the verdict.
                current = Some(name);
            } else {
                dropped.extend(theirs);
                current = None;
            }
        } else if let Some(name) = current.filter(|_| is_log(line)) {
            logs.entry(name).or_default().push(at);
        }
    }
    seen_go.then_some(dropped)
}

/// `--- PASS: TestX (0.00s)`: the verdict and the test's name.
fn verdict(t: &str) -> Option<(&str, &str)> {
    let rest = t.strip_prefix("--- ")?;
    let (word, rest) = rest.split_once(": ")?;
    if !matches!(word, "PASS" | "FAIL" | "SKIP") {
        return None;
    }
    let name = rest.split(" (").next().unwrap_or(rest).trim();
    Some((word, name))
}

/// `    calc_test.go:13: message`: an indented line that starts with a Go file and a line.
fn is_log(line: &str) -> bool {
    let t = line.trim_start();
    if t.len() == line.len() {
        return false;
    }
    let mut parts = t.splitn(3, ':');
    let (Some(file), Some(number)) = (parts.next(), parts.next()) else {
        return false;
    };
    file.ends_with(".go")
        && !file.contains(' ')
        && !number.is_empty()
        && number.chars().all(|c| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::super::{parse, tests::show};

    /// Go 1.24's `go test -v` and plain output of the same packages (one test skipped with
    /// `t.Skip("later")`, one subtest failing, one test logging before it fails).
    #[test]
    fn only_the_logs_of_failed_tests_are_findings() {
        let want = [
            "calc_test.go:13 failure [] Add(2, 2) = 4, want 5",
            "calc_test.go:29 failure [] Add(100, 1) = 101, want 102",
            "sub_test.go:12 failure [] checking mul",
            "sub_test.go:14 failure [] Mul(2, 2) = 4, want 5",
        ];
        for fixture in [
            runner_output!("go-mixed-v"),
            runner_output!("go-not-verbose"),
        ] {
            assert_eq!(show(&parse("test", fixture, &["/work/"])), want);
        }
        // pflag's shape: a passing run whose tests log as they go has nothing to mark.
        let passing = "=== RUN   TestParse\n    flag_test.go:123: === TEST 0 ===\n\
                       --- PASS: TestParse (0.00s)\nPASS\nok  \tgithub.com/spf13/pflag\t0.01s\n";
        assert!(parse("test", passing, &["/work/"]).is_empty());
        // Not go test output: a mention is still a finding.
        assert_eq!(parse("test", "    x_test.go:3: boom\n", &[]).len(), 1);
    }
}
