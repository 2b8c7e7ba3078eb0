//! What the Architect's ticket may change in the repository's config for that ticket, and how
//! far: its `constraints.read_only_paths` are added to `policy.read_only_paths` (never replacing
//! them, and only where `policy.ticket_read_only_paths` allows), its `constraints.timeout_seconds`
//! lowers `limits.timeout_seconds` (never raises it), its `vibe_config.linter` picks the lint
//! gate's tool from a known list where `.github/hive.yml` pins none, and its
//! `vibe_config.complexity_limit` lowers `policy.complexity_limit`. The ticket is a model's
//! output: a value outside these rules is dropped and said so, never run.

use super::repo::HiveConfig;
use crate::ticket::plan::TaskTicket;

/// Linters a ticket may name, and the lint command each runs.
pub const LINTERS: &[(&str, &str)] = &[
    ("ruff", "ruff check ."),
    ("flake8", "flake8"),
    ("pylint", "pylint --recursive=y ."),
    ("clippy", "cargo clippy --all-targets -- -D warnings"),
    ("eslint", "npx --no-install eslint ."),
    ("golangci-lint", "golangci-lint run"),
    ("go vet", "go vet ./..."),
];

impl HiveConfig {
    /// The config for a ticket: this one narrowed by `ticket` as the module says, and a line
    /// for people per change made or refused.
    pub fn with_ticket(&self, ticket: &TaskTicket) -> (HiveConfig, Vec<String>) {
        let mut c = self.clone();
        let mut notes = Vec::new();
        let wanted = &ticket.constraints.read_only_paths;
        if !wanted.is_empty() {
            if !c.policy.ticket_read_only_paths {
                notes.push("the ticket's read-only paths were not added: `policy.ticket_read_only_paths` is false".to_owned());
            } else {
                // A path under `policy.test_paths` would lock the Breaker's own tests.
                let tests = c.test_paths();
                let valid: Vec<&String> = wanted
                    .iter()
                    .filter(|p| {
                        let probe = if p.ends_with('/') {
                            format!("{p}vibeloop-probe")
                        } else {
                            (*p).clone()
                        };
                        !p.trim().is_empty()
                            && !p.starts_with('/')
                            && !p.split('/').any(|s| s == "..")
                            && globset::Glob::new(&crate::pathset::glob_of(p)).is_ok()
                            && !tests.contains(&probe)
                    })
                    .collect();
                for p in &valid {
                    if !c.policy.read_only_paths.contains(p) {
                        c.policy.read_only_paths.push((*p).clone());
                    }
                }
                if !valid.is_empty() {
                    let shown: Vec<String> = valid.iter().map(|p| format!("`{p}`")).collect();
                    notes.push(format!(
                        "read-only for this ticket too: {}",
                        shown.join(", ")
                    ));
                }
                if valid.len() < wanted.len() {
                    notes.push(
                        "the ticket's read-only paths that are not relative globs, or that hold the tests, were dropped"
                            .to_owned(),
                    );
                }
            }
        }
        if let Some(t) = ticket.constraints.timeout_seconds.filter(|t| *t > 0)
            && t < c.limits.timeout_seconds
        {
            c.limits.timeout_seconds = t;
            notes.push(format!(
                "gate commands stop after {t} s (the ticket's limit)"
            ));
        }
        if let Some(name) = ticket.vibe_config.linter.as_deref().map(str::trim) {
            let known = LINTERS.iter().find(|(n, _)| n.eq_ignore_ascii_case(name));
            match known {
                _ if c.is_set("gates.lint") => {}
                Some((n, command)) => {
                    c.gates.lint = Some((*command).to_owned());
                    notes.push(format!("lint gate: {n} (`{command}`), as the ticket asks"));
                }
                None if !name.is_empty() => {
                    let names: Vec<&str> = LINTERS.iter().map(|(n, _)| *n).collect();
                    notes.push(format!(
                        "the ticket's linter {:?} is not one of {}: the lint gate is unchanged",
                        name.chars().take(40).collect::<String>(),
                        names.join(", ")
                    ));
                }
                None => {}
            }
        }
        if let Some(limit) = ticket.vibe_config.complexity_limit.filter(|n| *n > 0) {
            let lower = c.policy.complexity_limit.is_none_or(|r| limit < r);
            if lower {
                c.policy.complexity_limit = Some(limit);
                notes.push(format!(
                    "changed functions keep a cyclomatic complexity of at most {limit}"
                ));
            }
        }
        (c, notes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ticket::plan::{Constraints, VibeConfig};

    fn ticket(
        ro: &[&str],
        timeout: Option<u64>,
        linter: Option<&str>,
        limit: Option<u32>,
    ) -> TaskTicket {
        TaskTicket {
            constraints: Constraints {
                read_only_paths: ro.iter().map(|s| (*s).to_owned()).collect(),
                timeout_seconds: timeout,
            },
            vibe_config: VibeConfig {
                linter: linter.map(str::to_owned),
                complexity_limit: limit,
            },
            ..TaskTicket::default()
        }
    }

    #[test]
    fn a_ticket_narrows_the_config_and_never_widens_it() {
        let repo = HiveConfig::parse(
            "limits: { timeout_seconds: 120 }\npolicy: { complexity_limit: 12 }\n",
        )
        .unwrap();
        let (c, notes) = repo.with_ticket(&ticket(
            &["docs/spec/", "/etc/", "../x", "tests/"],
            Some(30),
            Some("ruff"),
            Some(8),
        ));
        assert!(c.read_only().contains("docs/spec/api.md"));
        assert!(
            c.read_only().contains(".github/hive.yml"),
            "the repository's stay"
        );
        assert!(
            !c.policy
                .read_only_paths
                .iter()
                .any(|p| p.contains("etc") || p.contains(".."))
        );
        assert!(
            !c.read_only().contains("tests/test_calc.py"),
            "the Breaker's tests stay writable"
        );
        assert_eq!(c.limits.timeout_seconds, 30);
        assert_eq!(c.gates.lint.as_deref(), Some("ruff check ."));
        assert_eq!(c.policy.complexity_limit, Some(8));
        assert_eq!(notes.len(), 5, "{notes:?}");
        // Never above the repository's limits.
        let (c, _) = repo.with_ticket(&ticket(&[], Some(9_999), None, Some(50)));
        assert_eq!(
            (c.limits.timeout_seconds, c.policy.complexity_limit),
            (120, Some(12))
        );
    }

    #[test]
    fn the_repository_keeps_what_it_pins() {
        let repo = HiveConfig::parse(
            "gates: { lint: \"make lint\" }\npolicy: { ticket_read_only_paths: false }\n",
        )
        .unwrap();
        let (c, notes) = repo.with_ticket(&ticket(&["src/"], None, Some("ruff"), None));
        assert_eq!(c.gates.lint.as_deref(), Some("make lint"));
        assert!(!c.read_only().contains("src/a.rs"));
        assert!(notes[0].contains("ticket_read_only_paths"), "{notes:?}");
        // A linter that is not known is never run.
        let (c, notes) =
            HiveConfig::default().with_ticket(&ticket(&[], None, Some("rm -rf /"), None));
        assert_eq!(c.gates.lint, None);
        assert!(notes[0].contains("is not one of"), "{notes:?}");
    }
}
