//! Rust's uses: `use` trees (nested lists, `self`, `as`, globs) and `extern crate … as` bind
//! names; every path in code and types (`process::Command::new`, `<C>::new`, `::std::…`) and
//! every path written in a macro call's tokens is resolved through them. A path whose first
//! part is not bound is read as written and, for each glob import, as under that module.
//! Shadowing is ignored: the check reads names, not values.

use std::collections::HashMap;

use tree_sitter::Node;

use super::{Use, UseKind, is_field, nodes, text};

/// Names bound by a file's imports.
#[derive(Default)]
struct Scope {
    aliases: HashMap<String, String>,
    globs: Vec<String>,
}

const PATHS: [&str; 4] = [
    "scoped_identifier",
    "scoped_type_identifier",
    "generic_type",
    "bracketed_type",
];

/// The parts of a path node (`std::process::Command` → `[std, process, Command]`; a leading
/// `::` is an empty first part); `None` for what is not a plain path (`<T as Trait>::f`).
fn parts(node: Node<'_>, src: &[u8]) -> Option<Vec<String>> {
    match node.kind() {
        "identifier" | "type_identifier" | "crate" | "self" | "super" => {
            Some(vec![text(node, src).to_owned()])
        }
        "scoped_identifier" | "scoped_type_identifier" => {
            let mut out = match node.child_by_field_name("path") {
                Some(p) => parts(p, src)?,
                None => vec![String::new()],
            };
            out.push(text(node.child_by_field_name("name")?, src).to_owned());
            Some(out)
        }
        "generic_type" => parts(node.child_by_field_name("type")?, src),
        "bracketed_type" => parts(node.named_child(0)?, src),
        _ => None,
    }
}

impl Scope {
    fn bind(&mut self, name: &str, full: &[String]) {
        if !name.is_empty() && name != "_" {
            self.aliases.insert(name.to_owned(), full.join("::"));
        }
    }

    /// Walks a `use` tree under `prefix`, binding names and returning the full paths.
    fn use_tree(&mut self, node: Node<'_>, src: &[u8], prefix: &[String], out: &mut Vec<Use>) {
        let joined = |rest: Vec<String>| [prefix, &rest].concat();
        match node.kind() {
            "use_as_clause" => {
                let (Some(path), Some(alias)) = (
                    node.child_by_field_name("path"),
                    node.child_by_field_name("alias"),
                ) else {
                    return;
                };
                if let Some(p) = parts(path, src) {
                    let full = joined(p);
                    self.bind(text(alias, src), &full);
                    out.push(Use::at(node, full.join("::"), UseKind::Import));
                }
            }
            "scoped_use_list" => {
                let inner = match node.child_by_field_name("path") {
                    Some(p) => match parts(p, src) {
                        Some(p) => joined(p),
                        None => return,
                    },
                    None => prefix.to_vec(),
                };
                if let Some(list) = node.child_by_field_name("list") {
                    self.use_tree(list, src, &inner, out);
                }
            }
            "use_list" => {
                for child in node.named_children(&mut node.walk()) {
                    if child.kind() == "self" {
                        if let Some(last) = prefix.last() {
                            self.bind(last, prefix);
                            out.push(Use::at(child, prefix.join("::"), UseKind::Import));
                        }
                    } else {
                        self.use_tree(child, src, prefix, out);
                    }
                }
            }
            "use_wildcard" => {
                let full = match node.named_child(0).and_then(|p| parts(p, src)) {
                    Some(p) => joined(p),
                    None => prefix.to_vec(),
                };
                let name = full.join("::");
                out.push(Use::at(node, name.clone(), UseKind::Import));
                self.globs.push(name);
            }
            _ => {
                if let Some(p) = parts(node, src) {
                    let full = joined(p);
                    if let Some(last) = full.last().cloned() {
                        self.bind(&last, &full);
                    }
                    out.push(Use::at(node, full.join("::"), UseKind::Import));
                }
            }
        }
    }

    /// The full names a path written in code may stand for.
    fn resolve(&self, parts: &[String]) -> Vec<String> {
        let Some((first, rest)) = parts.split_first() else {
            return vec![];
        };
        if first.is_empty() {
            return vec![rest.join("::")];
        }
        let tail = |head: &str| {
            [head.to_owned()]
                .into_iter()
                .chain(rest.iter().cloned())
                .collect::<Vec<_>>()
                .join("::")
        };
        if let Some(full) = self.aliases.get(first) {
            return vec![tail(full)];
        }
        let mut out = vec![parts.join("::")];
        out.extend(
            self.globs
                .iter()
                .map(|g| format!("{g}::{}", parts.join("::"))),
        );
        out
    }
}

/// The paths in a macro call's tokens: `a::b::c` runs of identifiers joined by `::`.
fn token_paths<'t>(tree: Node<'t>, src: &[u8], out: &mut Vec<(Node<'t>, Vec<String>)>) {
    let mut current: Option<(Node<'t>, Vec<String>)> = None;
    let mut joined = false;
    for child in tree.children(&mut tree.walk()) {
        match child.kind() {
            "identifier" | "self" | "super" | "crate" => {
                match (&mut current, joined) {
                    (Some((_, parts)), true) => parts.push(text(child, src).to_owned()),
                    _ => {
                        out.extend(current.take());
                        current = Some((child, vec![text(child, src).to_owned()]));
                    }
                }
                joined = false;
            }
            "::" => {
                if current.is_none() {
                    current = Some((child, vec![String::new()]));
                }
                joined = true;
            }
            _ => {
                out.extend(current.take());
                joined = false;
                if child.kind() == "token_tree" {
                    token_paths(child, src, out);
                }
            }
        }
    }
    out.extend(current);
}

pub(super) fn uses(root: Node<'_>, src: &[u8]) -> Vec<Use> {
    let all = nodes(root);
    let mut scope = Scope::default();
    let mut out = Vec::new();
    for node in &all {
        match node.kind() {
            "use_declaration" => {
                if let Some(arg) = node.child_by_field_name("argument") {
                    scope.use_tree(arg, src, &[], &mut out);
                }
            }
            "extern_crate_declaration" => {
                if let Some(name) = node.child_by_field_name("name") {
                    let krate = vec![text(name, src).to_owned()];
                    if let Some(alias) = node.child_by_field_name("alias") {
                        scope.bind(text(alias, src), &krate);
                    }
                    out.push(Use::at(*node, krate.join("::"), UseKind::Import));
                }
            }
            _ => {}
        }
    }
    let mut paths = Vec::new();
    for node in &all {
        let kind = node.kind();
        if kind == "token_tree"
            && node
                .parent()
                .is_some_and(|p| p.kind() == "macro_invocation")
        {
            token_paths(*node, src, &mut paths);
            continue;
        }
        let is_path = PATHS.contains(&kind) || kind == "identifier" || kind == "type_identifier";
        let inner = node.parent().is_some_and(|p| {
            PATHS.contains(&p.kind())
                || p.kind().starts_with("use_")
                || matches!(
                    p.kind(),
                    "scoped_use_list" | "extern_crate_declaration" | "macro_invocation"
                )
        });
        if is_path
            && !inner
            && let Some(p) = parts(*node, src)
        {
            paths.push((*node, p));
        }
    }
    for (node, p) in paths {
        let called = is_field(node, "function")
            && node.parent().is_some_and(|p| p.kind() == "call_expression");
        let kind = if called {
            UseKind::Call
        } else {
            UseKind::Reference
        };
        out.extend(
            scope
                .resolve(&p)
                .into_iter()
                .map(|name| Use::at(node, name, kind)),
        );
    }
    out
}
