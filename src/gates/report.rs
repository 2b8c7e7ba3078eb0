//! What a gate's check run says: its title (with the test counts of [`super::test_results`]) and a
//! Markdown summary with the tail of the output.

use super::GateResult;
use super::expect::TestVerdict;

pub use super::test_results::TestCounts;

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
    if !r.misses.is_empty() {
        s.push_str("**Tests the change is judged by, not seen passing:**\n\n");
        for m in &r.misses {
            s.push_str(&format!("- {m}\n"));
        }
        s.push('\n');
    }
    s.push_str(&verdict_table(&r.verdicts));
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

/// The Breaker's tests with their verdicts on the base and on the change, as a Markdown table
/// (at most 30 rows); nothing when there are none.
pub fn verdict_table(verdicts: &[TestVerdict]) -> String {
    if verdicts.is_empty() {
        return String::new();
    }
    let cell = |t: &str| t.replace('|', "\\|").replace('\n', " ");
    let mut s = "The Breaker's tests:\n\n| test | on the base | on this commit |\n|---|---|---|\n"
        .to_owned();
    for v in verdicts.iter().take(30) {
        s.push_str(&format!(
            "| `{}` | {} | {} |\n",
            cell(&v.test).replace('`', "'"),
            cell(&v.base),
            cell(&v.head)
        ));
    }
    if verdicts.len() > 30 {
        s.push_str(&format!("| … and {} more | | |\n", verdicts.len() - 30));
    }
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_blocks_outlast_backticks_inside() {
        assert_eq!(code_block("a"), "```text\na\n```");
        assert_eq!(code_block("x ```` y"), "`````text\nx ```` y\n`````");
    }

    #[test]
    fn the_breakers_tests_are_a_table_of_verdicts() {
        let v = |test: &str, head: &str| TestVerdict {
            test: test.into(),
            base: "failed".into(),
            head: head.into(),
        };
        let table = verdict_table(&[
            v("tests/test_x.py::test_y", "passed"),
            v("t|z", "did not run: skipped (conftest.py: x)"),
        ]);
        assert_eq!(
            table,
            "The Breaker's tests:\n\n| test | on the base | on this commit |\n|---|---|---|\n\
             | `tests/test_x.py::test_y` | failed | passed |\n\
             | `t\\|z` | failed | did not run: skipped (conftest.py: x) |\n\n"
        );
        assert_eq!(verdict_table(&[]), "");
    }
}
