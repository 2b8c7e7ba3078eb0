//! What each name in a Python file may stand for, and the banned imports and calls among
//! them: imports, aliases, `getattr` and the importers resolved over the whole file, the way
//! the checker this one replaced resolved them with Python's `ast`.

use std::collections::{BTreeSet, HashMap, HashSet};

use tree_sitter::Node;

use super::PolicyFinding;
use super::literal::{Lit, string_value};
use super::tree::{
    Up, dotted, ident, is_name, is_value_pattern, named, positional, stores, unparen,
};
use crate::gates::security::banned::text;

/// The calls that import the module their first argument names.
const IMPORTERS: [&str; 3] = [
    "__import__",
    "importlib.import_module",
    "importlib.__import__",
];
/// What is not a name of its own: `builtins.eval` is `eval`.
const BUILTIN_PREFIXES: [&str; 2] = ["builtins.", "__builtins__."];

/// Longest name or string the check follows: longer ones name no module or attribute anyone
/// writes, and following them would cost time quadratic in their length.
const MAX_NAME: usize = 1024;

static EMPTY: BTreeSet<String> = BTreeSet::new();

/// `name` is `banned` or inside it.
fn under(name: &str, banned: &str) -> bool {
    crate::gates::security::banned::under(name, banned, ".")
}

fn norm(name: String) -> String {
    for prefix in BUILTIN_PREFIXES {
        if let Some(rest) = name.strip_prefix(prefix) {
            return rest.to_owned();
        }
    }
    name
}

pub(super) struct Checker<'s, 't> {
    up: Up<'t>,
    path: &'s str,
    src: &'s [u8],
    calls: &'s [String],
    imports: &'s [String],
    /// Local name → the dotted names it may stand for.
    aliases: HashMap<String, BTreeSet<String>>,
    /// Modules imported with `*`.
    star: BTreeSet<String>,
    /// Node → the dotted names it may stand for (absent: none).
    names: HashMap<usize, BTreeSet<String>>,
    /// Node → the value of a string literal (absent: not one).
    literals: HashMap<usize, Lit>,
    watched: Vec<String>,
    /// Where a `\N{…}` escape spells what is imported or looked up: (line, col).
    opaque: BTreeSet<(u32, u32)>,
    pub(super) found: Vec<PolicyFinding>,
}

impl<'s, 't> Checker<'s, 't> {
    pub(super) fn new(
        path: &'s str,
        src: &'s [u8],
        calls: &'s [String],
        imports: &'s [String],
        up: Up<'t>,
    ) -> Self {
        let mut watched: Vec<String> = calls.to_vec();
        watched.extend(IMPORTERS.iter().map(|s| (*s).to_owned()));
        watched.push("getattr".into());
        let builtins: Vec<String> = watched
            .iter()
            .filter(|w| !w.contains('.'))
            .map(|w| format!("builtins.{w}"))
            .collect();
        watched.extend(builtins);
        Self {
            up,
            path,
            src,
            calls,
            imports,
            aliases: HashMap::new(),
            star: BTreeSet::new(),
            names: HashMap::new(),
            literals: HashMap::new(),
            watched,
            opaque: BTreeSet::new(),
            found: Vec::new(),
        }
    }

    fn get(&self, n: Node<'_>) -> &BTreeSet<String> {
        self.names.get(&n.id()).unwrap_or(&EMPTY)
    }

    fn literal(&self, n: Node<'_>) -> Lit {
        self.literals.get(&n.id()).cloned().unwrap_or(Lit::Unknown)
    }

    fn relevant(&self, name: &str) -> bool {
        self.watched
            .iter()
            .any(|w| under(w, name) || under(name, w))
    }

    fn emit(&mut self, at: Node<'_>, kind: &str, name: &str, message: String) {
        let p = at.start_position();
        self.found.push(PolicyFinding {
            path: self.path.to_owned(),
            line: p.row as u32 + 1,
            col: p.column as u32 + 1,
            kind: kind.into(),
            name: name.into(),
            message,
        });
    }

    pub(super) fn run(&mut self, all: &[Node<'t>]) {
        self.read_literals(all);
        let assigns = self.collect(all);
        self.resolve_all(all);
        for _ in 0..5 {
            // Chains of assignments: a = os; b = a.
            let mut changed = false;
            for (target, value) in &assigns {
                let found: Vec<String> = self.get(*value).iter().cloned().collect();
                for name in found {
                    if self.relevant(&name)
                        && !self.aliases.get(target).is_some_and(|s| s.contains(&name))
                    {
                        self.aliases.entry(target.clone()).or_default().insert(name);
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
            self.resolve_all(all);
        }
        self.check(all);
        for (line, col) in std::mem::take(&mut self.opaque) {
            let message = format!(
                "cannot check: a module or attribute name is spelled with a `\\N{{…}}` escape or is longer than {MAX_NAME} characters; write the name out"
            );
            self.found.push(PolicyFinding::of_file(
                self.path, line, col, "error", message,
            ));
        }
    }

    /// The value of every string literal, concatenation and `+` of them, inner ones first.
    fn read_literals(&mut self, all: &[Node<'_>]) {
        for &n in all.iter().rev() {
            let lit = match n.kind() {
                "string" => string_value(text(n, self.src)),
                "concatenated_string" => named(n)
                    .into_iter()
                    .map(|s| self.literal(s))
                    .reduce(Lit::join)
                    .unwrap_or(Lit::Unknown),
                "binary_operator"
                    if n.child_by_field_name("operator").map(|o| o.kind()) == Some("+") =>
                {
                    match (
                        n.child_by_field_name("left"),
                        n.child_by_field_name("right"),
                    ) {
                        (Some(l), Some(r)) => self.literal(l).join(self.literal(r)),
                        _ => Lit::Unknown,
                    }
                }
                // Its inner expression's value, read just before it.
                "parenthesized_expression" => named(n)
                    .first()
                    .map_or(Lit::Unknown, |&inner| self.literal(inner)),
                _ => Lit::Unknown,
            };
            let lit = match lit {
                Lit::Known(s) if s.len() > MAX_NAME => Lit::Opaque,
                other => other,
            };
            if lit != Lit::Unknown {
                self.literals.insert(n.id(), lit);
            }
        }
    }

    /// Binds what imports bring in; returns the plain assignments `name = value`.
    fn collect(&mut self, all: &[Node<'t>]) -> Vec<(String, Node<'t>)> {
        let mut assigns = Vec::new();
        for &n in all {
            match n.kind() {
                "import_statement" => {
                    let mut cursor = n.walk();
                    for a in n.children_by_field_name("name", &mut cursor) {
                        let module = dotted(a, self.src);
                        let local = match a.child_by_field_name("alias") {
                            Some(alias) => (ident(alias, self.src), module),
                            None => {
                                let top = module.split('.').next().unwrap_or("").to_owned();
                                (top.clone(), top)
                            }
                        };
                        self.aliases.entry(local.0).or_default().insert(local.1);
                    }
                }
                "import_from_statement" => {
                    let Some(module) = n
                        .child_by_field_name("module_name")
                        .filter(|m| m.kind() == "dotted_name")
                        .map(|m| dotted(m, self.src))
                    else {
                        continue;
                    };
                    if named(n).iter().any(|c| c.kind() == "wildcard_import") {
                        self.star.insert(module.clone());
                    }
                    let mut cursor = n.walk();
                    for a in n.children_by_field_name("name", &mut cursor) {
                        let local = match a.child_by_field_name("alias") {
                            Some(alias) => ident(alias, self.src),
                            None => dotted(a, self.src),
                        };
                        let full = format!("{module}.{}", dotted(a, self.src));
                        self.aliases.entry(local).or_default().insert(full);
                    }
                }
                "assignment" => {
                    let (Some(left), Some(mut value)) = (
                        n.child_by_field_name("left"),
                        n.child_by_field_name("right"),
                    ) else {
                        continue;
                    };
                    // a = b = os: both are os.
                    while value.kind() == "assignment" {
                        match value.child_by_field_name("right") {
                            Some(v) => value = v,
                            None => break,
                        }
                    }
                    if left.kind() == "identifier" {
                        assigns.push((ident(left, self.src), value));
                    }
                }
                "named_expression" => {
                    if let (Some(name), Some(value)) = (
                        n.child_by_field_name("name"),
                        n.child_by_field_name("value"),
                    ) {
                        assigns.push((ident(name, self.src), value));
                    }
                }
                _ => {}
            }
        }
        assigns
    }

    /// What every expression may stand for, inner ones first, so each reads its parts'.
    fn resolve_all(&mut self, all: &[Node<'_>]) {
        self.names.clear();
        for &n in all.iter().rev() {
            let names = self.resolve(n);
            if !names.is_empty() {
                self.names.insert(n.id(), names);
            }
        }
    }

    /// What `n` may stand for, given what its parts stand for.
    fn resolve(&mut self, n: Node<'_>) -> BTreeSet<String> {
        let mut names = match n.kind() {
            "identifier" => {
                let id = ident(n, self.src);
                let mut names = self
                    .aliases
                    .get(&id)
                    .cloned()
                    .unwrap_or_else(|| BTreeSet::from([id.clone()]));
                for module in &self.star {
                    let candidate = format!("{module}.{id}");
                    if self.calls.iter().any(|b| under(&candidate, b)) {
                        names.insert(candidate);
                    }
                }
                names.into_iter().map(norm).collect()
            }
            "dotted_name" if is_value_pattern(n, &self.up) => {
                let parts = named(n);
                let mut names = self.get(parts[0]).clone();
                for part in &parts[1..] {
                    let attr = ident(*part, self.src);
                    names = names
                        .into_iter()
                        .map(|v| norm(format!("{v}.{attr}")))
                        .collect();
                }
                names
            }
            "attribute" => {
                let (Some(object), Some(attr)) = (
                    n.child_by_field_name("object"),
                    n.child_by_field_name("attribute"),
                ) else {
                    return BTreeSet::new();
                };
                let attr = ident(attr, self.src);
                self.get(object)
                    .iter()
                    .map(|v| norm(format!("{v}.{attr}")))
                    .collect()
            }
            "subscript" => self.resolve_subscript(n),
            "call" => self.resolve_call(n),
            "parenthesized_expression" => named(n)
                .first()
                .map_or_else(BTreeSet::new, |&inner| self.get(inner).clone()),
            _ => BTreeSet::new(),
        };
        names.retain(|name| name.len() <= MAX_NAME);
        names
    }

    /// `__builtins__["eval"]`, `os.__dict__["system"]`, `sys.modules["os"]`.
    fn resolve_subscript(&mut self, n: Node<'_>) -> BTreeSet<String> {
        let Some(value) = n.child_by_field_name("value") else {
            return BTreeSet::new();
        };
        let mut cursor = n.walk();
        let keys: Vec<Node<'_>> = n.children_by_field_name("subscript", &mut cursor).collect();
        let [key] = keys.as_slice() else {
            return BTreeSet::new();
        };
        let bases: Vec<String> = self
            .get(value)
            .iter()
            .map(|b| b.strip_suffix(".__dict__").unwrap_or(b).to_owned())
            .collect();
        let key = match self.literal(*key) {
            Lit::Known(k) => k,
            Lit::Opaque => {
                if bases.iter().any(|b| b == "sys.modules" || self.relevant(b)) {
                    self.note_opaque(n);
                }
                return BTreeSet::new();
            }
            Lit::Unknown => return BTreeSet::new(),
        };
        bases
            .into_iter()
            .map(|b| {
                if b == "sys.modules" {
                    key.clone()
                } else {
                    norm(format!("{b}.{key}"))
                }
            })
            .collect()
    }

    /// `vars(m)`, `getattr(x, "a")`, `__import__("m")`, `importlib.import_module("m")`.
    fn resolve_call(&mut self, n: Node<'_>) -> BTreeSet<String> {
        let args = positional(n);
        let (Some(&first), Some(function)) = (args.first(), n.child_by_field_name("function"))
        else {
            return BTreeSet::new();
        };
        let funcs = self.get(function).clone();
        if funcs.contains("vars") {
            return self.get(first).clone();
        }
        if funcs.contains("getattr") && args.len() >= 2 {
            match self.literal(args[1]) {
                Lit::Known(attr) => {
                    return self
                        .get(first)
                        .iter()
                        .map(|v| norm(format!("{v}.{attr}")))
                        .collect();
                }
                Lit::Opaque if self.get(first).iter().any(|v| self.relevant(v)) => {
                    self.note_opaque(n);
                }
                _ => {}
            }
        }
        let module = match self.literal(first) {
            Lit::Known(m) if !m.is_empty() => m,
            Lit::Opaque if IMPORTERS.iter().any(|i| funcs.contains(*i)) => {
                self.note_opaque(n);
                return BTreeSet::new();
            }
            _ => return BTreeSet::new(),
        };
        if funcs.contains("__import__") || funcs.contains("importlib.__import__") {
            // __import__("a.b") returns a.
            return BTreeSet::from([module.split('.').next().unwrap_or("").to_owned()]);
        }
        if funcs.contains("importlib.import_module") {
            return BTreeSet::from([module]);
        }
        BTreeSet::new()
    }

    fn note_opaque(&mut self, n: Node<'_>) {
        let p = n.start_position();
        self.opaque.insert((p.row as u32 + 1, p.column as u32 + 1));
    }

    /// Whether `n` is read (`ast`'s `Load`): the expressions the check judges.
    fn is_read(&self, n: Node<'_>, stored: &HashSet<usize>) -> bool {
        match n.kind() {
            "call" => true,
            "attribute" | "subscript" => !stored.contains(&n.id()),
            "identifier" => is_name(n, &self.up) && !stored.contains(&n.id()),
            "dotted_name" => is_value_pattern(n, &self.up),
            _ => false,
        }
    }

    fn check(&mut self, all: &[Node<'_>]) {
        let stored = stores(all);
        let called: HashSet<usize> = all
            .iter()
            .filter(|n| n.kind() == "call")
            .filter_map(|n| n.child_by_field_name("function"))
            .map(|f| unparen(f).id())
            .collect();
        let mut covered = HashSet::new();
        for &n in all {
            match n.kind() {
                "import_statement" | "import_from_statement" => self.check_imports(n),
                "call" => self.check_importer(n),
                _ => {}
            }
            if covered.contains(&n.id()) || !self.is_read(n, &stored) {
                continue;
            }
            self.check_name(n, called.contains(&n.id()), &mut covered);
        }
    }

    /// `__import__("pickle")` and the like, when `pickle` is banned.
    fn check_importer(&mut self, n: Node<'_>) {
        let (Some(first), Some(function)) = (
            positional(n).first().copied(),
            n.child_by_field_name("function"),
        ) else {
            return;
        };
        let imports = IMPORTERS.iter().any(|i| self.get(function).contains(*i));
        if let (true, Lit::Known(module)) = (imports, self.literal(first))
            && !module.is_empty()
        {
            self.check_module(n, &module);
        }
    }

    fn check_module(&mut self, at: Node<'_>, module: &str) -> bool {
        let Some(banned) = self.imports.iter().find(|b| under(module, b)).cloned() else {
            return false;
        };
        let message = format!(
            "import of {module} is banned by policy.banned_imports ({banned}); use another module"
        );
        self.emit(at, "import", module, message);
        true
    }

    fn check_imports(&mut self, n: Node<'_>) {
        let mut cursor = n.walk();
        let names: Vec<String> = n
            .children_by_field_name("name", &mut cursor)
            .map(|a| dotted(a, self.src))
            .collect();
        if n.kind() == "import_statement" {
            for module in names {
                self.check_module(n, &module);
            }
            return;
        }
        let Some(module) = n
            .child_by_field_name("module_name")
            .filter(|m| m.kind() == "dotted_name")
            .map(|m| dotted(m, self.src))
        else {
            return;
        };
        if !self.check_module(n, &module) {
            for name in names {
                if self.check_module(n, &format!("{module}.{name}")) {
                    break;
                }
            }
        }
    }

    fn check_name(&mut self, n: Node<'_>, is_called: bool, covered: &mut HashSet<usize>) {
        let names: Vec<String> = self.get(n).iter().cloned().collect();
        let mut found = false;
        for name in names {
            let Some(banned) = self.calls.iter().find(|b| under(&name, b)).cloned() else {
                continue;
            };
            let (kind, message) = if is_called {
                (
                    "call",
                    format!(
                        "call to {banned} is banned by policy.banned_calls; remove it or use a safer alternative"
                    ),
                )
            } else {
                (
                    "reference",
                    format!(
                        "{banned} is banned by policy.banned_calls; calling it through another name is banned too"
                    ),
                )
            };
            self.emit(n, kind, &name, message);
            found = true;
        }
        if found {
            cover(n, covered);
        }
    }
}

/// Marks the parts of a found `os.system` or `getattr(os, "system")` done: the inner names
/// are the same finding.
fn cover(mut n: Node<'_>, covered: &mut HashSet<usize>) {
    loop {
        covered.insert(n.id());
        n = match n.kind() {
            "attribute" => n.child_by_field_name("object"),
            "subscript" => n.child_by_field_name("value"),
            "call" => {
                if let Some(f) = n.child_by_field_name("function") {
                    covered.insert(unparen(f).id());
                }
                positional(n).first().copied()
            }
            _ => None,
        }
        .map(unparen)
        .unwrap_or(n);
        if covered.contains(&n.id()) {
            return;
        }
    }
}
