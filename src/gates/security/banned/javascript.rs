//! JavaScript's and TypeScript's uses: `import` (default, namespace, named, `import x =
//! require()`), `export … from`, `require("m")` and `import("m")` name modules (a `node:`
//! prefix dropped) and bind names, as do `const x = <name>` and destructuring (`const {
//! exec: run } = require("child_process")`). Member chains (`cp.exec`, `cp["exec"]`,
//! `require("m").f`, `globalThis.eval`) are resolved through them; `new F()` is a call.
//! Shadowing is ignored: the check reads names, not values.

use std::collections::HashMap;

use tree_sitter::Node;

use super::{Use, UseKind, is_field, nodes, text};

/// Objects that hold the globals.
const GLOBALS: [&str; 4] = ["globalThis.", "window.", "global.", "self."];

fn norm(mut name: String) -> String {
    while let Some(rest) = GLOBALS.iter().find_map(|g| name.strip_prefix(g)) {
        name = rest.to_owned();
    }
    name
}

fn module(name: &str) -> String {
    name.strip_prefix("node:").unwrap_or(name).to_owned()
}

/// The value of a string literal or a template without substitutions.
fn literal(node: Node<'_>, src: &[u8]) -> Option<String> {
    match node.kind() {
        "string" | "template_string" => {
            if node
                .named_children(&mut node.walk())
                .any(|c| c.kind() == "template_substitution")
            {
                return None;
            }
            let t = text(node, src);
            Some(t.get(1..t.len().saturating_sub(1))?.to_owned())
        }
        _ => None,
    }
}

#[derive(Default)]
struct Scope {
    aliases: HashMap<String, String>,
}

impl Scope {
    /// The module a `require("m")` or `import("m")` call loads.
    fn loaded(node: Node<'_>, src: &[u8]) -> Option<String> {
        if node.kind() != "call_expression" {
            return None;
        }
        let func = node.child_by_field_name("function")?;
        if !(func.kind() == "import"
            || (func.kind() == "identifier" && text(func, src) == "require"))
        {
            return None;
        }
        let arg = node.child_by_field_name("arguments")?.named_child(0)?;
        literal(arg, src).map(|m| module(&m))
    }

    /// The dotted name `node` stands for, when it is a name.
    fn resolve(&self, node: Node<'_>, src: &[u8]) -> Option<String> {
        let name = match node.kind() {
            "identifier" => {
                let t = text(node, src);
                self.aliases.get(t).cloned().unwrap_or_else(|| t.to_owned())
            }
            "member_expression" => {
                let object = self.resolve(node.child_by_field_name("object")?, src)?;
                format!(
                    "{object}.{}",
                    text(node.child_by_field_name("property")?, src)
                )
            }
            "subscript_expression" => {
                let object = self.resolve(node.child_by_field_name("object")?, src)?;
                let key = literal(node.child_by_field_name("index")?, src)?;
                format!("{object}.{key}")
            }
            "parenthesized_expression" | "await_expression" | "non_null_expression" => {
                return self.resolve(node.named_child(0)?, src);
            }
            "call_expression" => return Self::loaded(node, src),
            _ => return None,
        };
        Some(norm(name))
    }

    /// Binds the names a declaration's pattern takes from `value`.
    fn bind_pattern(&mut self, pattern: Node<'_>, value: &str, src: &[u8]) {
        match pattern.kind() {
            "identifier" => {
                self.aliases
                    .insert(text(pattern, src).to_owned(), value.to_owned());
            }
            "object_pattern" => {
                for p in pattern.named_children(&mut pattern.walk()) {
                    match p.kind() {
                        "shorthand_property_identifier_pattern" => {
                            let key = text(p, src);
                            self.aliases
                                .insert(key.to_owned(), format!("{value}.{key}"));
                        }
                        "pair_pattern" => {
                            if let (Some(k), Some(v)) =
                                (p.child_by_field_name("key"), p.child_by_field_name("value"))
                            {
                                let key =
                                    literal(k, src).unwrap_or_else(|| text(k, src).to_owned());
                                self.bind_pattern(v, &format!("{value}.{key}"), src);
                            }
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }

    /// Bindings made by an import statement from module `m`.
    fn import_clause(&mut self, clause: Node<'_>, m: &str, src: &[u8]) {
        for c in clause.named_children(&mut clause.walk()) {
            match c.kind() {
                "identifier" => {
                    self.aliases.insert(text(c, src).to_owned(), m.to_owned());
                }
                "namespace_import" => {
                    if let Some(id) = c.named_child(0) {
                        self.aliases.insert(text(id, src).to_owned(), m.to_owned());
                    }
                }
                "named_imports" => {
                    for s in c.named_children(&mut c.walk()) {
                        let Some(name) = s.child_by_field_name("name") else {
                            continue;
                        };
                        let local = s.child_by_field_name("alias").unwrap_or(name);
                        let imported =
                            literal(name, src).unwrap_or_else(|| text(name, src).to_owned());
                        self.aliases
                            .insert(text(local, src).to_owned(), format!("{m}.{imported}"));
                    }
                }
                _ => {}
            }
        }
    }
}

pub(super) fn uses(root: Node<'_>, src: &[u8]) -> Vec<Use> {
    let all = nodes(root);
    let mut scope = Scope::default();
    let mut out = Vec::new();
    for node in &all {
        match node.kind() {
            "import_statement" | "export_statement" => {
                let Some(source) = node
                    .child_by_field_name("source")
                    .and_then(|s| literal(s, src))
                else {
                    // `import x = require("m")` keeps its source inside the clause.
                    if let Some(req) = node
                        .named_children(&mut node.walk())
                        .find(|c| c.kind() == "import_require_clause")
                        && let (Some(id), Some(m)) = (
                            req.named_child(0),
                            req.child_by_field_name("source")
                                .and_then(|s| literal(s, src)),
                        )
                    {
                        let m = module(&m);
                        scope.aliases.insert(text(id, src).to_owned(), m.clone());
                        out.push(Use::at(*node, m, UseKind::Import));
                    }
                    continue;
                };
                let m = module(&source);
                for clause in node
                    .named_children(&mut node.walk())
                    .filter(|c| c.kind() == "import_clause")
                {
                    scope.import_clause(clause, &m, src);
                }
                out.push(Use::at(*node, m, UseKind::Import));
            }
            "call_expression" => {
                if let Some(m) = Scope::loaded(*node, src) {
                    out.push(Use::at(*node, m, UseKind::Import));
                }
            }
            _ => {}
        }
    }
    // Two rounds, so `const a = cp; const b = a.exec` binds b whatever the order.
    for _ in 0..2 {
        for node in &all {
            let (pattern, value) = match node.kind() {
                "variable_declarator" => (
                    node.child_by_field_name("name"),
                    node.child_by_field_name("value"),
                ),
                "assignment_expression" => (
                    node.child_by_field_name("left"),
                    node.child_by_field_name("right"),
                ),
                _ => continue,
            };
            if let (Some(p), Some(v)) = (pattern, value)
                && let Some(name) = scope.resolve(v, src)
            {
                scope.bind_pattern(p, &name, src);
            }
        }
    }
    for node in &all {
        if !matches!(
            node.kind(),
            "identifier" | "member_expression" | "subscript_expression"
        ) {
            continue;
        }
        // Only the outermost name of a chain, and no name being declared.
        let parent = node.parent();
        let chained = parent.is_some_and(|p| {
            matches!(p.kind(), "member_expression" | "subscript_expression")
                && is_field(*node, "object")
        });
        let declared = ["name", "alias", "pattern", "left", "key", "label"]
            .iter()
            .any(|f| is_field(*node, f))
            || parent.is_some_and(|p| {
                matches!(
                    p.kind(),
                    "formal_parameters"
                        | "import_clause"
                        | "namespace_import"
                        | "import_require_clause"
                )
            });
        if chained || declared {
            continue;
        }
        let Some(name) = scope.resolve(*node, src) else {
            continue;
        };
        let called = parent.is_some_and(|p| {
            (p.kind() == "call_expression" && is_field(*node, "function"))
                || (p.kind() == "new_expression" && is_field(*node, "constructor"))
        });
        out.push(Use::at(
            *node,
            name,
            if called {
                UseKind::Call
            } else {
                UseKind::Reference
            },
        ));
    }
    out
}
