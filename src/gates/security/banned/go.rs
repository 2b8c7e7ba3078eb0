//! Go's uses: each `import` spec names a path and binds a package name (its own name, or the
//! last part of the path without a `/vN` or `.vN` version; `.` imports every member, `_`
//! nothing). `pkg.Member` in code and types reads `path.Member` (`exec.Command` reads
//! `os/exec.Command`); with dot imports, a bare name also reads as each such package's member.

use std::collections::HashMap;

use tree_sitter::Node;

use super::{Use, UseKind, is_field, nodes, text};

/// The name a package is known by when its import gives none.
pub(super) fn default_name(path: &str) -> &str {
    let mut parts = path.rsplit('/');
    let last = parts.next().unwrap_or(path);
    let is_version =
        |s: &str| s.len() > 1 && s.starts_with('v') && s[1..].bytes().all(|b| b.is_ascii_digit());
    let last = match parts.next() {
        Some(before) if is_version(last) => before,
        _ => last,
    };
    match last.rsplit_once('.') {
        Some((name, v)) if is_version(v) => name,
        _ => last,
    }
}

/// The string a Go literal holds (interpreted or raw, without escapes).
fn literal(node: Node<'_>, src: &[u8]) -> String {
    let t = text(node, src);
    t.get(1..t.len().saturating_sub(1))
        .unwrap_or_default()
        .to_owned()
}

pub(super) fn uses(root: Node<'_>, src: &[u8]) -> Vec<Use> {
    let all = nodes(root);
    let mut packages: HashMap<String, String> = HashMap::new();
    let mut dotted: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for node in all.iter().filter(|n| n.kind() == "import_spec") {
        let Some(path) = node.child_by_field_name("path").map(|p| literal(p, src)) else {
            continue;
        };
        match node.child_by_field_name("name") {
            Some(n) if n.kind() == "dot" => dotted.push(path.clone()),
            Some(n) if n.kind() == "blank_identifier" => {}
            Some(n) => {
                packages.insert(text(n, src).to_owned(), path.clone());
            }
            None => {
                packages.insert(default_name(&path).to_owned(), path.clone());
            }
        }
        out.push(Use::at(*node, path, UseKind::Import));
    }
    for node in &all {
        let names: Vec<String> = match node.kind() {
            "selector_expression" | "qualified_type" => {
                let (pkg, member) = match node.kind() {
                    "selector_expression" => ("operand", "field"),
                    _ => ("package", "name"),
                };
                let (Some(pkg), Some(member)) = (
                    node.child_by_field_name(pkg),
                    node.child_by_field_name(member),
                ) else {
                    continue;
                };
                if !matches!(pkg.kind(), "identifier" | "package_identifier") {
                    continue;
                }
                match packages.get(text(pkg, src)) {
                    Some(path) => vec![format!("{path}.{}", text(member, src))],
                    None => continue,
                }
            }
            "identifier" | "type_identifier" if !dotted.is_empty() => {
                if node
                    .parent()
                    .is_some_and(|p| matches!(p.kind(), "selector_expression" | "qualified_type"))
                {
                    continue;
                }
                let name = text(*node, src);
                dotted.iter().map(|d| format!("{d}.{name}")).collect()
            }
            _ => continue,
        };
        let called = is_field(*node, "function")
            && node.parent().is_some_and(|p| p.kind() == "call_expression");
        let kind = if called {
            UseKind::Call
        } else {
            UseKind::Reference
        };
        out.extend(names.into_iter().map(|n| Use::at(*node, n, kind)));
    }
    out
}
