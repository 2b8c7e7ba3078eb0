//! Cargo's JSON messages (`cargo build --message-format=json`, also `check`, `clippy`, `test`):
//! one JSON object a line; those with `"reason":"compiler-message"` carry a rustc diagnostic.
//!
//! ```text
//! {"reason":"compiler-message",…,"message":{"$message_type":"diagnostic","level":"error","message":"mismatched types","code":{"code":"E0308",…},"spans":[{"file_name":"src/main.rs","is_primary":true,"line_start":9,"line_end":9,"column_start":18,"column_end":24,…}],…}}
//! ```
//!
//! The annotation covers the primary span (lines `line_start..=line_end`; on one line, columns
//! `column_start..column_end`, rustc's end being exclusive); level error → Failure,
//! warning → Warning, note/help → Notice; message the diagnostic's `message`, title its code.
//! Other lines (cargo's `Compiling …`, other reasons, broken JSON) are ignored.

use serde::Deserialize;

use crate::annotation::Annotation;

use super::paths::Roots;
use super::{Found, level_of};

#[derive(Deserialize)]
struct Line {
    reason: String,
    message: Option<Diagnostic>,
}

#[derive(Deserialize)]
struct Diagnostic {
    message: String,
    level: String,
    code: Option<Code>,
    #[serde(default)]
    spans: Vec<Span>,
}

#[derive(Deserialize)]
struct Code {
    code: String,
}

#[derive(Deserialize)]
struct Span {
    file_name: String,
    is_primary: bool,
    line_start: u32,
    line_end: u32,
    column_start: u32,
    column_end: u32,
}

pub fn parse(lines: &[&str], _roots: &Roots) -> Vec<Found> {
    lines
        .iter()
        .enumerate()
        .filter_map(|(at, line)| diagnostic(line).map(|a| Found::new(at, a)))
        .collect()
}

fn diagnostic(line: &str) -> Option<Annotation> {
    let line = line.trim();
    if !line.starts_with('{') || !line.contains("\"compiler-message\"") {
        return None;
    }
    let parsed: Line = serde_json::from_str(line).ok()?;
    if parsed.reason != "compiler-message" {
        return None;
    }
    let diagnostic = parsed.message?;
    let level = level_of(&diagnostic.level)
        .or_else(|| (diagnostic.level == "help").then_some(super::Level::Notice))?;
    let span = diagnostic.spans.into_iter().find(|s| s.is_primary)?;
    let mut annotation =
        Annotation::new(span.file_name, span.line_start, level, diagnostic.message);
    annotation.end_line = span.line_end.max(annotation.start_line);
    if annotation.start_line == annotation.end_line && span.column_start > 0 {
        annotation.start_column = Some(span.column_start);
        annotation.end_column = Some(span.column_end.saturating_sub(1).max(span.column_start));
    }
    if let Some(code) = diagnostic.code {
        annotation = annotation.with_title(code.code);
    }
    Some(annotation)
}

#[cfg(test)]
mod tests {
    use super::super::{parse, tests::show};

    #[test]
    fn errors_and_warnings_on_their_primary_spans() {
        let out = include_str!("../../../tests/fixtures/tool-output/cargo-json.txt");
        let got = parse("build", out, &["/tmp/brokencrate/"]);
        let want = [
            "src/main.rs:9:18 failure [E0308] mismatched types",
            "src/main.rs:12:9 failure [E0308] mismatched types",
            "warnlib/src/lib.rs:2:9 warning [unused_variables] unused variable: `unused`",
            "warnlib/src/lib.rs:6:4 warning [dead_code] function `never_called` is never used",
            "warnlib/src/lib.rs:13 warning [unused_must_use] unused `Result` that must be used",
            "src/main.rs:1:5 warning [unused_imports] unused import: `std::collections::HashMap`",
        ];
        assert_eq!(show(&got), want);
        let ends: Vec<_> = got.iter().map(|a| (a.end_line, a.end_column)).collect();
        let want = [
            (9, Some(23)),
            (12, Some(13)),
            (2, Some(14)),
            (6, Some(15)),
            (15, None),
            (1, Some(29)),
        ];
        assert_eq!(ends, want);
    }

    #[test]
    fn odd_lines_are_ignored() {
        let out = "{\"reason\":\"compiler-message\",\"message\":{\"level\":\"error\",\"message\":\"m\",\"spans\":[]}}\n\
                   {\"reason\":\"compiler-message\"\n\
                   {\"reason\":\"compiler-message\",\"message\":{\"level\":\"failure-note\",\"message\":\"m\",\n\
                   {\"reason\":\"compiler-message\",\"message\":{\"level\":\"help\",\"message\":\"h\",\"code\":null,\"spans\":\
                   [{\"file_name\":\"a.rs\",\"is_primary\":true,\"line_start\":0,\"line_end\":0,\"column_start\":0,\"column_end\":0}]}}\n";
        assert_eq!(show(&parse("build", out, &[])), ["a.rs:1 notice [] h"]);
    }
}
