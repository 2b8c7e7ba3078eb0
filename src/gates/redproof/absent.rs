//! A test that cannot load because a name it uses does not exist yet: the commonest
//! test-first test (`from pkg.calc import new_function`, `calc::new_function()`,
//! `NewThing()`), and a fair red when the name is the repository's own and the plan says it
//! will be added. Each language's compiler or loader says it its own way: Python's
//! `ImportError: cannot import name 'x' from 'm'`, `AttributeError: module 'm' has no
//! attribute 'x'` and `No module named 'pkg.new'`; rustc's E0425, E0599, E0432, E0433, E0412
//! and E0422; Go's `undefined: X` and `x.Y undefined (type T has no field or method Y)`;
//! TypeScript's TS2305/TS2339/TS2724; Node's `does not provide an export named 'x'` and
//! `x is not a function`.

use std::path::Path;

/// A name a test uses that its code does not have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Absent {
    /// The name itself (`new_function`, `NewThing`, `pkg.newmod`).
    pub name: String,
    /// Where it was looked for (`pkg.calc`, `calc`, `../calc.mjs`, a type `Thing`), when said.
    pub owner: Option<String>,
    /// A method or field of a type (`owner`), not a module's item.
    pub member: bool,
}

/// The absent name one line of a loader's or compiler's output reports, if it reports one.
pub fn parse(line: &str) -> Option<Absent> {
    python(line)
        .or_else(|| rust(line))
        .or_else(|| go(line))
        .or_else(|| javascript(line))
}

/// The text between the first `open` after `marker` and the next `close`.
fn quoted<'a>(line: &'a str, marker: &str, open: char, close: char) -> Option<&'a str> {
    let rest = &line[line.find(marker)? + marker.len()..];
    let rest = &rest[rest.find(open)? + open.len_utf8()..];
    rest.split(close).next().filter(|s| !s.is_empty())
}

fn absent(name: &str, owner: Option<&str>) -> Option<Absent> {
    let name = name.trim();
    (!name.is_empty()).then(|| Absent {
        name: name.to_owned(),
        owner: owner.map(|o| o.trim().to_owned()),
        member: false,
    })
}

fn member(name: &str, owner: Option<&str>) -> Option<Absent> {
    absent(name, owner).map(|a| Absent { member: true, ..a })
}

fn python(line: &str) -> Option<Absent> {
    if line.contains("cannot import name ") {
        let name = quoted(line, "cannot import name", '\'', '\'')?;
        return absent(name, quoted(line, "' from ", '\'', '\''));
    }
    if line.contains("has no attribute") && line.contains("module ") {
        let owner = quoted(line, "module ", '\'', '\'');
        return absent(quoted(line, "has no attribute", '\'', '\'')?, owner);
    }
    if line.contains("No module named ") {
        // Looked for in its top package: `pkg` for `pkg.newmod`.
        let name = quoted(line, "No module named", '\'', '\'')?;
        return absent(name, name.split('.').next());
    }
    None
}

fn rust(line: &str) -> Option<Absent> {
    let code = line.strip_prefix("error[E")?.get(..4)?;
    let tick = |marker: &str| quoted(line, marker, '`', '`');
    let owner = tick(" in crate ").or_else(|| tick(" in module "));
    match code {
        // cannot find function/value/type/struct `x` in crate `c`
        "0425" | "0412" | "0422" | "0423" => absent(tick("cannot find")?, owner),
        // no method named `x` found for struct `T`
        "0599" => member(
            tick("no method named")?,
            tick(" for struct ").or_else(|| tick(" for enum ")),
        ),
        // unresolved import `c::x`
        "0432" => {
            let path = tick("unresolved import")?;
            let (owner, name) = path.rsplit_once("::").unwrap_or(("", path));
            absent(name, Some(owner).filter(|o| !o.is_empty()))
        }
        // failed to resolve: could not find `x` in `c` / use of undeclared type `T`
        "0433" => {
            let name = tick("could not find").or_else(|| tick("use of undeclared type"))?;
            absent(name, quoted(line, "` in ", '`', '`'))
        }
        _ => None,
    }
}

fn go(line: &str) -> Option<Absent> {
    // `./calc_test.go:6:8: undefined: NewThing`
    if let Some((_, name)) = line.split_once(": undefined: ") {
        return absent(name, None);
    }
    // `./calc_test.go:7:8: th.Triple undefined (type Thing has no field or method Triple)`
    if let Some(rest) = line.split_once("has no field or method ").map(|(_, r)| r) {
        let name = rest.split([')', ',', ' ']).next()?;
        let owner = line
            .split("(type ")
            .nth(1)
            .and_then(|t| t.split(' ').next());
        return member(name, owner);
    }
    None
}

fn javascript(line: &str) -> Option<Absent> {
    // SyntaxError: The requested module '../calc.mjs' does not provide an export named 'mul'
    if line.contains("does not provide an export named") {
        let owner = quoted(line, "requested module", '\'', '\'');
        return absent(quoted(line, "export named", '\'', '\'')?, owner);
    }
    // error TS2305: Module '"./calc"' has no exported member 'mul'.
    if line.contains("has no exported member") {
        let owner = quoted(line, "Module ", '"', '"');
        return absent(quoted(line, "has no exported member", '\'', '\'')?, owner);
    }
    // error TS2339: Property 'mul' does not exist on type 'typeof import("./calc")'.
    if line.contains("TS2339") {
        return absent(quoted(line, "Property", '\'', '\'')?, None);
    }
    // TypeError: require(...).mul is not a function / (0 , _calc.mul) is not a function
    let before = line
        .split(" is not a function")
        .next()
        .filter(|_| line.contains(" is not a function"))?;
    let name = before.rsplit(['.', ' ', '(']).next()?.trim_end_matches(')');
    absent(name, None)
}

/// Whether `absent` is the repository's own code, as the checkout at `root` says: a relative
/// JavaScript module, a Python module or Rust crate of the repository, or a name with no
/// owner named (Go's package scope, rustc's "in this scope").
pub fn is_own(root: &Path, absent: &Absent) -> bool {
    if absent.member {
        // A method or field of a type the test uses: the type is in scope, so its own.
        return true;
    }
    match absent.owner.as_deref() {
        // Go's package scope, rustc's "in this scope".
        None => true,
        Some(o) if o.starts_with('.') || o.starts_with('/') => true,
        Some(o) => crate::gates::baseline::is_own(root, o.trim_matches('"')),
    }
}

/// Whether `text` (the plan) mentions `name` as a word: the last part of a dotted or `::`
/// path is enough (`newmod` for `pkg.newmod`).
pub fn mentioned(text: &str, name: &str) -> bool {
    let last = name.rsplit(['.', ':']).next().unwrap_or(name);
    [name, last].iter().any(|n| {
        !n.is_empty()
            && text.match_indices(n).any(|(at, _)| {
                let before = text[..at].chars().next_back();
                let after = text[at + n.len()..].chars().next();
                let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
                !word(before) && !word(after)
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(line: &str) -> (String, Option<String>) {
        let a = parse(line).unwrap_or_else(|| panic!("nothing in {line}"));
        (a.name, a.owner)
    }

    fn pair(name: &str, owner: Option<&str>) -> (String, Option<String>) {
        (name.to_owned(), owner.map(str::to_owned))
    }

    #[test]
    fn each_language_names_what_is_absent_and_where() {
        for (line, name, owner) in [
            (
                "ImportError: cannot import name 'new_function' from 'pkg.calc' (/work/pkg/calc.py)",
                "new_function",
                Some("pkg.calc"),
            ),
            (
                "E       AttributeError: module 'pkg.calc' has no attribute 'new_function'",
                "new_function",
                Some("pkg.calc"),
            ),
            (
                "E   ModuleNotFoundError: No module named 'pkg.newmod'",
                "pkg.newmod",
                Some("pkg"),
            ),
            (
                "error[E0425]: cannot find function `new_function` in crate `calc` (tests/new.rs:3:22)",
                "new_function",
                Some("calc"),
            ),
            (
                "error[E0425]: cannot find function `helper` in this scope (tests/new.rs:3:5)",
                "helper",
                None,
            ),
            (
                "error[E0599]: no method named `missing` found for struct `Thing` in the current scope (tests/new.rs:3:35)",
                "missing",
                Some("Thing"),
            ),
            (
                "error[E0432]: unresolved import `calc::missing_item` (tests/new.rs:1:5)",
                "missing_item",
                Some("calc"),
            ),
            (
                "error[E0433]: failed to resolve: could not find `missing_mod` in `calc` (tests/new.rs:3:22)",
                "missing_mod",
                Some("calc"),
            ),
            (
                "error[E0412]: cannot find type `MissingType` in crate `calc` (tests/new.rs:3:18)",
                "MissingType",
                Some("calc"),
            ),
            ("./calc_test.go:6:8: undefined: NewThing", "NewThing", None),
            (
                "./calc_test.go:7:8: th.Triple undefined (type Thing has no field or method Triple)",
                "Triple",
                Some("Thing"),
            ),
            (
                "SyntaxError: The requested module '../calc.mjs' does not provide an export named 'mul'",
                "mul",
                Some("../calc.mjs"),
            ),
            (
                "test/a.test.ts(1,10): error TS2305: Module '\"./calc\"' has no exported member 'mul'.",
                "mul",
                Some("./calc"),
            ),
            ("require(...).mul is not a function", "mul", None),
            ("TypeError: (0 , _calc.mul) is not a function", "mul", None),
        ] {
            assert_eq!(said(line), pair(name, owner), "{line}");
        }
        for line in [
            "E   SyntaxError: invalid syntax",
            "error[E0308]: mismatched types (tests/new.rs:3:5)",
            "./x_test.go:3:2: syntax error: unexpected newline",
            "RuntimeError: database unavailable",
        ] {
            assert_eq!(parse(line), None, "{line}");
        }
    }

    #[test]
    fn the_plan_mentions_a_name_as_a_word() {
        let plan =
            "Add `new_function` to pkg/calc.py and a module pkg/newmod.py; NewThing() builds one.";
        for name in [
            "new_function",
            "pkg.newmod",
            "NewThing",
            "calc::new_function",
        ] {
            assert!(mentioned(plan, name), "{name}");
        }
        for name in ["function", "Thing", "newmo", "helper"] {
            assert!(!mentioned(plan, name), "{name}");
        }
    }

    #[test]
    fn own_code_is_told_from_a_dependencys() {
        let dir = tempfile::tempdir().unwrap();
        for (file, text) in [
            ("pkg/calc.py", ""),
            ("Cargo.toml", "[package]\nname = \"calc\"\n"),
        ] {
            std::fs::create_dir_all(dir.path().join(file).parent().unwrap()).unwrap();
            std::fs::write(dir.path().join(file), text).unwrap();
        }
        git2::Repository::init(dir.path()).unwrap();
        let own = |name: &str, owner: Option<&str>| is_own(dir.path(), &parse_as(name, owner));
        assert!(own("new_function", Some("pkg.calc")));
        assert!(own("pkg.newmod", Some("pkg")));
        assert!(own("new_function", Some("calc")));
        assert!(own("mul", Some("../calc.mjs")));
        assert!(own("NewThing", None));
        assert!(!own("given", Some("hypothesis")));
        assert!(!own("yaml.safe", Some("yaml")));
        // A missing method of a type the test holds.
        assert!(is_own(
            dir.path(),
            &parse(
                "error[E0599]: no method named `x` found for struct `Other` in the current scope"
            )
            .unwrap()
        ));
    }

    fn parse_as(name: &str, owner: Option<&str>) -> Absent {
        Absent {
            name: name.into(),
            owner: owner.map(Into::into),
            member: false,
        }
    }
}
