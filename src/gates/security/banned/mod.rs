//! Banned calls and imports in Rust, JavaScript/TypeScript and Go, found with tree-sitter
//! parsers in this process, on the blobs of `head` (no checkout, nothing run in the sandbox).
//! Python has its own checker ([`super::policy`]), which reads names the way Python's `ast` does.
//!
//! Each language's reader ([`rust`], [`javascript`], [`go`]) turns a file into [`Use`]s: the
//! full names its imports bring in and the names its code reads, aliases resolved (`use
//! std::process::Command as C; C::new()` reads `std::process::Command::new`). [`check`] keeps
//! the uses that fall under `policy.<language>` ([`LanguageRules`]) as [`PolicyFinding`]s.
//! A file that does not parse is a finding too: code the check cannot read is not passed.

mod go;
mod javascript;
mod rust;

use std::collections::{BTreeMap, BTreeSet};

use git2::{Delta, DiffOptions, ObjectType, Oid, Repository};
use tree_sitter::Node;

use super::finding::{PolicyFinding, TITLE};
use crate::annotation::{Annotation, Level};
use crate::config::policy::{LanguageRules, Policy, PolicyLanguage};
use crate::gates::grammar::{Grammar, MAX_DEPTH};

/// Files larger than this are a finding, not parsed.
const MAX_BYTES: usize = 5 << 20;

/// The policy language of a grammar; `None` for Python, which [`super::policy`] checks.
fn language(grammar: Grammar) -> Option<PolicyLanguage> {
    match grammar {
        Grammar::Python => None,
        Grammar::Rust => Some(PolicyLanguage::Rust),
        Grammar::JavaScript | Grammar::TypeScript | Grammar::Tsx => {
            Some(PolicyLanguage::JavaScript)
        }
        Grammar::Go => Some(PolicyLanguage::Go),
    }
}

/// What a file of `grammar` uses.
fn uses(grammar: Grammar, root: Node<'_>, src: &[u8]) -> Vec<Use> {
    match grammar {
        Grammar::Python => Vec::new(),
        Grammar::Rust => rust::uses(root, src),
        Grammar::JavaScript | Grammar::TypeScript | Grammar::Tsx => javascript::uses(root, src),
        Grammar::Go => go::uses(root, src),
    }
}

/// How a name is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum UseKind {
    /// Brought in by an import (`use`, `import`, `require`).
    Import,
    /// Called (or constructed with `new`).
    Call,
    /// Read without a call: passed around, named in a type.
    Reference,
}

/// One name a file uses, fully resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Use {
    name: String,
    /// 1-based.
    line: u32,
    col: u32,
    kind: UseKind,
}

impl Use {
    fn at(node: Node<'_>, name: String, kind: UseKind) -> Self {
        let p = node.start_position();
        Self {
            name,
            line: p.row as u32 + 1,
            col: p.column as u32 + 1,
            kind,
        }
    }
}

/// `node`'s text ("" when it is not UTF-8).
pub(in crate::gates::security) fn text<'a>(node: Node<'_>, src: &'a [u8]) -> &'a str {
    node.utf8_text(src).unwrap_or_default()
}

/// Every node under `root`, parents before children.
fn nodes(root: Node<'_>) -> Vec<Node<'_>> {
    crate::gates::grammar::preorder(root)
        .map(|(n, ..)| n)
        .collect()
}

/// Whether `node` is `parent`'s child in `field`.
fn is_field(node: Node<'_>, field: &str) -> bool {
    node.parent()
        .and_then(|p| p.child_by_field_name(field))
        .is_some_and(|c| c.id() == node.id())
}

/// `name` is `banned` or inside it (`sep` joins the parts: `::`, `.`, `/`).
pub(in crate::gates::security) fn under(name: &str, banned: &str, sep: &str) -> bool {
    name == banned
        || name
            .strip_prefix(banned)
            .is_some_and(|rest| rest.starts_with(sep))
}

/// The findings of one file's uses under `rules`: at most one per line and banned name.
fn judge(
    path: &str,
    language: PolicyLanguage,
    uses: &[Use],
    rules: &LanguageRules,
) -> Vec<PolicyFinding> {
    let key = language.key();
    let (call_sep, import_sep) = match language {
        PolicyLanguage::Rust => ("::", "::"),
        PolicyLanguage::JavaScript | PolicyLanguage::Go => (".", "/"),
    };
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for u in uses {
        // Rust has no import statement a path must go through: a crate is banned wherever
        // a path names it. Elsewhere only an import names a module.
        let import_applies = language == PolicyLanguage::Rust || u.kind == UseKind::Import;
        let import = rules
            .banned_imports
            .iter()
            .find(|b| import_applies && under(&u.name, b.trim_start_matches("node:"), import_sep));
        let call = rules
            .banned_calls
            .iter()
            .find(|b| under(&u.name, b, call_sep));
        let (banned, kind, message) = match (import, call) {
            (Some(b), _) => (
                b,
                "import",
                format!(
                    "{} is banned by policy.{key}.banned_imports ({b}); use another module",
                    u.name
                ),
            ),
            (None, Some(b)) => match u.kind {
                UseKind::Call => (
                    b,
                    "call",
                    format!(
                        "call to {b} is banned by policy.{key}.banned_calls; remove it or use a safer alternative"
                    ),
                ),
                UseKind::Import | UseKind::Reference => (
                    b,
                    if u.kind == UseKind::Import {
                        "import"
                    } else {
                        "reference"
                    },
                    format!(
                        "{b} is banned by policy.{key}.banned_calls; using it through another name is banned too"
                    ),
                ),
            },
            (None, None) => continue,
        };
        if seen.insert((u.line, banned.clone())) {
            out.push(PolicyFinding {
                path: path.to_owned(),
                line: u.line,
                col: u.col,
                kind: kind.into(),
                name: u.name.clone(),
                message,
            });
        }
    }
    out
}

/// The findings in one file's `source`.
fn check_source(
    path: &str,
    grammar: Grammar,
    source: &[u8],
    rules: &LanguageRules,
) -> Vec<PolicyFinding> {
    let finding = |line: u32, col: u32, kind: &str, message: String| {
        PolicyFinding::of_file(path, line, col, kind, message)
    };
    if source.len() > MAX_BYTES {
        return vec![finding(
            1,
            1,
            "error",
            format!("cannot check: larger than {MAX_BYTES} bytes; split the file"),
        )];
    }
    let Some(tree) = grammar.parser().parse(source, None) else {
        return vec![finding(
            1,
            1,
            "error",
            "cannot check: the parser gave up".into(),
        )];
    };
    let root = tree.root_node();
    if root.has_error() {
        let bad = nodes(root)
            .into_iter()
            .find(|n| n.is_error() || n.is_missing())
            .unwrap_or(root);
        let p = bad.start_position();
        return vec![finding(
            p.row as u32 + 1,
            p.column as u32 + 1,
            "syntax",
            "cannot parse this line, so the banned-calls check cannot read the file; fix the syntax".into(),
        )];
    }
    let Some(lang) = language(grammar) else {
        return Vec::new();
    };
    // The readers recurse along expressions: a file nested past this would overflow the stack
    // of the thread reading it, and take the bot down with it.
    if crate::gates::grammar::depth_over(root, MAX_DEPTH).is_some() {
        return vec![finding(
            1,
            1,
            "error",
            format!(
                "cannot check: expressions nest more than {MAX_DEPTH} levels deep; flatten them"
            ),
        )];
    }
    judge(path, lang, &uses(grammar, root, source), rules)
}

/// What [`check`] did.
#[derive(Debug, Clone, Default)]
pub struct BannedRun {
    pub findings: Vec<PolicyFinding>,
    /// Files checked per language key (`rust`, `javascript`, `go`).
    pub checked: BTreeMap<&'static str, usize>,
    /// Files left out by `policy.<language>.allow_in`.
    pub allowed: usize,
    /// Files that cannot be named (a path that is not UTF-8).
    pub unnamed: Vec<Annotation>,
}

impl BannedRun {
    pub fn annotations(&self) -> Vec<Annotation> {
        let mut all: Vec<_> = self
            .findings
            .iter()
            .map(PolicyFinding::annotation)
            .collect();
        all.extend(self.unnamed.iter().cloned());
        all
    }

    /// "policy: 2 Rust, 1 JavaScript/TypeScript file(s) checked (1 allowed by allow_in), 0 finding(s)",
    /// or `None` when no such file changed.
    pub fn summary(&self) -> Option<String> {
        if self.checked.is_empty() && self.allowed == 0 && self.unnamed.is_empty() {
            return None;
        }
        let files: Vec<String> = self
            .checked
            .iter()
            .map(|(lang, n)| format!("{n} {lang}"))
            .collect();
        let files = if files.is_empty() {
            "no".to_owned()
        } else {
            files.join(", ")
        };
        let allowed = match self.allowed {
            0 => String::new(),
            n => format!(" ({n} more under policy.<language>.allow_in)"),
        };
        Some(format!(
            "policy: {files} changed file(s) checked for banned calls{allowed}, {} finding(s)",
            self.findings.len() + self.unnamed.len()
        ))
    }
}

/// The banned-calls check of every Rust, JavaScript/TypeScript and Go file that `head` adds
/// or changes relative to `base` (commit or tree ids), read from `head`'s blobs. Links and
/// submodules are not code and are left out; so are deleted files.
pub fn check(
    repo: &Repository,
    base: Oid,
    head: Oid,
    policy: &Policy,
) -> Result<BannedRun, git2::Error> {
    let old = repo.find_object(base, None)?.peel_to_tree()?;
    let new = repo.find_object(head, None)?.peel_to_tree()?;
    let mut opts = DiffOptions::new();
    opts.ignore_submodules(true);
    let diff = repo.diff_tree_to_tree(Some(&old), Some(&new), Some(&mut opts))?;
    let rules: BTreeMap<_, _> = PolicyLanguage::ALL
        .into_iter()
        .map(|l| {
            let rules = policy.rules(l);
            let allowed = rules.allowed();
            (l.key(), (rules, allowed))
        })
        .collect();
    let mut run = BannedRun::default();
    for delta in diff.deltas() {
        if matches!(delta.status(), Delta::Deleted | Delta::Unmodified) {
            continue;
        }
        let file = delta.new_file();
        let mode = file.mode();
        if !matches!(mode, git2::FileMode::Blob | git2::FileMode::BlobExecutable) {
            continue;
        }
        let Some(bytes) = file.path_bytes() else {
            continue;
        };
        let Some(grammar) = Grammar::of_path(&String::from_utf8_lossy(bytes)) else {
            continue;
        };
        let Some(lang) = language(grammar) else {
            continue;
        };
        let key = lang.key();
        let (rules, allowed) = &rules[key];
        if rules.is_empty() {
            continue;
        }
        let Ok(path) = std::str::from_utf8(bytes) else {
            run.unnamed.push(
                Annotation::new(
                    String::from_utf8_lossy(bytes),
                    1,
                    Level::Failure,
                    "cannot check: the file name is not UTF-8; rename the file",
                )
                .with_title(TITLE),
            );
            continue;
        };
        if allowed.contains(path) {
            run.allowed += 1;
            continue;
        }
        let blob = repo
            .find_object(file.id(), Some(ObjectType::Blob))?
            .peel_to_blob()?;
        run.findings
            .extend(check_source(path, grammar, blob.content(), rules));
        *run.checked.entry(key).or_default() += 1;
    }
    Ok(run)
}

#[cfg(test)]
mod tests;
