//! Banned imports and calls in one Python file, read from tree-sitter's parse the way Python's
//! own `ast` names things: identifiers NFKC-normalised, parentheses dropped, string literals
//! read with their escapes; a file in an encoding other than UTF-8, or that does not parse
//! (Python 2's `exec` statement among others), is a finding, not passed unread.
//!
//! Names resolve through every binding the file makes anywhere (flow-insensitive): imports
//! with or without `as`, `from m import *`, and plain assignments of relevant names (`o = os`,
//! `s = os.system`, `sp = importlib.import_module("subprocess")`); `getattr(x, "literal")`,
//! `__import__("m")`, `importlib.import_module("m")`, `m.__dict__["f"]`, `vars(m)["f"]`,
//! `sys.modules["m"]` and `__builtins__["f"]` resolve too. A name that matches a banned one or
//! lies inside it (`os.system.__call__`) is a finding wherever it is read: called (`call`) or
//! passed around (`reference`). Shadowing is ignored on purpose: a local function named `eval`
//! is still reported when called, because the check reads names, not values. Strings and
//! comments are never code. Every walk is a loop over the parse, never a recursion, so no
//! file nests deeply enough to stop the check.

use tree_sitter::Node;

use super::PolicyFinding;
use super::names::Checker;
use super::tree::walk;
use crate::gates::grammar::Grammar;

/// Files larger than this are a finding, not parsed.
pub(super) const MAX_BYTES: usize = 5 << 20;

/// The findings in one Python file's `source`, named `path`.
pub(super) fn check_source(
    path: &str,
    source: &[u8],
    calls: &[String],
    imports: &[String],
) -> Vec<PolicyFinding> {
    let finding = |line: u32, col: u32, kind: &str, message: String| {
        PolicyFinding::of_file(path, line, col, kind, message)
    };
    if source.len() > MAX_BYTES {
        let why = format!("cannot check: larger than {MAX_BYTES} bytes; split the file");
        return vec![finding(1, 1, "error", why)];
    }
    if let Some(encoding) = foreign_encoding(source) {
        let why = format!(
            "cannot check: the file declares the encoding `{encoding}`; save it as UTF-8 and drop the `coding:` line"
        );
        return vec![finding(1, 1, "error", why)];
    }
    let source = source.strip_prefix(b"\xef\xbb\xbf").unwrap_or(source);
    if std::str::from_utf8(source).is_err() {
        let why = "cannot parse: the file is not UTF-8".to_owned();
        return vec![finding(1, 1, "syntax", why)];
    }
    let Some(tree) = Grammar::Python.parser().parse(source, None) else {
        return vec![finding(
            1,
            1,
            "error",
            "cannot check: the parser gave up".into(),
        )];
    };
    let (all, up) = walk(tree.root_node());
    if let Some((at, why)) = syntax_error(&all) {
        let p = at.start_position();
        let (line, col) = (p.row as u32 + 1, p.column as u32 + 1);
        return vec![finding(line, col, "syntax", format!("cannot parse: {why}"))];
    }
    let mut checker = Checker::new(path, source, calls, imports, up);
    checker.run(&all);
    checker.found
}

/// The encoding a `coding:` comment on the first two lines declares (PEP 263), unless it is
/// UTF-8 or ASCII, which the parse reads as they are.
fn foreign_encoding(source: &[u8]) -> Option<String> {
    for line in source.split(|&b| b == b'\n').take(2) {
        let line = String::from_utf8_lossy(line);
        let comment = line.trim_start_matches([' ', '\t', '\x0c']);
        if !comment.starts_with('#') {
            continue;
        }
        // The first `coding[:=] name` on the line, as Python's `coding[:=][ \t]*([-\w.]+)`
        // finds it: "# decoding, coding: utf-7" declares utf-7.
        let declared = comment.match_indices("coding").find_map(|(at, _)| {
            let value = comment[at + "coding".len()..].strip_prefix([':', '='])?;
            let name: String = value
                .trim_start_matches([' ', '\t'])
                .chars()
                .take_while(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'))
                .collect();
            (!name.is_empty()).then_some(name)
        });
        let Some(name) = declared else {
            continue;
        };
        let plain = name.to_ascii_lowercase().replace('_', "-");
        return match plain.as_str() {
            "utf-8" | "utf8" | "utf-8-sig" | "ascii" | "us-ascii" => None,
            _ => Some(name),
        };
    }
    None
}

/// The first place the parse could not read (the innermost of nested errors), and why;
/// Python 2's `exec` and `print` statements, which Python 3 refuses, count (`print >> f, x`
/// does not: it is an expression in Python 3, and its parts are checked as such).
fn syntax_error<'t>(all: &[Node<'t>]) -> Option<(Node<'t>, String)> {
    let broken = all.first()?.has_error();
    for &n in all {
        let innermost = || {
            let mut cursor = n.walk();
            !n.children(&mut cursor).any(|c| c.has_error())
        };
        if broken && (n.is_missing() || n.is_error() && innermost()) {
            let why = if n.is_missing() {
                format!("expected `{}`", n.kind())
            } else {
                "invalid syntax".to_owned()
            };
            return Some((n, why));
        }
        let chevron = || {
            let mut cursor = n.walk();
            n.children(&mut cursor).any(|c| c.kind() == "chevron")
        };
        let word = match n.kind() {
            "exec_statement" => "exec",
            "print_statement" if !chevron() => "print",
            _ => continue,
        };
        let why = format!("a Python 2 `{word}` statement; call `{word}(…)` instead");
        return Some((n, why));
    }
    None
}
