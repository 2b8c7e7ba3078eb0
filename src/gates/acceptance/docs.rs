//! Documentation of the public items a change adds, read on a parse tree (tree-sitter, in this
//! process) as the ecosystems' own checkers see them — Rust's `missing_docs` (a `///` comment
//! or `#[doc]` on a `pub` item, `pub` methods of inherent impls included; items of
//! `#[cfg(test)]` or `tests` modules left out), pydocstyle's D1 checks (a docstring on a public
//! module-level function or class and on the public methods of a public class), Go's exported
//! names (a comment right above an exported function, method or type). An item is new when its
//! file on the base side has no item of that name; only new items are held against the change.

use std::collections::BTreeSet;

use tree_sitter::Node;

use crate::gates::grammar::Grammar;

/// A public item of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// `Calc.add`, `Parser::parse`, `Add`: qualified by its class or type where it has one.
    pub name: String,
    /// 1-based.
    pub line: u32,
    pub documented: bool,
}

/// The public items of a file in a language read here; `None` for other files.
pub fn items(path: &str, src: &[u8]) -> Option<Vec<Item>> {
    let grammar = Grammar::of_path(path)?;
    let tree = grammar.parser().parse(src, None)?;
    let mut out = Vec::new();
    let root = tree.root_node();
    match grammar {
        Grammar::Rust => rust(root, src, "", &mut out),
        Grammar::Python => python(root, src, "", &mut out),
        Grammar::Go => go(root, src, &mut out),
        _ => return None,
    }
    Some(out)
}

/// The public items of `new` that `old` (the file on the base side, if any) has no item of
/// that name for.
pub fn new_items(path: &str, old: Option<&[u8]>, new: &[u8]) -> Vec<Item> {
    let before: BTreeSet<String> = old
        .and_then(|o| items(path, o))
        .unwrap_or_default()
        .into_iter()
        .map(|i| i.name)
        .collect();
    items(path, new)
        .unwrap_or_default()
        .into_iter()
        .filter(|i| !before.contains(&i.name))
        .collect()
}

fn text<'a>(node: Node<'_>, src: &'a [u8]) -> &'a str {
    node.utf8_text(src).unwrap_or_default()
}

fn line(node: Node<'_>) -> u32 {
    node.start_position().row as u32 + 1
}

fn field_text<'a>(node: Node<'_>, field: &str, src: &'a [u8]) -> &'a str {
    node.child_by_field_name(field)
        .map(|n| text(n, src))
        .unwrap_or_default()
}

fn rust(node: Node<'_>, src: &[u8], owner: &str, out: &mut Vec<Item>) {
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        let kind = child.kind();
        let public = {
            let mut c = child.walk();
            child
                .named_children(&mut c)
                .any(|n| n.kind() == "visibility_modifier" && text(n, src) == "pub")
        };
        match kind {
            "mod_item" => {
                let name = field_text(child, "name", src);
                let Some(body) = child.child_by_field_name("body") else {
                    continue;
                };
                if name == "tests" || rust_attrs(child, src).any(|a| a.contains("cfg(test)")) {
                    continue;
                }
                if public {
                    out.push(rust_item(child, src, owner, name));
                }
                rust(body, src, &format!("{owner}{name}::"), out);
            }
            "impl_item" if child.child_by_field_name("trait").is_none() => {
                let ty = field_text(child, "type", src);
                if let Some(body) = child.child_by_field_name("body") {
                    rust(body, src, &format!("{owner}{ty}::"), out);
                }
            }
            "function_item" | "struct_item" | "enum_item" | "trait_item" | "type_item"
            | "const_item" | "static_item" | "union_item"
                if public =>
            {
                let name = field_text(child, "name", src);
                out.push(rust_item(child, src, owner, name));
            }
            _ => {}
        }
    }
}

/// The attributes right above a Rust item (`#[cfg(test)]`, `#[doc = "…"]`), as text.
fn rust_attrs<'a>(node: Node<'_>, src: &'a [u8]) -> impl Iterator<Item = &'a str> {
    let mut attrs = Vec::new();
    let mut prev = node.prev_named_sibling();
    while let Some(p) = prev {
        match p.kind() {
            "attribute_item" => attrs.push(text(p, src)),
            "line_comment" | "block_comment" => {}
            _ => break,
        }
        prev = p.prev_named_sibling();
    }
    attrs.into_iter()
}

fn rust_item(node: Node<'_>, src: &[u8], owner: &str, name: &str) -> Item {
    let mut documented = rust_attrs(node, src).any(|a| a.starts_with("#[doc"));
    let mut prev = node.prev_named_sibling();
    while let Some(p) = prev {
        let t = text(p, src);
        match p.kind() {
            "attribute_item" => {}
            "line_comment" if t.starts_with("///") && !t.starts_with("////") => {
                documented = true;
                break;
            }
            "block_comment" if t.starts_with("/**") && !t.starts_with("/***") => {
                documented = true;
                break;
            }
            _ => break,
        }
        prev = p.prev_named_sibling();
    }
    Item {
        name: format!("{owner}{name}"),
        line: line(node),
        documented,
    }
}

fn python(node: Node<'_>, src: &[u8], owner: &str, out: &mut Vec<Item>) {
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        let def = if child.kind() == "decorated_definition" {
            match child.child_by_field_name("definition") {
                Some(d) => d,
                None => continue,
            }
        } else {
            child
        };
        if !matches!(def.kind(), "function_definition" | "class_definition") {
            continue;
        }
        let name = field_text(def, "name", src);
        if name.starts_with('_') {
            continue;
        }
        let body = def.child_by_field_name("body");
        let documented = body
            .and_then(|b| b.named_child(0))
            .filter(|s| s.kind() == "expression_statement")
            .and_then(|s| s.named_child(0))
            .is_some_and(|e| e.kind() == "string");
        out.push(Item {
            name: format!("{owner}{name}"),
            line: line(def),
            documented,
        });
        // The methods of a public class; functions nested in functions are not public API.
        if def.kind() == "class_definition"
            && owner.is_empty()
            && let Some(body) = body
        {
            python(body, src, &format!("{name}."), out);
        }
    }
}

fn go(node: Node<'_>, src: &[u8], out: &mut Vec<Item>) {
    let exported = |name: &str| name.chars().next().is_some_and(char::is_uppercase);
    let commented = |n: Node<'_>| {
        n.prev_named_sibling().is_some_and(|p| {
            p.kind() == "comment" && p.end_position().row + 1 == n.start_position().row
        })
    };
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        match child.kind() {
            "function_declaration" | "method_declaration" => {
                let name = field_text(child, "name", src);
                if !exported(name) {
                    continue;
                }
                let owner = child
                    .child_by_field_name("receiver")
                    .map(|r| {
                        let t = text(r, src);
                        let ty = t.trim_matches(|c| c == '(' || c == ')');
                        let ty = ty.rsplit([' ', '*']).next().unwrap_or_default();
                        format!("{ty}.")
                    })
                    .unwrap_or_default();
                out.push(Item {
                    name: format!("{owner}{name}"),
                    line: line(child),
                    documented: commented(child),
                });
            }
            "type_declaration" => {
                let mut c = child.walk();
                for spec in child.named_children(&mut c) {
                    let name = field_text(spec, "name", src);
                    if spec.kind() == "type_spec" && exported(name) {
                        out.push(Item {
                            name: name.to_owned(),
                            line: line(child),
                            documented: commented(child),
                        });
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn undocumented(path: &str, old: Option<&str>, new: &str) -> Vec<(String, u32)> {
        new_items(path, old.map(str::as_bytes), new.as_bytes())
            .into_iter()
            .filter(|i| !i.documented)
            .map(|i| (i.name, i.line))
            .collect()
    }

    #[test]
    fn rust_reads_pub_items_their_doc_comments_and_skips_tests() {
        let old = "/// Adds.\npub fn add(a: i32, b: i32) -> i32 { a + b }\n";
        let new = "\
/// Adds.
pub fn add(a: i32, b: i32) -> i32 { a + b }
pub fn sub(a: i32, b: i32) -> i32 { a - b }
#[doc = \"Multiplies.\"]
pub fn mul(a: i32, b: i32) -> i32 { a * b }
/// A calculator.
#[derive(Debug)]
pub struct Calc;
impl Calc {
    pub fn new() -> Self { Calc }
    /// Clears.
    pub fn clear(&mut self) {}
    fn private(&self) {}
}
pub(crate) fn internal() {}
// not a doc comment
pub enum Op { Add }
#[cfg(test)]
mod tests {
    pub fn helper() {}
}
";
        assert_eq!(
            undocumented("src/lib.rs", Some(old), new),
            [
                ("sub".to_owned(), 3),
                ("Calc::new".to_owned(), 10),
                ("Op".to_owned(), 17)
            ]
        );
    }

    #[test]
    fn python_reads_docstrings_of_public_functions_classes_and_methods() {
        let new = "\
def add(a, b):
    \"\"\"Adds.\"\"\"
    return a + b

def sub(a, b):
    return a - b

def _private():
    pass

@decorator
class Calc:
    def mul(self, a, b):
        return a * b

    def __init__(self):
        pass

    def div(self, a, b):
        '''Divides.'''
        return a / b
";
        assert_eq!(
            undocumented("calc.py", Some("def add(a, b):\n    return a + b\n"), new),
            [
                ("sub".to_owned(), 5),
                ("Calc".to_owned(), 12),
                ("Calc.mul".to_owned(), 13)
            ]
        );
    }

    #[test]
    fn go_reads_comments_above_exported_names() {
        let new = "\
package calc

// Add adds.
func Add(a, b int) int { return a + b }

func Sub(a, b int) int { return a - b }

func helper() {}

type Calc struct{}

// Mul multiplies.
func (c *Calc) Mul(a, b int) int { return a * b }

func (c Calc) Div(a, b int) int { return a / b }
";
        assert_eq!(
            undocumented("calc.go", None, new),
            [
                ("Sub".to_owned(), 6),
                ("Calc".to_owned(), 10),
                ("Calc.Div".to_owned(), 15)
            ]
        );
    }
}
