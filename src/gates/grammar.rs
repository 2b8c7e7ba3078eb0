//! The tree-sitter grammars the gates parse code with in this process, one per file type:
//! Python, Rust, JavaScript, TypeScript, TSX and Go. The security gate's banned-call checks
//! (`security::policy` for Python, `security::banned` for the others) and the complexity
//! measure ([`super::complexity`]) read files through them.

use tree_sitter::Parser;

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

/// How deep the parse under `root` nests, counted with a cursor (no recursion), stopping
/// once it passes `limit`.
pub fn depth_over(root: tree_sitter::Node<'_>, limit: usize) -> Option<usize> {
    let mut cursor = root.walk();
    let mut depth = 0;
    loop {
        if cursor.goto_first_child() {
            depth += 1;
            if depth > limit {
                return Some(depth);
            }
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return None;
            }
            depth -= 1;
        }
    }
}
