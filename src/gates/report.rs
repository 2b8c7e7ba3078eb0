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
            shown(cmd).replace('`', "'"),
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

/// `command` as a person reads it: a quoted script of several lines (the pre-commit file list's
/// `python3 -c '…'`) shown by its title comment (`'<script: The tool, run on …>'`), other text
/// of several lines by its length (`'<12 lines>'`), and the quotes around a plain word
/// (`'ruff'`) left out. Only for showing: the command that runs is the one given.
pub fn shown(command: &str) -> String {
    let plain = |w: &str| {
        !w.is_empty()
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-./=:,+@%^$".contains(c))
    };
    let mut out: Vec<String> = Vec::new();
    let mut after_c = false;
    for (token, word) in shell_words(command) {
        // A script (`-c '…'`) by its title comment, where it starts with one.
        let title = word.lines().next().unwrap_or_default().strip_prefix("# ");
        out.push(match title {
            Some(title) if after_c && word.contains('\n') => {
                format!("'<script: {}>'", title.trim_end_matches('.'))
            }
            _ if word.contains('\n') => format!("'<{} lines>'", word.lines().count()),
            _ if plain(&word) => word.clone(),
            _ => token.to_owned(),
        });
        after_c = word == "-c";
    }
    out.join(" ")
}

/// The words of `command` split as a POSIX shell splits them at blanks outside quotes, each as
/// written and as the shell reads it: `'it'\''s'` is the word `it's`.
fn shell_words(command: &str) -> Vec<(&str, String)> {
    let mut words = Vec::new();
    let (mut start, mut word, mut quote) = (None, String::new(), None::<char>);
    let mut chars = command.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match (quote, c) {
            (None, ' ' | '\t' | '\n') => {
                if let Some(s) = start.take() {
                    words.push((&command[s..i], std::mem::take(&mut word)));
                }
                continue;
            }
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None | Some('"'), '\\') => {
                if let Some((_, next)) = chars.next() {
                    word.push(next);
                }
            }
            _ => word.push(c),
        }
        start.get_or_insert(i);
    }
    if let Some(s) = start {
        words.push((&command[s..], word));
    }
    words
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

    #[test]
    fn a_command_is_shown_on_one_line_without_needless_quotes() {
        let (command, _) = crate::env::precommit::hook_command(
            "repos:\n- repo: local\n  hooks:\n  - id: mypy\n    exclude: ^tests/x/.*$\n",
            "mypy",
            "*.gen.py\n",
        )
        .unwrap();
        assert_eq!(
            super::shown(&command),
            "python3 -c '<script: The tool, run on the files a pre-commit hook would get>' '' \
             '^tests/x/.*$' '<1 lines>' mypy"
        );
        assert_eq!(
            super::shown("pytest -q 'a b' x'\\''y"),
            "pytest -q 'a b' x'\\''y"
        );
        assert_eq!(super::shown("echo 'it'\\''s'"), "echo 'it'\\''s'");
        assert_eq!(super::shown("cargo test"), "cargo test");
        assert_eq!(super::shown("sh -c 'a\nb' x"), "sh -c '<2 lines>' x");
        assert_eq!(super::shown("x '# a\nb'"), "x '<2 lines>'");
    }
}
