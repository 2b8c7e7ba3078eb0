//! The toolchain versions a project asks for (`rust-toolchain.toml`, `rust-version`,
//! `.python-version`, `requires-python`, `go.mod`'s `go` and `toolchain`, `engines.node`)
//! against the ones its sandbox image has. No toolchain can be installed from the networks
//! Vibeloop's sandboxes reach for setup (rustup's, python.org's and the Go and Node download
//! sites are not package registries), so a mismatch is said in one line — which version the
//! project needs, which the image has, and the setting that fixes it — before setup runs, not
//! discovered in a failed build.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use super::detect::Files;
use crate::sandbox::{Backend, SandboxSpec};

/// One toolchain version a project asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Want {
    /// `Rust`, `Python`, `Go`, `Node`.
    pub lang: &'static str,
    /// What the project says, as it says it (`>=3.10`, `1.80`, `^20 || ^22`, `nightly`).
    pub range: String,
    /// Where (`Cargo.toml rust-version`).
    pub from: String,
    rule: Rule,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    /// This version or newer (`rust-version`, `go`, a toolchain channel's number).
    AtLeast,
    /// The same version, as far as it is given (`.python-version`'s `3.12`).
    Prefix,
    /// A PEP 440 specifier set (`requires-python`).
    Pep440,
    /// A semver range (`engines.node`).
    Semver,
    /// A nightly compiler.
    Nightly,
}

/// What a project's files ask of its toolchains.
pub fn wants(files: &dyn Files) -> Vec<Want> {
    let mut out = Vec::new();
    let mut want = |lang, range: &str, from: &str, rule| {
        let range = range.trim();
        if !range.is_empty() && range.len() < 100 {
            out.push(Want {
                lang,
                range: range.to_owned(),
                from: from.to_owned(),
                rule,
            });
        }
    };
    let toml = |p: &str| files.read(p).and_then(|t| t.parse::<toml::Table>().ok());
    // rustup's pin: `[toolchain] channel = "1.80"` (or the old one-line `rust-toolchain`).
    let channel = toml("rust-toolchain.toml")
        .and_then(|t| {
            t.get("toolchain")?
                .get("channel")?
                .as_str()
                .map(str::to_owned)
        })
        .map(|c| (c, "rust-toolchain.toml channel"))
        .or_else(|| {
            let t = files.read("rust-toolchain")?;
            let line = t.lines().next()?.trim().to_owned();
            (!line.starts_with('[')).then_some((line, "rust-toolchain"))
        });
    if let Some((channel, from)) = channel {
        if channel.starts_with("nightly") {
            want("Rust", &channel, from, Rule::Nightly);
        } else if channel.starts_with(|c: char| c.is_ascii_digit()) {
            want("Rust", &channel, from, Rule::AtLeast);
        }
    }
    if let Some(cargo) = toml("Cargo.toml") {
        let version = cargo
            .get("package")
            .and_then(|p| p.get("rust-version"))
            .or_else(|| cargo.get("workspace")?.get("package")?.get("rust-version"));
        if let Some(v) = version.and_then(|v| v.as_str()) {
            want("Rust", v, "Cargo.toml rust-version", Rule::AtLeast);
        }
    }
    if let Some(v) = files.read(".python-version") {
        let line = v.lines().next().unwrap_or_default().trim();
        if line.starts_with(|c: char| c.is_ascii_digit()) {
            want("Python", line, ".python-version", Rule::Prefix);
        }
    }
    if let Some(v) = toml("pyproject.toml").and_then(|t| {
        t.get("project")?
            .get("requires-python")?
            .as_str()
            .map(str::to_owned)
    }) {
        want("Python", &v, "pyproject.toml requires-python", Rule::Pep440);
    }
    if let Some(gomod) = files.read("go.mod") {
        for line in gomod.lines().map(str::trim) {
            if let Some(v) = line.strip_prefix("go ") {
                want("Go", v, "go.mod go", Rule::AtLeast);
            } else if let Some(v) = line.strip_prefix("toolchain go") {
                want("Go", v, "go.mod toolchain", Rule::AtLeast);
            }
        }
    }
    if let Some(v) = files
        .read("package.json")
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|p| p["engines"]["node"].as_str().map(str::to_owned))
    {
        want("Node", &v, "package.json engines.node", Rule::Semver);
    }
    out
}

/// The toolchains' versions an image has, by language (`Rust` → `1.85.0`), with `nightly`
/// kept for Rust.
pub type Have = HashMap<&'static str, String>;

/// Prints each toolchain's version; what is not there prints nothing.
const PROBE: &str = "rustc --version 2>/dev/null; python3 --version 2>&1 | grep '^Python'; \
                     go version 2>/dev/null; node --version 2>/dev/null; true";

/// Reads [`PROBE`]'s output.
fn parse_have(output: &str) -> Have {
    let mut have = Have::new();
    for line in output.lines().map(str::trim) {
        let word = |i: usize| {
            line.split_whitespace()
                .nth(i)
                .unwrap_or_default()
                .to_owned()
        };
        if line.starts_with("rustc ") {
            have.insert("Rust", word(1));
        } else if line.starts_with("Python ") {
            have.insert("Python", word(1));
        } else if line.starts_with("go version go") {
            have.insert("Go", word(2).trim_start_matches("go").to_owned());
        } else if line.starts_with('v') && line[1..].starts_with(|c: char| c.is_ascii_digit()) {
            have.insert("Node", line[1..].to_owned());
        }
    }
    have
}

/// What `image` has, asked once per process and image (by Docker's image id).
async fn have(backend: &Backend, image: &str) -> Option<Have> {
    static SEEN: OnceLock<Mutex<HashMap<String, Have>>> = OnceLock::new();
    let key = format!(
        "{image}@{}",
        backend.image_id(image).await.unwrap_or_default()
    );
    let seen = SEEN.get_or_init(Default::default);
    if let Some(h) = seen.lock().ok()?.get(&key) {
        return Some(h.clone());
    }
    let dir = tempfile::tempdir().ok()?;
    let spec = SandboxSpec::probe(image, dir.path(), "toolchains", false);
    let sandbox = backend.start(&spec).await.ok()?;
    let out = sandbox.exec(PROBE, Duration::from_secs(60)).await;
    sandbox.stop().await;
    let have = parse_have(&out.ok()?.output);
    seen.lock().ok()?.insert(key, have.clone());
    Some(have)
}

/// One line for each toolchain version `wants` asks for that the image does not have: which
/// version, where it is asked for, what the image has, and what to set. Nothing when the image
/// cannot be asked.
pub async fn check(backend: &Backend, image: &str, wants: &[Want]) -> Vec<String> {
    if wants.is_empty() {
        return vec![];
    }
    let Some(have) = have(backend, image).await else {
        return vec![];
    };
    mismatches(wants, &have, image)
}

fn mismatches(wants: &[Want], have: &Have, image: &str) -> Vec<String> {
    wants
        .iter()
        .filter_map(|w| {
            let Some(version) = have.get(w.lang) else {
                return Some(format!(
                    "{} asks for {} {}; the image {image} has no {}: set `image:` in .github/hive.yml to one that has it.",
                    w.from, w.lang, w.range, w.lang
                ));
            };
            if satisfies(version, w) {
                return None;
            }
            Some(format!(
                "{} asks for {} {}; the image {image} has {version}: set `image:` in .github/hive.yml to one with {} {}.",
                w.from, w.lang, w.range, w.lang, w.range
            ))
        })
        .collect()
}

fn satisfies(have: &str, want: &Want) -> bool {
    let v = numbers(have);
    match want.rule {
        Rule::AtLeast => cmp(&v, &numbers(&want.range)).is_ge(),
        Rule::Prefix => {
            let p = numbers(&want.range);
            v.len() >= p.len() && v[..p.len()] == p[..]
        }
        Rule::Nightly => have.contains("nightly"),
        Rule::Pep440 => want.range.split(',').all(|c| pep440(&v, c.trim())),
        Rule::Semver => want.range.split("||").any(|alt| semver_all(&v, alt.trim())),
    }
}

/// `1.85.0-nightly` → `[1, 85, 0]`: the leading dotted numbers.
fn numbers(s: &str) -> Vec<u64> {
    s.trim()
        .trim_start_matches(['v', '=', ' '])
        .split('.')
        .map_while(|p| {
            let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .collect()
}

/// Compares versions, the shorter one padded with zeros.
fn cmp(a: &[u64], b: &[u64]) -> std::cmp::Ordering {
    let n = a.len().max(b.len());
    let at = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
    (0..n)
        .map(|i| at(a, i).cmp(&at(b, i)))
        .find(|o| o.is_ne())
        .unwrap_or(std::cmp::Ordering::Equal)
}

fn starts_with(v: &[u64], prefix: &[u64]) -> bool {
    (0..prefix.len()).all(|i| v.get(i).copied().unwrap_or(0) == prefix[i])
}

/// One clause of a PEP 440 specifier set; one it cannot read is taken as met.
fn pep440(v: &[u64], clause: &str) -> bool {
    let op_len = clause
        .find(|c: char| c.is_ascii_digit())
        .unwrap_or(clause.len());
    let (op, rest) = clause.split_at(op_len);
    let w = numbers(rest);
    if w.is_empty() {
        return true;
    }
    let wildcard = rest.trim_end().ends_with(".*");
    match op.trim() {
        ">=" => cmp(v, &w).is_ge(),
        ">" => cmp(v, &w).is_gt(),
        "<=" => cmp(v, &w).is_le(),
        "<" => cmp(v, &w).is_lt(),
        "==" | "===" if wildcard => starts_with(v, &w),
        "==" | "===" => cmp(v, &w).is_eq(),
        "!=" if wildcard => !starts_with(v, &w),
        "!=" => cmp(v, &w).is_ne(),
        "~=" => cmp(v, &w).is_ge() && starts_with(v, &w[..w.len().saturating_sub(1).max(1)]),
        _ => true,
    }
}

/// One alternative of a semver range (space-separated comparators, all met); a form it cannot
/// read is taken as met.
fn semver_all(v: &[u64], alt: &str) -> bool {
    if alt.contains(" - ") {
        return true;
    }
    alt.split_whitespace().all(|c| semver_one(v, c))
}

fn semver_one(v: &[u64], c: &str) -> bool {
    let op_len = c.find(|ch: char| ch.is_ascii_digit()).unwrap_or(c.len());
    let (op, rest) = c.split_at(op_len);
    let w = numbers(rest);
    if w.is_empty() {
        return true; // `*`, `x`, `latest`
    }
    let next = |i: usize| -> Vec<u64> {
        let mut n = w[..=i].to_vec();
        n[i] += 1;
        n
    };
    match op {
        ">=" => cmp(v, &w).is_ge(),
        ">" => cmp(v, &w).is_gt(),
        "<=" => cmp(v, &w).is_le(),
        "<" => cmp(v, &w).is_lt(),
        "^" => {
            let at = w.iter().position(|n| *n != 0).unwrap_or(w.len() - 1);
            cmp(v, &w).is_ge() && cmp(v, &next(at.min(w.len() - 1))).is_lt()
        }
        "~" => cmp(v, &w).is_ge() && cmp(v, &next(if w.len() > 1 { 1 } else { 0 })).is_lt(),
        // `20`, `20.x`, `=20.1.0`: that version, as far as it is given.
        "" | "=" | "v" => starts_with(v, &w),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::tree::Tree;

    fn check(lang: &'static str, range: &str, rule: Rule, have: &str) -> bool {
        let w = Want {
            lang,
            range: range.into(),
            from: "x".into(),
            rule,
        };
        satisfies(have, &w)
    }

    #[test]
    fn versions_are_judged_as_each_ecosystem_reads_them() {
        assert!(check("Rust", "1.80", Rule::AtLeast, "1.85.0"));
        assert!(!check("Rust", "1.88", Rule::AtLeast, "1.85.0"));
        assert!(!check(
            "Rust",
            "nightly-2025-01-01",
            Rule::Nightly,
            "1.85.0"
        ));
        assert!(check("Python", "3.13", Rule::Prefix, "3.13.5"));
        assert!(!check("Python", "3.12", Rule::Prefix, "3.13.5"));
        for (spec, ok) in [
            (">=3.9", true),
            (">=3.9,<3.13", false),
            ("~=3.10", true),
            ("~=3.12.0", false),
            ("==3.13.*", true),
            ("!=3.13.*", false),
            (">3.13.5", false),
        ] {
            assert_eq!(check("Python", spec, Rule::Pep440, "3.13.5"), ok, "{spec}");
        }
        for (range, ok) in [
            (">=18", true),
            ("^18 || ^20", true),
            ("^22", false),
            ("~20.19", true),
            ("~20.20", false),
            (">=18.0.0 <20", false),
            ("20.x", true),
            ("*", true),
        ] {
            assert_eq!(check("Node", range, Rule::Semver, "20.19.2"), ok, "{range}");
        }
        assert!(!check("Go", "1.25", Rule::AtLeast, "1.24.4"));
    }

    #[test]
    fn a_projects_pins_are_read_from_its_files() {
        let t = Tree::of(&[
            ("rust-toolchain.toml", "[toolchain]\nchannel = \"1.90.0\"\n"),
            (
                "Cargo.toml",
                "[workspace]\nmembers = []\n[workspace.package]\nrust-version = \"1.70\"\n",
            ),
            (".python-version", "3.12\n"),
            ("pyproject.toml", "[project]\nrequires-python = \">=3.9\"\n"),
            ("go.mod", "module m\n\ngo 1.22\n\ntoolchain go1.23.1\n"),
            ("package.json", r#"{"engines": {"node": ">=18"}}"#),
        ]);
        let got: Vec<(&str, String, String)> = wants(&t)
            .into_iter()
            .map(|w| (w.lang, w.range, w.from))
            .collect();
        let want = [
            ("Rust", "1.90.0", "rust-toolchain.toml channel"),
            ("Rust", "1.70", "Cargo.toml rust-version"),
            ("Python", "3.12", ".python-version"),
            ("Python", ">=3.9", "pyproject.toml requires-python"),
            ("Go", "1.22", "go.mod go"),
            ("Go", "1.23.1", "go.mod toolchain"),
            ("Node", ">=18", "package.json engines.node"),
        ];
        assert_eq!(got, want.map(|(l, r, f)| (l, r.to_owned(), f.to_owned())));
    }

    #[test]
    fn a_mismatch_says_the_need_what_the_image_has_and_the_setting() {
        let t = Tree::of(&[
            (
                "Cargo.toml",
                "[package]\nname = \"x\"\nrust-version = \"1.99\"\n",
            ),
            ("package.json", r#"{"engines": {"node": ">=18"}}"#),
        ]);
        let have = parse_have(
            "rustc 1.85.0 (4d91de4e4 2025-02-17) (built from a source tarball)\nPython 3.13.5\n",
        );
        assert_eq!(have.get("Python").map(String::as_str), Some("3.13.5"));
        let said = mismatches(&wants(&t), &have, "vibeloop-runner:rust");
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(
            said[0].starts_with("Cargo.toml rust-version asks for Rust 1.99; the image vibeloop-runner:rust has 1.85.0")
                && said[0].ends_with("set `image:` in .github/hive.yml to one with Rust 1.99."),
            "{}",
            said[0]
        );
        assert!(said[1].contains("has no Node"), "{}", said[1]);
        let have = parse_have("go version go1.24.4 linux/amd64\nv20.19.2\n");
        assert_eq!(have.get("Go").map(String::as_str), Some("1.24.4"));
        assert_eq!(have.get("Node").map(String::as_str), Some("20.19.2"));
    }
}
