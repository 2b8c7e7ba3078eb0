//! What a gate's check run says: test counts read from the tool's own summary line (pytest,
//! unittest) and a Markdown summary with the tail of the output.

use super::GateResult;

/// Counts a test runner printed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct TestCounts {
    pub passed: u64,
    pub failed: u64,
    pub errors: u64,
    pub skipped: u64,
}

impl TestCounts {
    pub fn total(&self) -> u64 {
        self.passed + self.failed + self.errors + self.skipped
    }

    /// "3 tests" when none failed, else "1 of 3 tests failed".
    pub fn describe(&self) -> String {
        let bad = self.failed + self.errors;
        let tests = |n: u64| {
            if n == 1 {
                "1 test".to_owned()
            } else {
                format!("{n} tests")
            }
        };
        if bad == 0 {
            tests(self.passed)
        } else {
            format!("{bad} of {} failed", tests(self.total()))
        }
    }

    /// Reads the last summary line of pytest (`== 2 passed, 1 failed in 0.1s ==`) or unittest
    /// (`Ran 3 tests` … `FAILED (failures=1, errors=1)` / `OK`).
    pub fn parse(output: &str) -> Option<Self> {
        Self::parse_pytest(output).or_else(|| Self::parse_unittest(output))
    }

    fn parse_pytest(output: &str) -> Option<Self> {
        let line = output.lines().rev().find(|l| {
            let l = l.trim().trim_matches('=').trim();
            (l.contains(" passed") || l.contains(" failed") || l.contains(" error"))
                && l.contains(" in ")
        })?;
        let mut counts = Self::default();
        let body = line.trim().trim_matches('=').trim();
        let body = body.rsplit_once(" in ").map(|(b, _)| b).unwrap_or(body);
        for part in body.split(',') {
            let mut words = part.split_whitespace();
            let (Some(n), Some(what)) = (words.next(), words.next()) else {
                continue;
            };
            let Ok(n) = n.parse::<u64>() else { continue };
            match what {
                "passed" => counts.passed += n,
                "failed" => counts.failed += n,
                "error" | "errors" => counts.errors += n,
                "skipped" | "xfailed" | "deselected" => counts.skipped += n,
                _ => {}
            }
        }
        (counts.total() > 0).then_some(counts)
    }

    fn parse_unittest(output: &str) -> Option<Self> {
        let ran = output.lines().rev().find_map(|l| {
            let rest = l.trim().strip_prefix("Ran ")?;
            rest.split_whitespace().next()?.parse::<u64>().ok()
        })?;
        let verdict = output
            .lines()
            .rev()
            .find(|l| l.starts_with("OK") || l.starts_with("FAILED"))?;
        let mut counts = Self::default();
        let inside = verdict
            .split_once('(')
            .map(|(_, r)| r.trim_end_matches(')'))
            .unwrap_or("");
        for part in inside.split(',') {
            let Some((k, v)) = part.trim().split_once('=') else {
                continue;
            };
            let Ok(v) = v.parse::<u64>() else { continue };
            match k {
                "failures" => counts.failed += v,
                "errors" => counts.errors += v,
                "skipped" | "expected failures" => counts.skipped += v,
                _ => {}
            }
        }
        counts.passed = ran.saturating_sub(counts.failed + counts.errors + counts.skipped);
        Some(counts)
    }
}

/// A Markdown code block holding `text`, with a fence longer than any backtick run inside.
pub fn code_block(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat((longest + 1).max(3));
    format!("{fence}text\n{}\n{fence}", text.trim_end())
}

/// The check-run title of a gate: "hive/test passed (3 tests)".
pub fn title(r: &GateResult) -> String {
    format!("hive/{} {}", r.gate, r.describe())
}

/// The check-run summary of a gate: what ran, how it ended, notes, and the output's tail.
pub fn summary(r: &GateResult) -> String {
    let mut s = match &r.command {
        Some(cmd) => format!(
            "`{}` ran in {:.1} s: **{}**.\n\n",
            cmd.replace('`', "'"),
            r.duration.as_secs_f64(),
            r.describe()
        ),
        None => format!(
            "**{}** in {:.1} s.\n\n",
            r.describe(),
            r.duration.as_secs_f64()
        ),
    };
    for note in &r.notes {
        s.push_str(&format!("- {note}\n"));
    }
    if !r.notes.is_empty() {
        s.push('\n');
    }
    if !r.annotations.is_empty() {
        s.push_str(&format!(
            "{} annotation(s) mark the places on the diff.\n\n",
            r.annotations.len()
        ));
    }
    match &r.output {
        Some(out) if out.output.trim().is_empty() => s.push_str("The command printed nothing.\n"),
        Some(out) => {
            s.push_str("Last 60 lines of output:\n\n");
            s.push_str(&code_block(&out.tail(60)));
            s.push('\n');
        }
        None => {}
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pytest_summary_lines() {
        let out = "....F\n=== 1 failed, 4 passed, 2 skipped in 0.12s ===\n";
        assert_eq!(
            TestCounts::parse(out),
            Some(TestCounts {
                passed: 4,
                failed: 1,
                errors: 0,
                skipped: 2
            })
        );
        assert_eq!(
            TestCounts::parse("== 3 passed in 1.01s ==")
                .unwrap()
                .describe(),
            "3 tests"
        );
        assert_eq!(TestCounts::parse("no tests here"), None);
    }

    #[test]
    fn unittest_summary_lines() {
        let failed = "F.\n----------------------------------------------------------------------\nRan 2 tests in 0.000s\n\nFAILED (failures=1)\n";
        let c = TestCounts::parse(failed).unwrap();
        assert_eq!(
            c,
            TestCounts {
                passed: 1,
                failed: 1,
                errors: 0,
                skipped: 0
            }
        );
        assert_eq!(c.describe(), "1 of 2 tests failed");
        let ok = "..\n------\nRan 2 tests in 0.000s\n\nOK\n";
        assert_eq!(TestCounts::parse(ok).unwrap().passed, 2);
    }

    #[test]
    fn code_blocks_outlast_backticks_inside() {
        assert_eq!(code_block("a"), "```text\na\n```");
        assert_eq!(code_block("x ```` y"), "`````text\nx ```` y\n`````");
    }
}
