//! `policy` in `.github/hive.yml`: what agents may touch (read-only and test paths) and what
//! code may use: banned calls and imports for Python (`banned_calls`, `banned_imports`) and,
//! per language, for Rust, JavaScript/TypeScript and Go (`policy.rust`, `policy.javascript`,
//! `policy.go`). Each language key left out keeps that language's default; the security gate
//! (`crate::gates::security`) applies them to the files a change adds or modifies.

use globset::Glob;
use serde::Deserialize;

use crate::pathset::{PathSet, glob_of};

/// What agents may touch and what code may use.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Policy {
    /// Paths nobody but people may change (globs; a directory `d/` means `d/**`).
    pub read_only_paths: Vec<String>,
    /// Where the Breaker's tests live; the Builder may not change them.
    pub test_paths: Vec<String>,
    /// Python calls refused by the security gate (`eval`, `os.system`, `subprocess.Popen`…).
    pub banned_calls: Vec<String>,
    /// Python modules refused by the security gate (`pickle`, `telnetlib`…).
    pub banned_imports: Vec<String>,
    /// Rust: paths (`std::process::Command`) and crates refused outside `allow_in`.
    pub rust: LanguagePolicy,
    /// JavaScript and TypeScript: globals and members (`eval`, `child_process.exec`) and
    /// modules (`child_process`).
    pub javascript: LanguagePolicy,
    /// Go: package members (`os/exec.Command`) and import paths (`os/exec`).
    pub go: LanguagePolicy,
    /// Highest cyclomatic complexity a function the change touches may have (the lint gate's
    /// findings); none by default. A ticket's `vibe_config.complexity_limit` may lower it.
    pub complexity_limit: Option<u32>,
    /// The Architect's ticket may add read-only paths of its own (`constraints.read_only_paths`)
    /// to these; `false` keeps the repository's alone.
    pub ticket_read_only_paths: bool,
}

/// What no agent may change, whatever `policy.read_only_paths` says: the repository's GitHub
/// settings, workflows, the bot's own config and prompt additions and Copilot's instructions
/// (`.github/`); the instructions every role follows (`AGENTS.md`, `CLAUDE.md` at any level);
/// the devcontainer, built with network once it lands. A change to any of them steers the
/// agents or the machine, so only people make it.
pub const ALWAYS_READ_ONLY: [&str; 5] = [
    ".github/",
    "**/AGENTS.md",
    "**/CLAUDE.md",
    ".devcontainer/",
    ".devcontainer.json",
];

impl Policy {
    /// Adds each of [`ALWAYS_READ_ONLY`] to `read_only_paths` when a repository's list left
    /// it out.
    pub fn lock_github(&mut self) {
        for always in ALWAYS_READ_ONLY {
            let same = |p: &String| p.trim_end_matches('/') == always.trim_end_matches('/');
            if !self.read_only_paths.iter().any(same) {
                self.read_only_paths.push(always.into());
            }
        }
    }
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            read_only_paths: ALWAYS_READ_ONLY.map(String::from).to_vec(),
            test_paths: vec![
                "tests/".into(),
                "**/test_*.py".into(),
                "**/*_test.py".into(),
            ],
            banned_calls: vec!["eval".into(), "exec".into(), "os.system".into()],
            banned_imports: vec![],
            rust: LanguagePolicy::default(),
            javascript: LanguagePolicy::default(),
            go: LanguagePolicy::default(),
            complexity_limit: None,
            ticket_read_only_paths: true,
        }
    }
}

/// The banned names of one language; a key left out keeps the language's default
/// ([`PolicyLanguage::defaults`]).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct LanguagePolicy {
    pub banned_calls: Option<Vec<String>>,
    pub banned_imports: Option<Vec<String>>,
    /// Files where the bans do not apply (globs): binaries, build scripts, tests.
    pub allow_in: Option<Vec<String>>,
}

/// A language of `policy.<language>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PolicyLanguage {
    Rust,
    /// JavaScript and TypeScript.
    JavaScript,
    Go,
}

/// One language's effective rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LanguageRules {
    pub banned_calls: Vec<String>,
    pub banned_imports: Vec<String>,
    pub allow_in: Vec<String>,
}

impl LanguageRules {
    pub fn is_empty(&self) -> bool {
        self.banned_calls.is_empty() && self.banned_imports.is_empty()
    }

    pub fn allowed(&self) -> PathSet {
        PathSet::new(&self.allow_in)
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

impl PolicyLanguage {
    pub const ALL: [PolicyLanguage; 3] = [Self::Rust, Self::JavaScript, Self::Go];

    /// The key under `policy`.
    pub fn key(self) -> &'static str {
        match self {
            Self::Rust => "rust",
            Self::JavaScript => "javascript",
            Self::Go => "go",
        }
    }

    /// What the language bans when the repository says nothing: starting processes, and
    /// evaluating strings as code. Binaries, build scripts and tests may start processes.
    pub fn defaults(self) -> LanguageRules {
        match self {
            Self::Rust => LanguageRules {
                banned_calls: strings(&["std::process::Command"]),
                banned_imports: vec![],
                allow_in: strings(&[
                    "**/build.rs",
                    "**/src/main.rs",
                    "**/src/bin/",
                    "**/tests/",
                    "**/examples/",
                    "**/benches/",
                ]),
            },
            Self::JavaScript => LanguageRules {
                banned_calls: strings(&["eval", "Function"]),
                banned_imports: strings(&["child_process"]),
                allow_in: strings(&[
                    "**/scripts/",
                    "**/test/",
                    "**/tests/",
                    "**/__tests__/",
                    "**/*.test.*",
                    "**/*.spec.*",
                    "**/*.config.*",
                ]),
            },
            Self::Go => LanguageRules {
                banned_calls: strings(&["syscall.Exec", "syscall.ForkExec", "os.StartProcess"]),
                banned_imports: strings(&["os/exec"]),
                allow_in: strings(&["**/cmd/", "**/*_test.go", "**/testdata/"]),
            },
        }
    }

    /// Whether `name` is a name this language's lists can hold.
    fn valid(self, name: &str, import: bool) -> bool {
        let plain = !name.is_empty() && !name.chars().any(|c| c.is_whitespace() || c == '"');
        match (self, import) {
            (Self::Rust, _) => name.split("::").all(is_identifier),
            (Self::JavaScript, false) => name.split('.').all(|p| {
                !p.is_empty()
                    && p.chars()
                        .all(|c| c == '$' || c == '_' || c.is_alphanumeric())
            }),
            (Self::JavaScript, true) | (Self::Go, _) => plain,
        }
    }
}

impl Policy {
    fn language(&self, language: PolicyLanguage) -> &LanguagePolicy {
        match language {
            PolicyLanguage::Rust => &self.rust,
            PolicyLanguage::JavaScript => &self.javascript,
            PolicyLanguage::Go => &self.go,
        }
    }

    /// The effective rules of `language`: the repository's keys, the defaults for the others.
    pub fn rules(&self, language: PolicyLanguage) -> LanguageRules {
        let set = self.language(language);
        let d = language.defaults();
        LanguageRules {
            banned_calls: set.banned_calls.clone().unwrap_or(d.banned_calls),
            banned_imports: set.banned_imports.clone().unwrap_or(d.banned_imports),
            allow_in: set.allow_in.clone().unwrap_or(d.allow_in),
        }
    }

    /// Checks every list; the error names the key (`policy.rust.banned_calls: …`).
    pub(super) fn check(&self) -> Result<(), String> {
        if self
            .complexity_limit
            .is_some_and(|n| !(1..=1000).contains(&n))
        {
            return Err("policy.complexity_limit: must be from 1 to 1000".into());
        }
        for (key, list) in [
            ("policy.read_only_paths", &self.read_only_paths),
            ("policy.test_paths", &self.test_paths),
        ] {
            check_globs(key, list)?;
        }
        for (key, list) in [
            ("policy.banned_calls", &self.banned_calls),
            ("policy.banned_imports", &self.banned_imports),
        ] {
            if let Some(n) = list
                .iter()
                .find(|n| n.is_empty() || !n.split('.').all(is_identifier))
            {
                return Err(format!("{key}: {n:?} is not a dotted Python name"));
            }
        }
        for language in PolicyLanguage::ALL {
            let set = self.language(language);
            let lang = language.key();
            for (what, list, import) in [
                ("banned_calls", &set.banned_calls, false),
                ("banned_imports", &set.banned_imports, true),
            ] {
                if let Some(n) = list.iter().flatten().find(|n| !language.valid(n, import)) {
                    return Err(format!(
                        "policy.{lang}.{what}: {n:?} is not a name of this language (e.g. {:?})",
                        match language {
                            PolicyLanguage::Rust => "std::process::Command",
                            PolicyLanguage::JavaScript if import => "child_process",
                            PolicyLanguage::JavaScript => "child_process.exec",
                            PolicyLanguage::Go if import => "os/exec",
                            PolicyLanguage::Go => "os/exec.Command",
                        }
                    ));
                }
            }
            if let Some(list) = &set.allow_in {
                check_globs(&format!("policy.{lang}.allow_in"), list)?;
            }
        }
        Ok(())
    }
}

fn check_globs(key: &str, list: &[String]) -> Result<(), String> {
    for p in list {
        if p.starts_with('/') || p.split('/').any(|c| c == "..") {
            return Err(format!(
                "{key}: {p:?} must be relative to the repository root, without '..'"
            ));
        }
        Glob::new(&glob_of(p)).map_err(|e| format!("{key}: {p:?}: {e}"))?;
    }
    Ok(())
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_alphabetic())
        && chars.all(|c| c == '_' || c.is_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `policy` mapping in `yaml`, read and checked as `.github/hive.yml`'s would be.
    fn parse(yaml: &str) -> Result<Policy, String> {
        let p: Policy = serde_yaml_ng::from_str(yaml).map_err(|e| e.to_string())?;
        p.check().map(|()| p)
    }

    #[test]
    fn a_language_key_left_out_keeps_its_default() {
        let c = parse("rust:\n  banned_imports: [libc]\n").unwrap();
        let rust = c.rules(PolicyLanguage::Rust);
        assert_eq!(rust.banned_imports, ["libc"]);
        assert_eq!(rust.banned_calls, ["std::process::Command"]);
        assert!(rust.allowed().contains("src/main.rs"));
        assert!(rust.allowed().contains("crates/cli/src/bin/x.rs"));
        assert!(!rust.allowed().contains("src/lib.rs"));
        assert_eq!(c.rules(PolicyLanguage::Go), PolicyLanguage::Go.defaults());
        let off = parse("{ javascript: { banned_calls: [], banned_imports: [] } }").unwrap();
        assert!(off.rules(PolicyLanguage::JavaScript).is_empty());
    }

    #[test]
    fn names_are_checked_per_language() {
        for (yaml, key) in [
            (
                "{ rust: { banned_calls: [\"std.process\"] } }",
                "policy.rust.banned_calls",
            ),
            (
                "{ rust: { banned_calls: [\"\"] } }",
                "policy.rust.banned_calls",
            ),
            (
                "{ javascript: { banned_calls: [\"a b\"] } }",
                "policy.javascript.banned_calls",
            ),
            (
                "{ go: { banned_imports: [\"os exec\"] } }",
                "policy.go.banned_imports",
            ),
            ("{ go: { allow_in: [\"../x\"] } }", "policy.go.allow_in"),
        ] {
            let e = parse(yaml).unwrap_err();
            assert!(e.contains(key), "{yaml}: {e}");
        }
        for yaml in [
            "{ rust: { banned_calls: [\"libc::system\"] } }",
            "{ javascript: { banned_imports: [\"@scope/pkg\", \"node:vm\"] } }",
            "{ go: { banned_calls: [\"golang.org/x/sys/unix.Exec\"] } }",
        ] {
            parse(yaml).unwrap();
        }
    }
}
