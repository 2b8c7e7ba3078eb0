//! Cyclomatic complexity of the functions a change touches, measured on a parse tree
//! (tree-sitter, in this process, on `head`'s blobs): 1 + the decision points of a function's
//! body — branches (`if`, `elif`/`else if`), loops, each `match`/`switch` arm beyond the first
//! (a default arm is none), `catch`/`except` clauses, conditional expressions, `&&`, `||` (and
//! Python's `and`/`or`), Rust's `?`. A function nested in another is measured on its own and not
//! counted in the outer one. Python, Rust, JavaScript/TypeScript and Go are read; other files
//! are not measured.
//!
//! [`check`] keeps the functions whose lines the change added or changed and that are above the
//! limit (the ticket's `vibe_config.complexity_limit`, or `policy.complexity_limit`), as findings
//! for the lint gate.

use git2::{Oid, Repository};
use tree_sitter::Node;

use super::grammar::Grammar as Lang;
use crate::annotation::{Annotation, Level};

/// Title of the findings.
pub const TITLE: &str = "complexity";

/// One function and its measure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    pub name: String,
    /// 1-based, inclusive.
    pub start_line: u32,
    pub end_line: u32,
    pub complexity: u32,
}

/// What the measure needs of a grammar.
trait Measure {
    fn starts_function(self, kind: &str) -> bool;
    fn decisions(self, node: Node<'_>, src: &[u8]) -> u32;
}

impl Measure for Lang {
    /// Node kinds that start a function of their own.
    fn starts_function(self, kind: &str) -> bool {
        match self {
            Self::Python => kind == "function_definition",
            Self::Rust => kind == "function_item",
            Self::JavaScript | Self::TypeScript | Self::Tsx => matches!(
                kind,
                "function_declaration"
                    | "generator_function_declaration"
                    | "method_definition"
                    | "function_expression"
                    | "arrow_function"
            ),
            Self::Go => matches!(kind, "function_declaration" | "method_declaration"),
        }
    }

    /// How many decision points `node` itself adds (not its children).
    fn decisions(self, node: Node<'_>, src: &[u8]) -> u32 {
        let kind = node.kind();
        let operator = || {
            node.child_by_field_name("operator")
                .and_then(|o| o.utf8_text(src).ok())
                .unwrap_or_default()
        };
        match self {
            Self::Python => match kind {
                "if_statement"
                | "elif_clause"
                | "for_statement"
                | "while_statement"
                | "except_clause"
                | "conditional_expression"
                | "boolean_operator"
                | "for_in_clause"
                | "if_clause" => 1,
                // `case _:` is the default arm.
                "case_clause" => u32::from(!is_wildcard_case(node, src)),
                _ => 0,
            },
            Self::Rust => match kind {
                "if_expression" | "while_expression" | "for_expression" | "try_expression" => 1,
                "match_arm" => u32::from(node.prev_named_sibling().is_some()),
                "binary_expression" => u32::from(matches!(operator(), "&&" | "||")),
                _ => 0,
            },
            Self::JavaScript | Self::TypeScript | Self::Tsx => match kind {
                "if_statement" | "for_statement" | "for_in_statement" | "while_statement"
                | "do_statement" | "switch_case" | "catch_clause" | "ternary_expression" => 1,
                "binary_expression" => u32::from(matches!(operator(), "&&" | "||" | "??")),
                _ => 0,
            },
            Self::Go => match kind {
                "if_statement" | "for_statement" | "expression_case" | "type_case"
                | "communication_case" => 1,
                "binary_expression" => u32::from(matches!(operator(), "&&" | "||")),
                _ => 0,
            },
        }
    }
}

/// `case _:` in a Python `match`.
fn is_wildcard_case(node: Node<'_>, src: &[u8]) -> bool {
    let text = node.utf8_text(src).unwrap_or_default();
    let head = text.split(':').next().unwrap_or_default();
    head.split_whitespace().collect::<Vec<_>>() == ["case", "_"]
}

/// The functions of a file and their complexity; `None` when the file's language is not read
/// or it does not parse.
pub fn functions(path: &str, src: &[u8]) -> Option<Vec<Function>> {
    let lang = Lang::of_path(path)?;
    let tree = lang.parser().parse(src, None)?;
    // `collect` recurses along the parse: a deeper file is not measured.
    if super::grammar::depth_over(tree.root_node(), super::grammar::MAX_DEPTH).is_some() {
        return None;
    }
    let mut out = Vec::new();
    collect(lang, tree.root_node(), src, &mut out);
    out.sort_by_key(|f| f.start_line);
    Some(out)
}

/// Every function under `node`, each measured on its own.
fn collect(lang: Lang, node: Node<'_>, src: &[u8], out: &mut Vec<Function>) {
    if lang.starts_function(node.kind()) {
        out.push(Function {
            name: name_of(node, src),
            start_line: node.start_position().row as u32 + 1,
            end_line: node.end_position().row as u32 + 1,
            complexity: 1 + decisions_in(lang, node, src, true),
        });
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        collect(lang, child, src, out);
    }
}

/// The decision points of `node`'s subtree, stopping at functions nested in it.
fn decisions_in(lang: Lang, node: Node<'_>, src: &[u8], top: bool) -> u32 {
    if !top && lang.starts_function(node.kind()) {
        return 0;
    }
    let mut n = lang.decisions(node, src);
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        n += decisions_in(lang, child, src, false);
    }
    n
}

/// The function's name, or the variable it is assigned to, or `<anonymous>`.
fn name_of(node: Node<'_>, src: &[u8]) -> String {
    let text = |n: Node<'_>| n.utf8_text(src).ok().map(str::to_owned);
    if let Some(name) = node.child_by_field_name("name").and_then(text) {
        return name;
    }
    let parent = node.parent();
    parent
        .filter(|p| {
            matches!(
                p.kind(),
                "variable_declarator" | "pair" | "assignment_expression"
            )
        })
        .and_then(|p| {
            p.child_by_field_name("name")
                .or_else(|| p.child_by_field_name("key"))
                .or_else(|| p.child_by_field_name("left"))
        })
        .and_then(text)
        .unwrap_or_else(|| "<anonymous>".to_owned())
}

/// Functions above `limit` among those whose lines `head` adds or changes relative to `base`
/// (commit or tree ids), one Failure annotation each, sorted by path and line.
pub fn check(
    repo: &Repository,
    base: Oid,
    head: Oid,
    limit: u32,
) -> Result<Vec<Annotation>, git2::Error> {
    let mut findings = Vec::new();
    for file in super::changes::changed_files(repo, base, head)? {
        if Lang::of_path(&file.path).is_none() {
            continue;
        }
        let blob = repo.find_blob(file.blob)?;
        let Some(functions) = functions(&file.path, blob.content()) else {
            continue;
        };
        for f in functions {
            let touched = file
                .added
                .iter()
                .any(|&l| (f.start_line..=f.end_line).contains(&l));
            if touched && f.complexity > limit {
                let message = format!(
                    "`{}` has a cyclomatic complexity of {}, above the limit of {limit}: split it into smaller functions or flatten its branches.",
                    f.name, f.complexity
                );
                let mut a = Annotation::new(&file.path, f.start_line, Level::Failure, message)
                    .with_title(TITLE);
                a.end_line = f.end_line;
                findings.push(a);
            }
        }
    }
    findings.sort_by(|a, b| (&a.path, a.start_line).cmp(&(&b.path, b.start_line)));
    Ok(findings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measure(path: &str, src: &str) -> Vec<(String, u32)> {
        functions(path, src.as_bytes())
            .unwrap()
            .into_iter()
            .map(|f| (f.name, f.complexity))
            .collect()
    }

    #[test]
    fn python_counts_branches_loops_handlers_and_boolean_operators() {
        let src = "\
def simple(a):
    return a

def branchy(a, b):
    if a and b:
        return 1
    elif a or b:
        return 2
    for x in range(3):
        while x:
            x -= 1
    try:
        pass
    except ValueError:
        pass
    return [y for y in range(3) if y] if a else 0

def matcher(v):
    match v:
        case 1:
            return 'one'
        case 2:
            return 'two'
        case _:
            return 'many'
";
        // branchy: if, and, elif, or, for, while, except, for-in, if-clause, conditional = 10.
        assert_eq!(
            measure("m.py", src),
            [
                ("simple".to_owned(), 1),
                ("branchy".to_owned(), 11),
                ("matcher".to_owned(), 3)
            ]
        );
    }

    #[test]
    fn rust_counts_match_arms_beyond_the_first_and_question_marks() {
        let src = "\
fn f(x: Option<u8>) -> Result<u8, E> {
    let y = g()?;
    match x {
        Some(0) => Ok(0),
        Some(n) if n > 3 && y > 1 => Ok(n),
        _ => Err(E),
    }
}
fn outer() {
    fn inner(a: bool) { if a {} }
    if true {}
}
";
        // f: ?, two arms beyond the first, && = 1 + 4; outer does not count inner's if.
        assert_eq!(
            measure("lib.rs", src),
            [
                ("f".to_owned(), 5),
                ("outer".to_owned(), 2),
                ("inner".to_owned(), 2)
            ]
        );
    }

    #[test]
    fn javascript_typescript_and_go_are_measured_too() {
        let js = "const pick = (a, b) => a ?? (b ? 1 : 2);\nfunction sw(x) { switch (x) { case 1: return 1; case 2: return 2; default: return 0; } }\n";
        assert_eq!(
            measure("a.js", js),
            [("pick".to_owned(), 3), ("sw".to_owned(), 3)]
        );
        let ts =
            "class A { m(x: number): number { if (x > 1 || x < -1) { return 1; } return 0; } }\n";
        assert_eq!(measure("a.ts", ts), [("m".to_owned(), 3)]);
        let go = "package p\nfunc F(x int) int {\n\tswitch {\n\tcase x > 1 && x < 5:\n\t\treturn 1\n\tdefault:\n\t\treturn 0\n\t}\n}\n";
        assert_eq!(measure("p.go", go), [("F".to_owned(), 3)]);
        assert!(functions("README.md", b"# x").is_none());
    }

    #[test]
    fn a_file_nested_too_deep_is_not_measured_and_crashes_nothing() {
        let deep = format!(
            "def f():\n    return {}1{}\n",
            "(".repeat(5000),
            ")".repeat(5000)
        );
        let measured = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || functions("deep.py", deep.as_bytes()))
            .unwrap()
            .join()
            .expect("no stack overflow");
        assert!(measured.is_none());
        assert_eq!(
            measure("ok.py", "def f():\n    return ((1))\n"),
            [("f".into(), 1)]
        );
    }

    #[test]
    fn only_changed_functions_above_the_limit_are_findings() {
        use crate::gates::security::testing::{Change, TestRepo};
        let t = TestRepo::new();
        let old = "def calm(a):\n    return a\n\ndef busy(a):\n    if a:\n        return 1\n    if a > 2:\n        return 2\n    return 0\n";
        let base = t.commit(None, &[("m.py", Change::Write(old.as_bytes()))]);
        // Only `calm` changes, and grows branches; `busy` is as complex but untouched.
        let new = "def calm(a):\n    if a:\n        return 1\n    if a > 2:\n        return 2\n    return a\n\ndef busy(a):\n    if a:\n        return 1\n    if a > 2:\n        return 2\n    return 0\n";
        let head = t.commit(Some(base), &[("m.py", Change::Write(new.as_bytes()))]);
        let found = check(&t.repo, base, head, 2).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            (
                found[0].path.as_str(),
                found[0].start_line,
                found[0].end_line
            ),
            ("m.py", 1, 6)
        );
        assert!(
            found[0]
                .message
                .contains("`calm` has a cyclomatic complexity of 3, above the limit of 2")
        );
        assert!(check(&t.repo, base, head, 3).unwrap().is_empty());
    }
}
