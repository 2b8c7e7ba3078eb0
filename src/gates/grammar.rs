//! The tree-sitter grammars the gates parse code with in this process, one per file type:
//! Python, Rust, JavaScript, TypeScript, TSX and Go. The security gate's banned-call checks
//! (`security::policy` for Python, `security::banned` for the others) and the complexity
//! measure ([`super::complexity`]) read files through them.

use tree_sitter::{Node, Parser, TreeCursor};

/// A grammar: one per file type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grammar {
    Python,
    Rust,
    JavaScript,
    TypeScript,
    Tsx,
    Go,
}

impl Grammar {
    /// The grammar of a file, by its extension.
    pub fn of_path(path: &str) -> Option<Self> {
        Some(match path.rsplit_once('.')?.1 {
            "py" => Self::Python,
            "rs" => Self::Rust,
            "js" | "mjs" | "cjs" | "jsx" => Self::JavaScript,
            "ts" | "mts" | "cts" => Self::TypeScript,
            "tsx" => Self::Tsx,
            "go" => Self::Go,
            _ => return None,
        })
    }

    /// A parser set to this grammar.
    pub fn parser(self) -> Parser {
        let language: tree_sitter::Language = match self {
            Self::Python => tree_sitter_python::LANGUAGE.into(),
            Self::Rust => tree_sitter_rust::LANGUAGE.into(),
            Self::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Self::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Self::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Self::Go => tree_sitter_go::LANGUAGE.into(),
        };
        let mut parser = Parser::new();
        parser
            .set_language(&language)
            .expect("the grammars are built for this tree-sitter");
        parser
    }
}

/// The deepest a parse may nest for the readers that walk it by recursion (the banned-calls
/// readers of Rust, JavaScript and Go, the complexity measure): far past code people write
/// (a chain of 300 calls), well within a thread's stack. Deeper files are not walked.
pub const MAX_DEPTH: usize = 1_000;

/// How deep the parse under `root` nests, stopping once it passes `limit`.
pub fn depth_over(root: Node<'_>, limit: usize) -> Option<usize> {
    preorder(root)
        .map(|(_, depth, _)| depth)
        .find(|&d| d > limit)
}

/// Every node under `root`, parents before children, with its depth (`root`'s is 0) and the
/// field it is in: a cursor's walk, no recursion, however deep the parse.
pub fn preorder(root: Node<'_>) -> Preorder<'_> {
    Preorder {
        cursor: root.walk(),
        depth: 0,
        done: false,
    }
}

/// See [`preorder`].
pub struct Preorder<'t> {
    cursor: TreeCursor<'t>,
    depth: usize,
    done: bool,
}

impl<'t> Iterator for Preorder<'t> {
    type Item = (Node<'t>, usize, Option<&'t str>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let here = (self.cursor.node(), self.depth, self.cursor.field_name());
        if self.cursor.goto_first_child() {
            self.depth += 1;
            return Some(here);
        }
        while !self.cursor.goto_next_sibling() {
            if !self.cursor.goto_parent() {
                self.done = true;
                return Some(here);
            }
            self.depth -= 1;
        }
        Some(here)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same walk by recursion: node, depth, field.
    fn by_recursion<'t>(
        n: Node<'t>,
        depth: usize,
        field: Option<&'t str>,
        out: &mut Vec<(Node<'t>, usize, Option<&'t str>)>,
    ) {
        out.push((n, depth, field));
        let mut cursor = n.walk();
        for (i, child) in n.children(&mut cursor).enumerate() {
            by_recursion(child, depth + 1, n.field_name_for_child(i as u32), out);
        }
    }

    #[test]
    fn the_walk_visits_every_node_once_parents_first_with_its_depth_and_field() {
        let src = "def f(a, b=(1)):\n    return g(a)[b] + (yield)\n";
        let tree = Grammar::Python.parser().parse(src, None).unwrap();
        let mut want = Vec::new();
        by_recursion(tree.root_node(), 0, None, &mut want);
        let got: Vec<_> = preorder(tree.root_node()).collect();
        assert!(want.len() > 20);
        assert_eq!(got, want);
        let deepest = want.iter().map(|w| w.1).max().unwrap();
        assert_eq!(depth_over(tree.root_node(), deepest), None);
        assert_eq!(depth_over(tree.root_node(), deepest - 1), Some(deepest));
    }
}
