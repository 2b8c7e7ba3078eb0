//! The parse of a Python file as `ast` would see it: nodes in order with what is above each,
//! and which identifiers are names that are read, stored or only declared.

use std::collections::{HashMap, HashSet};

use tree_sitter::Node;
use unicode_normalization::UnicodeNormalization as _;

use crate::gates::security::banned::text;

/// Each node's parent and the field it is in there (`Node::parent` walks down from the root
/// each time: quadratic on a deeply nested file).
pub(super) type Up<'t> = HashMap<usize, (Node<'t>, Option<&'t str>)>;

/// Every node under `root`, parents before children, and what is above each.
pub(super) fn walk<'t>(root: Node<'t>) -> (Vec<Node<'t>>, Up<'t>) {
    let (mut all, mut up) = (Vec::new(), HashMap::new());
    // The nodes above the one visited, root first.
    let mut above: Vec<Node<'t>> = Vec::new();
    for (n, depth, field) in crate::gates::grammar::preorder(root) {
        above.truncate(depth);
        if let Some(&p) = above.last() {
            up.insert(n.id(), (p, field));
        }
        all.push(n);
        above.push(n);
    }
    (all, up)
}

/// `n` without the parentheses around it.
pub(super) fn unparen(mut n: Node<'_>) -> Node<'_> {
    while n.kind() == "parenthesized_expression" {
        match named(n).into_iter().next() {
            Some(inner) => n = inner,
            None => break,
        }
    }
    n
}

/// `n`'s named children, comments left out.
pub(super) fn named(n: Node<'_>) -> Vec<Node<'_>> {
    let mut cursor = n.walk();
    n.named_children(&mut cursor)
        .filter(|c| c.kind() != "comment")
        .collect()
}

/// A call's positional arguments (`*xs` among them), as `ast.Call.args` has them.
pub(super) fn positional(call: Node<'_>) -> Vec<Node<'_>> {
    let Some(args) = call.child_by_field_name("arguments") else {
        return vec![];
    };
    if args.kind() == "generator_expression" {
        return vec![args];
    }
    named(args)
        .into_iter()
        .filter(|c| !matches!(c.kind(), "keyword_argument" | "dictionary_splat"))
        .collect()
}

/// An identifier's name as Python knows it: NFKC-normalised (`ｅｖａｌ` is `eval`).
pub(super) fn ident(n: Node<'_>, src: &[u8]) -> String {
    let t = text(n, src);
    if t.is_ascii() {
        t.to_owned()
    } else {
        t.nfkc().collect()
    }
}

/// A `dotted_name`'s parts joined by dots (`os . path` is `os.path`).
pub(super) fn dotted(n: Node<'_>, src: &[u8]) -> String {
    let n = match n.kind() {
        "aliased_import" => n.child_by_field_name("name").unwrap_or(n),
        _ => n,
    };
    let parts: Vec<String> = named(n).into_iter().map(|p| ident(p, src)).collect();
    parts.join(".")
}

/// A `case` pattern's `a.b` (a value it compares with, read as `a.b` is read); a single
/// name there is a capture, not a read.
pub(super) fn is_value_pattern(n: Node<'_>, up: &Up<'_>) -> bool {
    n.kind() == "dotted_name"
        && up
            .get(&n.id())
            .is_some_and(|(p, _)| p.kind() == "case_pattern")
        && n.named_child_count() > 1
}

/// Whether identifier `n` is a name `ast` would give a `Name` node: not an attribute's name,
/// a definition's, a parameter's, a keyword's, an import's or a `global`'s.
pub(super) fn is_name(n: Node<'_>, up: &Up<'_>) -> bool {
    let Some(&(p, field)) = up.get(&n.id()) else {
        return true;
    };
    let grandparent = up.get(&p.id()).map(|(g, _)| g.kind());
    match p.kind() {
        "attribute" => field != Some("attribute"),
        "function_definition"
        | "class_definition"
        | "keyword_argument"
        | "default_parameter"
        | "typed_default_parameter" => field != Some("name"),
        "parameters" | "lambda_parameters" | "typed_parameter" | "global_statement"
        | "nonlocal_statement" | "dotted_name" | "aliased_import" | "keyword_pattern"
        | "splat_pattern" | "dict_pattern" => false,
        "list_splat_pattern" | "dictionary_splat_pattern" => !matches!(
            grandparent,
            Some("parameters" | "lambda_parameters" | "typed_parameter")
        ),
        "type" => grandparent != Some("type_parameter"),
        _ => true,
    }
}

/// The expressions that are written to or deleted (`ast`'s `Store` and `Del`), not read.
pub(super) fn stores(all: &[Node<'_>]) -> HashSet<usize> {
    let mut out = HashSet::new();
    let mut todo: Vec<Node<'_>> = Vec::new();
    for &n in all {
        match n.kind() {
            "assignment"
            | "augmented_assignment"
            | "for_statement"
            | "for_in_clause"
            | "type_alias_statement" => todo.extend(n.child_by_field_name("left")),
            "named_expression" => todo.extend(n.child_by_field_name("name")),
            "delete_statement" | "as_pattern_target" => todo.extend(named(n)),
            _ => {}
        }
        while let Some(t) = todo.pop() {
            match t.kind() {
                "identifier" | "attribute" | "subscript" => {
                    out.insert(t.id());
                }
                "pattern_list"
                | "tuple_pattern"
                | "list_pattern"
                | "tuple"
                | "list"
                | "expression_list"
                | "parenthesized_expression"
                | "list_splat_pattern"
                | "list_splat"
                | "type" => todo.extend(named(t)),
                _ => {}
            }
        }
    }
    out
}
