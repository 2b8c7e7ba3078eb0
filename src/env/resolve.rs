//! The config a ticket runs with: `.github/hive.yml` where it sets a key, else the repository's
//! devcontainer, else what its ecosystems give ([`super::detect`]), else the built-in default —
//! key by key, each with where it came from, so `vibeloop gates --explain` can show it.

use super::detect::{self, Files, Found};
use super::devcontainer::{self, Devcontainer};
use crate::config::repo::{HiveConfig, PATH as CONFIG_PATH};

/// The image for a repository of several ecosystems (`--ecosystem all`).
pub const POLYGLOT_IMAGE: &str = "vibeloop-runner:all";

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

/// One key of the effective config.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Origin {
    pub key: &'static str,
    pub value: Option<String>,
    pub from: String,
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
    let paths: &[&str] = if read_devcontainer {
        &devcontainer::PATHS
    } else {
        &[]
    };
    let devcontainer = paths.iter().find_map(|p| {
        let text = files.read(p)?;
        match devcontainer::parse(p, &text) {
            Ok(d) => Some(d),
            Err(e) => {
                problems.push(e);
                None
            }
        }
    });
    if let Some(d) = &devcontainer {
        problems.extend(d.unsupported.iter().cloned());
    }
    let mut config = yaml;
    let mut origins = Vec::new();
    let detected = |f: &[&Found]| {
        let names: Vec<String> = f.iter().map(|f| f.manifest.clone()).collect();
        format!("detected: {}", names.join(", "))
    };
    let yaml_from = || CONFIG_PATH.to_owned();

    // image
    let mut image_build = None;
    let from = if config.is_set("image") {
        yaml_from()
    } else if let Some(image) = devcontainer.as_ref().and_then(|d| d.image.clone()) {
        config.image = image;
        devcontainer
            .as_ref()
            .map(|d| d.path.clone())
            .unwrap_or_default()
    } else if let Some((d, b)) = devcontainer.as_ref().and_then(|d| {
        let b = super::image::ImageBuild::of(d.build.as_ref()?, files)?;
        Some((d, b))
    }) {
        config.image = b.tag.clone();
        image_build = Some(b);
        d.path.clone()
    } else if found.len() == 1 {
        config.image = found[0].ecosystem.image();
        detected(&[&found[0]])
    } else if found.len() > 1 {
        config.image = POLYGLOT_IMAGE.into();
        detected(&found.iter().collect::<Vec<_>>())
    } else {
        "default".into()
    };
    origins.push(Origin {
        key: "image",
        value: Some(config.image.clone()),
        from,
    });

    // setup
    let setup_detected = !config.is_set("setup")
        && devcontainer
            .as_ref()
            .and_then(|d| d.setup.as_ref())
            .is_none();
    let from = if config.is_set("setup") {
        yaml_from()
    } else if let Some(setup) = devcontainer.as_ref().and_then(|d| d.setup.clone()) {
        config.setup = Some(setup);
        devcontainer
            .as_ref()
            .map(|d| d.path.clone())
            .unwrap_or_default()
    } else {
        // Measuring coverage may need a tool in the environment (coverage.py).
        let coverage = config.acceptance.coverage.is_on();
        let pick = |f: &Found| {
            let setup = f.setup.clone()?;
            Some(match f.coverage_setup.as_deref().filter(|_| coverage) {
                Some(more) => format!("{setup} && {more}"),
                None => setup,
            })
        };
        fill(&mut config.setup, &found, pick, detected)
    };
    origins.push(Origin {
        key: "setup",
        value: config.setup.clone(),
        from,
    });

    // prepare: with a detected setup only (it builds on what that setup installs)
    let from = if config.is_set("prepare") {
        yaml_from()
    } else if setup_detected {
        fill(&mut config.prepare, &found, |f| f.prepare.clone(), detected)
    } else {
        "not detected with a setup of the repository's own".into()
    };
    origins.push(Origin {
        key: "prepare",
        value: config.prepare.clone(),
        from,
    });

    // the gates' commands
    type Pick = fn(&Found) -> Option<String>;
    let gates: [(&'static str, Pick); 4] = [
        ("gates.test", |f| f.test.clone()),
        ("gates.lint", |f| f.lint.clone()),
        ("gates.typecheck", |f| f.typecheck.clone()),
        ("gates.build", |f| f.build.clone()),
    ];
    for (key, pick) in gates {
        let set = config.is_set(key);
        let slot = match key {
            "gates.test" => &mut config.gates.test,
            "gates.lint" => &mut config.gates.lint,
            "gates.typecheck" => &mut config.gates.typecheck,
            _ => &mut config.gates.build,
        };
        let gate = key.trim_start_matches("gates.");
        let from = if set {
            yaml_from()
        } else {
            let mut from = fill(slot, &found, pick, detected);
            let own = found
                .iter()
                .flat_map(|f| &f.sources)
                .filter(|(g, _)| g == gate);
            for (_, source) in own {
                from.push_str(&format!("; the command from {source}"));
            }
            from
        };
        if !set && slot.is_none() {
            let why = found
                .iter()
                .flat_map(|f| f.left_out.iter())
                .find(|(g, _)| g == gate);
            if let Some((g, why)) = why {
                config.gates.left_out.insert(g.clone(), why.clone());
            }
        }
        origins.push(Origin {
            key,
            value: slot.clone(),
            from,
        });
    }

    // the coverage command, when coverage is measured
    if config.acceptance.coverage.is_on() {
        let key = "acceptance.coverage.command";
        let slot = &mut config.acceptance.coverage.command;
        let from = if slot.is_some() {
            yaml_from()
        } else {
            fill(slot, &found, |f| f.coverage.clone(), detected)
        };
        origins.push(Origin {
            key,
            value: slot.clone(),
            from,
        });
    }

    // where tests live
    let from = if config.is_set("policy.test_paths") {
        yaml_from()
    } else if found.is_empty() {
        "default".into()
    } else {
        let mut paths: Vec<String> = Vec::new();
        for p in found.iter().flat_map(|f| f.test_paths.iter()) {
            if !paths.contains(p) {
                paths.push(p.clone());
            }
        }
        config.policy.test_paths = paths;
        detected(&found.iter().collect::<Vec<_>>())
    };
    origins.push(Origin {
        key: "policy.test_paths",
        value: Some(config.policy.test_paths.join(", ")),
        from,
    });

    let mut inputs: Vec<String> = Vec::new();
    for i in found.iter().flat_map(|f| f.inputs.iter()) {
        if !inputs.contains(i) {
            inputs.push(i.clone());
        }
    }
    if let Some(d) = &devcontainer {
        inputs.push(d.path.clone());
    }
    let mut env: Vec<(String, String)> = found.iter().flat_map(|f| f.env.clone()).collect();
    let mut path: Vec<String> = found.iter().flat_map(|f| f.path.clone()).collect();
    path.push(SYSTEM_PATH.into());
    env.push(("PATH".into(), path.join(":")));
    if let Some(d) = &devcontainer {
        env.extend(d.env.iter().cloned());
    }
    naming_tests(&mut env);
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

/// pytest names every test it ran, with its outcome, only in its `-rA` summary: whatever runs
/// it (a pinned `gates.test`, a Makefile, tox) prints that summary, so the gates can judge the
/// tests by name ([`crate::gates::results`]). Added to the options the environment already
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

/// Sets `slot` from the ecosystems that give a value (several are joined with `&&`); says where
/// it came from.
fn fill(
    slot: &mut Option<String>,
    found: &[Found],
    pick: impl Fn(&Found) -> Option<String>,
    detected: impl Fn(&[&Found]) -> String,
) -> String {
    let giving: Vec<(&Found, String)> = found.iter().filter_map(|f| Some((f, pick(f)?))).collect();
    if giving.is_empty() {
        return if slot.is_some() {
            "default"
        } else {
            "nothing detected gives one"
        }
        .into();
    }
    let commands: Vec<&str> = giving.iter().map(|(_, c)| c.as_str()).collect();
    *slot = Some(if commands.len() == 1 {
        commands[0].to_owned()
    } else {
        commands
            .iter()
            .map(|c| format!("({c})"))
            .collect::<Vec<_>>()
            .join(" && ")
    });
    detected(&giving.iter().map(|(f, _)| *f).collect::<Vec<_>>())
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
