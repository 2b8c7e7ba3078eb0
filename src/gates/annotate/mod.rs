//! Gate output → check-run annotations. `parse` reads one gate's combined stdout+stderr:
//! ANSI colours are stripped, every format parser below runs on the whole text (a test gate may
//! run pytest or `cargo test`, a lint gate ruff or mypy, so content decides, not the gate), and
//! only when none of them found anything does the `generic` fallback look for Python
//! tracebacks and `path:line:` mentions (not in the logs of Go tests that passed: `go_test`).
//! Paths are made relative to the repository root (`paths::Roots`) and anything outside it is
//! dropped; messages become one trimmed line of at
//! most 500 characters; duplicates (same path, line and message) go, keeping the highest level
//! and, among equals, the finding of a parser of the gate's own kind (the only use of the gate
//! name); Failures come first, then Warnings, then Notices, each in output order, at most 500.
//!
//! Parsers: `pytest`, `unittest`, `rust_test` (`cargo test` panics), `cargo_json`
//! (`--message-format=json`), `arrow` (rustc and ruff's full ` --> path:line:col` output),
//! `lint` (flake8, ruff concise, mypy, eslint `unix`, gcc-style `path:line:col: error:`).

mod arrow;
mod cargo_json;
mod generic;
mod go_test;
mod lint;
mod paths;
mod pytest;
mod rust_test;
mod text;

pub use text::strip_ansi;
mod traceback;
mod unittest;

#[cfg(test)]
mod tests;

use std::cmp::Reverse;
use std::collections::HashSet;

use crate::annotation::{Annotation, Level};
use paths::Roots;

/// At most this many annotations per gate.
const MAX_ANNOTATIONS: usize = 500;
/// At most this many characters per message.
const MAX_MESSAGE_CHARS: usize = 500;
/// GitHub's limit on an annotation title.
const MAX_TITLE_CHARS: usize = 255;

/// One finding of a parser: the annotation (its path still as the tool printed it) and the index
/// of the output line it came from, which orders the findings.
#[derive(Debug, Clone)]
struct Found {
    at: usize,
    annotation: Annotation,
}

impl Found {
    fn new(at: usize, annotation: Annotation) -> Self {
        Self { at, annotation }
    }
}

type Parser = fn(&[&str], &Roots) -> Vec<Found>;

/// Every specific parser, with the kind of gate (test, build, lint) it most belongs to.
const PARSERS: [(&str, Parser); 6] = [
    ("test", pytest::parse),
    ("test", unittest::parse),
    ("test", rust_test::parse),
    ("build", cargo_json::parse),
    ("build", arrow::parse),
    ("lint", lint::parse),
];

/// Reads one gate's combined stdout+stderr into annotations. `roots` are path prefixes to strip
/// so paths become relative to the repository root (e.g. "/work/" inside a container, or the
/// host worktree path "/data/worktrees/acme/widgets/feat-T-1/").
pub fn parse(gate: &str, output: &str, roots: &[&str]) -> Vec<Annotation> {
    let clean = text::strip_ansi(output);
    let lines: Vec<&str> = clean.lines().collect();
    let roots = Roots::new(roots);
    // On a duplicate, the finding of a parser of the gate's own kind is the one kept.
    let kind = match gate {
        "lint" | "typecheck" => "lint",
        "build" => "build",
        _ => "test",
    };
    let mut found = Vec::new();
    for (parser_kind, parser) in PARSERS {
        let rank = usize::from(parser_kind != kind);
        found.extend(parser(&lines, &roots).into_iter().map(|f| (rank, f)));
    }
    let kept = finish(found, &roots);
    if !kept.is_empty() {
        return kept;
    }
    // A passing or skipped Go test's `t.Log` lines are not findings.
    let mut lines = lines;
    for at in go_test::passed_logs(&lines).unwrap_or_default() {
        lines[at] = "";
    }
    let fallback = generic::parse(&lines, &roots).into_iter().map(|f| (0, f));
    finish(fallback, &roots)
}

/// Relative paths only, one-line messages, Failures first, no duplicates, at most 500.
fn finish(found: impl IntoIterator<Item = (usize, Found)>, roots: &Roots) -> Vec<Annotation> {
    let mut kept: Vec<(usize, usize, Annotation)> = found
        .into_iter()
        .filter_map(|(rank, Found { at, mut annotation })| {
            annotation.path = roots.relative(&annotation.path)?;
            let title = annotation.title.take();
            annotation.title = title
                .map(|t| text::one_line(&t, MAX_TITLE_CHARS))
                .filter(|t| !t.is_empty());
            annotation.message = text::one_line(&annotation.message, MAX_MESSAGE_CHARS);
            if annotation.message.is_empty() {
                annotation.message = annotation.title.clone().unwrap_or_else(|| "failed".into());
            }
            Some((rank, at, annotation))
        })
        .collect();
    // Of duplicates the highest level stays, then the gate's own parser's, then the earliest.
    kept.sort_by_key(|(rank, at, a)| (Reverse(a.level), *rank, *at));
    let mut seen = HashSet::new();
    kept.retain(|(_, _, a)| seen.insert((a.path.clone(), a.start_line, a.message.clone())));
    kept.sort_by_key(|(_, at, a)| (Reverse(a.level), *at));
    kept.into_iter()
        .map(|(_, _, a)| a)
        .take(MAX_ANNOTATIONS)
        .collect()
}

/// The level a severity word stands for (`error`, `Warning`, `note` …), if it is one.
fn level_of(word: &str) -> Option<Level> {
    match word.to_ascii_lowercase().as_str() {
        "error" | "fatal error" | "fatal" => Some(Level::Failure),
        "warning" | "warn" => Some(Level::Warning),
        "note" | "info" => Some(Level::Notice),
        _ => None,
    }
}
