//! The config a ticket runs with: `.github/hive.yml` where it sets a key, else the repository's
//! devcontainer, else what its ecosystems give ([`super::detect`]), else the built-in default —
//! key by key, each with where it came from, so `vibeloop gates --explain` can show it.

use super::detect::{self, Files, Found};
use super::devcontainer::{self, Devcontainer};
use super::fill;
use crate::config::repo::{HiveConfig, PATH as CONFIG_PATH};

pub use super::fill::{Origin, POLYGLOT_IMAGE};

/// `PATH` inside a sandbox, before the ecosystems' own directories.
const SYSTEM_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The effective config and what it is made of.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub config: HiveConfig,
    pub found: Vec<Found>,
    pub devcontainer: Option<Devcontainer>,
    /// Each key shown by `--explain`: its value and where it came from.
    pub origins: Vec<Origin>,
    /// Files whose content decides the environment (manifests, lockfiles, the devcontainer).
    pub inputs: Vec<String>,
    /// Those files as the base has them (`None`: absent there): only these are set up with
    /// network by the repository's own setup command.
    pub base_inputs: Vec<(String, Option<Vec<u8>>)>,
    /// The setup command is the detected ecosystems' own (not the repository's or its
    /// devcontainer's): a change to the dependency files can be set up in two phases
    /// ([`super::fetch`]).
    pub setup_detected: bool,
    /// Environment of every command of the repository (caches, `PATH`, `containerEnv`).
    pub env: Vec<(String, String)>,
    /// Directories of the worktree kept in the environment (`node_modules`).
    pub links: Vec<String>,
    /// What could not be used, for people (a devcontainer that builds its own image…).
    pub problems: Vec<String>,
    /// The same repository resolved without its devcontainer, when the image came from it:
    /// what runs when that image cannot be had ([`super::image::ensure`]).
    pub without_devcontainer: Option<Box<Resolved>>,
    /// The toolchain versions the project asks for ([`super::toolchain::check`] compares
    /// them with the image's).
    pub toolchains: Vec<super::toolchain::Want>,
    /// The devcontainer's image to build, when `config.image` is its tag.
    pub image_build: Option<super::image::ImageBuild>,
    /// The repository's instructions for coding agents (`AGENTS.md`…), as the base has them.
    pub instructions: std::sync::Arc<super::instructions::Instructions>,
    /// The base commit these were read from, when the caller knows it: the base's
    /// environment is set up from a clean checkout of it.
    pub base_commit: Option<crate::ids::CommitSha>,
}

impl Resolved {
    /// `config` as it is, nothing detected (before the base's files are read).
    pub fn plain(config: HiveConfig) -> Self {
        Self {
            config,
            found: vec![],
            devcontainer: None,
            origins: vec![],
            inputs: vec![],
            base_inputs: vec![],
            setup_detected: false,
            env: vec![],
            links: vec![],
            problems: vec![],
            without_devcontainer: None,
            toolchains: vec![],
            image_build: None,
            instructions: Default::default(),
            base_commit: None,
        }
    }
}

/// Fills the keys `yaml` leaves unset from the repository's `files`.
pub fn resolve(yaml: HiveConfig, files: &dyn Files) -> Resolved {
    let mut r = resolve_with(yaml.clone(), files, true);
    let image_from_devcontainer = r
        .origins
        .iter()
        .any(|o| o.key == "image" && r.devcontainer.as_ref().is_some_and(|d| d.path == o.from));
    if image_from_devcontainer {
        r.without_devcontainer = Some(Box::new(resolve_with(yaml, files, false)));
    }
    r.instructions = std::sync::Arc::new(super::instructions::Instructions::of(files));
    r
}

fn resolve_with(yaml: HiveConfig, files: &dyn Files, read_devcontainer: bool) -> Resolved {
    let found = detect::detect(files);
    let mut problems = Vec::new();
    let devcontainer = read_devcontainer
        .then(|| devcontainer_of(files, &mut problems))
        .flatten();
    let mut config = yaml;
    let dc = devcontainer.as_ref();
    let (image, image_build) = fill::image(&mut config, &found, dc, files);
    let (setup, setup_detected) = fill::setup(&mut config, &found, dc);
    let mut origins = vec![
        image,
        setup,
        fill::prepare(&mut config, &found, setup_detected),
    ];
    origins.extend(fill::gate_commands(&mut config, &found));
    origins.extend(fill::coverage(&mut config, &found));
    origins.push(fill::test_paths(&mut config, &found));
    let mut inputs: Vec<String> = Vec::new();
    for i in found.iter().flat_map(|f| f.inputs.iter()) {
        if !inputs.contains(i) {
            inputs.push(i.clone());
        }
    }
    if let Some(d) = &devcontainer {
        inputs.push(d.path.clone());
    }
    let env = env_of(&found, dc);
    let links = found.iter().flat_map(|f| f.links.clone()).collect();
    let base_inputs = inputs
        .iter()
        .map(|p| (p.clone(), files.read(p).map(String::into_bytes)))
        .collect();
    Resolved {
        config,
        found,
        devcontainer,
        origins,
        inputs,
        base_inputs,
        setup_detected,
        env,
        links,
        problems,
        without_devcontainer: None,
        toolchains: super::toolchain::wants(files),
        image_build,
        instructions: Default::default(),
        base_commit: None,
    }
}

/// The repository's devcontainer, if it has one this bot reads; what it cannot honour goes to
/// `problems`.
fn devcontainer_of(files: &dyn Files, problems: &mut Vec<String>) -> Option<Devcontainer> {
    let d = devcontainer::PATHS.iter().find_map(|p| {
        let text = files.read(p)?;
        match devcontainer::parse(p, &text) {
            Ok(d) => Some(d),
            Err(e) => {
                problems.push(e);
                None
            }
        }
    })?;
    problems.extend(d.unsupported.iter().cloned());
    Some(d)
}

/// The sandbox's environment variables: the ecosystems', `PATH` with their directories first,
/// the devcontainer's, and what makes runners name their tests.
fn env_of(found: &[Found], devcontainer: Option<&Devcontainer>) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = found.iter().flat_map(|f| f.env.clone()).collect();
    let mut path: Vec<String> = found.iter().flat_map(|f| f.path.clone()).collect();
    path.push(SYSTEM_PATH.into());
    env.push(("PATH".into(), path.join(":")));
    if let Some(d) = devcontainer {
        env.extend(d.env.iter().cloned());
    }
    naming_tests(&mut env);
    env
}

/// pytest names every test it ran, with its outcome, only in its `-rA` summary: whatever runs
/// it (a pinned `gates.test`, a Makefile, tox) prints that summary, so the gates can judge the
/// tests by name ([`crate::gates::test_results`]). Added to the options the environment already
/// gives pytest, never instead of them.
fn naming_tests(env: &mut Vec<(String, String)>) {
    let (key, option) = crate::sandbox::NAMING_TESTS;
    match env.iter_mut().rev().find(|(k, _)| k == key) {
        Some((_, v)) if !v.split_whitespace().any(|o| o == option) => {
            v.push(' ');
            v.push_str(option);
        }
        Some(_) => {}
        None => env.push((key.into(), option.into())),
    }
}

impl Resolved {
    /// What was detected and why, each key with its value and source: `vibeloop gates --explain`.
    pub fn explain(&self) -> String {
        let mut s = String::new();
        if self.found.is_empty() {
            s.push_str("Detected: no ecosystem (no Cargo.toml, pyproject.toml, setup.py, requirements*.txt, package.json or go.mod at the root)\n");
        }
        for f in &self.found {
            s.push_str(&format!("Detected {}: {}\n", f.ecosystem.as_str(), f.why));
        }
        if let Some(d) = &self.devcontainer {
            s.push_str(&format!("Devcontainer: {}\n", d.path));
        }
        s.push('\n');
        let width = self.origins.iter().map(|o| o.key.len()).max().unwrap_or(0);
        for o in &self.origins {
            s.push_str(&format!(
                "{:width$}  {}\n{:width$}    from {}\n",
                o.key,
                o.value.as_deref().unwrap_or("(none: skipped)"),
                "",
                o.from,
            ));
        }
        if !self.inputs.is_empty() {
            s.push_str(&format!(
                "\nThe environment is set up again when one of these changes: {}\n",
                self.inputs.join(", ")
            ));
        }
        if !self.instructions.is_empty() {
            s.push_str("\nInstructions for coding agents, given to every role where they apply:\n");
            for line in self.instructions.describe() {
                s.push_str(&format!("  {line}\n"));
            }
        }
        for p in &self.problems {
            s.push_str(&format!("\nwarning: {p}\n"));
        }
        s.push_str(&format!(
            "\nA key set in {CONFIG_PATH} wins over what is detected; copy a line there to pin it.\n"
        ));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::tree::Tree;

    #[test]
    fn measuring_coverage_brings_the_ecosystem_s_tool_and_command() {
        let files = Tree::of(&[("requirements.txt", "wcwidth\n")]);
        let off = resolve(HiveConfig::default(), &files);
        assert!(!off.config.setup.as_deref().unwrap().contains("coverage"));
        assert_eq!(off.config.acceptance.coverage.command, None);
        assert!(
            off.origins
                .iter()
                .all(|o| o.key != "acceptance.coverage.command")
        );

        let yaml = HiveConfig::parse("acceptance: { coverage: { changed_lines: 0.8 } }").unwrap();
        let on = resolve(yaml, &files);
        let setup = on.config.setup.as_deref().unwrap();
        assert!(setup.ends_with("pip install --quiet coverage)"), "{setup}");
        let command = on.config.acceptance.coverage.command.as_deref().unwrap();
        assert!(
            command.contains("python -m coverage run -m pytest"),
            "{command}"
        );
        assert!(
            command.contains(".vibeloop/coverage/python.lcov"),
            "{command}"
        );

        let pinned = "acceptance: { coverage: { project: 0.5, command: make cov } }";
        let r = resolve(HiveConfig::parse(pinned).unwrap(), &files);
        assert_eq!(
            r.config.acceptance.coverage.command.as_deref(),
            Some("make cov")
        );
        let from = r
            .origins
            .iter()
            .find(|o| o.key == "acceptance.coverage.command");
        assert_eq!(from.unwrap().from, CONFIG_PATH);
    }

    #[test]
    fn keys_in_the_file_win_one_by_one() {
        let yaml = HiveConfig::parse("gates:\n  test: cargo nextest run\n").unwrap();
        let r = resolve(
            yaml,
            &Tree::of(&[("Cargo.toml", "[package]\n"), ("Cargo.lock", "")]),
        );
        let c = &r.config;
        assert_eq!(c.gates.test.as_deref(), Some("cargo nextest run"));
        assert_eq!(c.gates.build.as_deref(), Some("cargo build --offline"));
        assert_eq!(c.image, "vibeloop-runner:rust");
        assert!(c.setup.as_deref().unwrap().starts_with("cargo fetch"));
        assert_eq!(r.inputs, ["Cargo.toml", "Cargo.lock"]);
        let from = |k: &str| r.origins.iter().find(|o| o.key == k).unwrap().from.clone();
        assert_eq!(from("gates.test"), CONFIG_PATH);
        assert_eq!(from("gates.lint"), "detected: Cargo.toml");
        assert_eq!(from("gates.typecheck"), "nothing detected gives one");
        assert!(
            r.env
                .iter()
                .any(|(k, v)| k == "CARGO_TARGET_DIR" && v == "/cache/target")
        );
        let explained = r.explain();
        assert!(
            explained.contains("Detected rust: Cargo.toml with its Cargo.lock"),
            "{explained}"
        );
    }

    #[test]
    fn a_devcontainer_wins_over_detection_and_nothing_keeps_the_defaults() {
        let dc = r#"{ "image": "my-go:1", "postCreateCommand": "make deps", "containerEnv": {"A": "1"} }"#;
        let r = resolve(
            HiveConfig::default(),
            &Tree::of(&[
                ("go.mod", "module x\n"),
                (".devcontainer/devcontainer.json", dc),
            ]),
        );
        assert_eq!(r.config.image, "my-go:1");
        assert_eq!(r.config.setup.as_deref(), Some("make deps"));
        assert_eq!(r.config.gates.test.as_deref(), Some("go test -v ./..."));
        assert!(r.env.contains(&("A".to_owned(), "1".to_owned())));
        let pytest = |r: &Resolved| {
            r.env
                .iter()
                .filter(|(k, _)| k == "PYTEST_ADDOPTS")
                .map(|(_, v)| v.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(pytest(&r), ["-rA"]);
        let dc =
            r#"{ "image": "py:1", "containerEnv": {"PYTEST_ADDOPTS": "-p no:cacheprovider"} }"#;
        let theirs = resolve(
            HiveConfig::default(),
            &Tree::of(&[(".devcontainer/devcontainer.json", dc)]),
        );
        assert_eq!(pytest(&theirs), ["-p no:cacheprovider -rA"]);
        assert!(
            r.inputs
                .contains(&".devcontainer/devcontainer.json".to_owned())
        );

        let r = resolve(HiveConfig::default(), &Tree::of(&[("README.md", "")]));
        assert_eq!(r.config, HiveConfig::default());
        assert!(r.explain().contains("no ecosystem"));
    }

    #[test]
    fn several_ecosystems_share_one_image_and_run_every_suite() {
        let r = resolve(
            HiveConfig::default(),
            &Tree::of(&[("go.mod", "module x\n"), ("requirements.txt", "six\n")]),
        );
        assert_eq!(r.config.image, POLYGLOT_IMAGE);
        assert_eq!(
            r.config.gates.test.as_deref(),
            Some("(python -m pytest -q) && (go test -v ./...)")
        );
        assert!(
            r.config
                .policy
                .test_paths
                .contains(&"**/*_test.go".to_owned())
        );
    }
}
