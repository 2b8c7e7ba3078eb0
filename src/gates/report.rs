//! What a gate's check run says: its title (with the test counts of [`super::results`]) and a
//! Markdown summary with the tail of the output.

use super::GateResult;

pub use super::results::TestCounts;

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
    fn code_blocks_outlast_backticks_inside() {
        assert_eq!(code_block("a"), "```text\na\n```");
        assert_eq!(code_block("x ```` y"), "`````text\nx ```` y\n`````");
    }
}
