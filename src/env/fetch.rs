//! Setting up dependency files a change edited without running the change's code on an open
//! network. Setup with network runs the repository's own setup only on the base's manifests
//! and lockfiles; a change to them (`changed_dependencies` in `.github/hive.yml`) is set up in
//! two phases by default ([`crate::config::repo::ChangedDependencies::Fetch`]): first a download that runs no project code,
//! with only the dependency files in the sandbox (not the source) — `cargo fetch`, `pip
//! download` of binary wheels only, `npm ci --ignore-scripts`, `go mod download` — and then
//! the ordinary setup command with no network, from what was downloaded. A setup the
//! repository or its devcontainer wrote by hand cannot be split: it runs without network.

use super::detect::{Ecosystem, Found};

/// The download phase for one worktree's dependency files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Runs in the sandbox's `/work`, which holds the dependency files and [`Plan::files`].
    pub command: String,
    /// Files the bot writes beside the dependency files: empty targets a manifest needs to be
    /// read (`src/lib.rs`), the requirements to download.
    pub files: Vec<(String, String)>,
    /// What the build phase needs to find the downloads (`PIP_FIND_LINKS`).
    pub env: Vec<(String, String)>,
}

/// Where `pip download` keeps the wheels for the build phase.
pub const WHEELS: &str = "/cache/wheels";
/// The requirements the bot wrote for `pip download`.
const REQUIREMENTS: &str = ".vibeloop-fetch/requirements.txt";

/// The download phase for the ecosystems `found`, given the worktree's dependency files
/// (`inputs`, with their content); `None` when no ecosystem has one.
pub fn plan(found: &[Found], inputs: &[(String, Option<Vec<u8>>)]) -> Option<Plan> {
    let text = |p: &str| {
        inputs
            .iter()
            .find(|(path, _)| path == p)
            .and_then(|(_, c)| c.as_ref())
            .map(|c| String::from_utf8_lossy(c).into_owned())
    };
    let mut plan = Plan {
        command: String::new(),
        files: vec![],
        env: vec![],
    };
    let mut commands = Vec::new();
    for f in found {
        match f.ecosystem {
            Ecosystem::Rust => {
                // cargo reads a package's targets: empty ones stand in for the source.
                for (path, _) in inputs
                    .iter()
                    .filter(|(p, c)| p.ends_with("Cargo.toml") && c.is_some())
                {
                    let dir = path.trim_end_matches("Cargo.toml");
                    let manifest = text(path).unwrap_or_default();
                    for stub in cargo_targets(&manifest) {
                        plan.files.push((format!("{dir}{stub}"), String::new()));
                    }
                }
                commands.push("cargo fetch".to_owned());
            }
            Ecosystem::Python => {
                let wanted = python_requirements(&f.inputs, &text);
                plan.files
                    .push((REQUIREMENTS.into(), wanted.join("\n") + "\n"));
                commands.push(format!(
                    "python3 -m venv /tmp/fetch-venv && /tmp/fetch-venv/bin/pip download --quiet \
                     --disable-pip-version-check --only-binary :all: --dest {WHEELS} -r {REQUIREMENTS}"
                ));
                plan.env.push(("PIP_FIND_LINKS".into(), WHEELS.into()));
            }
            Ecosystem::Node => {
                let lock = |p: &str| text(p).is_some();
                commands.push(
                    if lock("pnpm-lock.yaml") {
                        "pnpm install --frozen-lockfile --ignore-scripts"
                    } else if lock("yarn.lock") {
                        "yarnpkg install --frozen-lockfile --ignore-scripts"
                    } else if lock("package-lock.json") {
                        "npm ci --ignore-scripts"
                    } else {
                        "npm install --ignore-scripts --no-package-lock"
                    }
                    .to_owned(),
                );
            }
            Ecosystem::Go => commands.push("go mod download".to_owned()),
        }
    }
    if commands.is_empty() {
        return None;
    }
    plan.command = commands.join(" && ");
    Some(plan)
}

/// Every file cargo looks for when it reads `manifest` (a `Cargo.toml`), relative to its
/// directory, as cargo-chef's recipe stubs them: `src/lib.rs` and `src/main.rs`, each target a
/// table names (`[lib]`, `[[bin]]`, `[[example]]`, `[[test]]`, `[[bench]]`: its `path`, else
/// where cargo infers it from the name), and the build script (`build = "…"`, or `build.rs`
/// where the package `links` a native library). Never a path outside the package.
fn cargo_targets(manifest: &str) -> Vec<String> {
    let mut files = vec!["src/lib.rs".to_owned(), "src/main.rs".to_owned()];
    let Ok(toml) = manifest.parse::<toml::Table>() else {
        return files;
    };
    let path_of = |t: &toml::Value| t.get("path").and_then(|p| p.as_str()).map(str::to_owned);
    if let Some(p) = toml.get("lib").and_then(path_of) {
        files.push(p);
    }
    for (kind, dir) in [
        ("bin", "src/bin"),
        ("example", "examples"),
        ("test", "tests"),
        ("bench", "benches"),
    ] {
        let targets = toml.get(kind).and_then(|t| t.as_array());
        for t in targets.into_iter().flatten() {
            let inferred = t
                .get("name")
                .and_then(|n| n.as_str())
                .map(|n| format!("{dir}/{n}.rs"));
            files.extend(path_of(t).or(inferred));
        }
    }
    let package = toml.get("package");
    match package.and_then(|p| p.get("build")) {
        Some(toml::Value::String(p)) => files.push(p.clone()),
        Some(toml::Value::Boolean(true)) => files.push("build.rs".into()),
        Some(_) => {}
        None if package.is_some_and(|p| p.get("links").is_some()) => {
            files.push("build.rs".into());
        }
        None => {}
    }
    files.retain(|f| {
        let p = std::path::Path::new(f);
        !f.is_empty()
            && p.components().all(|c| {
                matches!(
                    c,
                    std::path::Component::Normal(_) | std::path::Component::CurDir
                )
            })
    });
    files.sort();
    files.dedup();
    files
}

/// What a Python project's dependency files ask for, as plain requirement specifiers: the
/// project's dependencies, its test extras and dependency groups, its build system, and every
/// `requirements*.txt` — never a local path, an editable install or a URL (each would build
/// code with the network open), and pytest, which setup adds.
fn python_requirements(inputs: &[String], text: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    let mut wanted: Vec<String> = vec!["pytest".into()];
    if let Some(py) = text("pyproject.toml").and_then(|t| t.parse::<toml::Table>().ok()) {
        let strings = |v: Option<&toml::Value>| -> Vec<String> {
            v.and_then(|v| v.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        };
        let project = py.get("project");
        wanted.extend(strings(project.and_then(|p| p.get("dependencies"))));
        if let Some(extras) = project
            .and_then(|p| p.get("optional-dependencies"))
            .and_then(|e| e.as_table())
        {
            for (name, list) in extras {
                if super::pyproject::TEST_GROUPS.contains(&name.as_str()) {
                    wanted.extend(strings(Some(list)));
                }
            }
        }
        if let Some(groups) = py.get("dependency-groups").and_then(|g| g.as_table()) {
            for (name, list) in groups {
                if super::pyproject::TEST_GROUPS.contains(&name.as_str()) {
                    wanted.extend(strings(Some(list)));
                }
            }
        }
        let build = strings(py.get("build-system").and_then(|b| b.get("requires")));
        wanted.extend(build);
    }
    let tox = text("tox.ini").unwrap_or_default();
    let pyproject = text("pyproject.toml").unwrap_or_default();
    for (_, specs) in super::pyproject::other_test_tools(&pyproject, &tox) {
        wanted.extend(specs);
    }
    // A build without a declared backend uses setuptools; hatchling's editable builds need
    // `editables` (what the backend asks for at setup, offline then).
    wanted.extend(["setuptools", "wheel", "editables"].map(str::to_owned));
    if let Some(cfg) = text("setup.cfg") {
        wanted.extend(super::pyproject::setup_cfg_requires(&cfg));
    }
    if let Some(config) = text(".pre-commit-config.yaml") {
        wanted.extend(
            super::pyproject::precommit_pins(&config)
                .into_iter()
                .map(|(_, spec)| spec),
        );
    }
    for r in inputs.iter().filter(|p| p.ends_with(".txt")) {
        wanted.extend(
            text(r)
                .iter()
                .flat_map(|t| t.lines())
                .filter_map(requirement),
        );
    }
    wanted.retain(|w| super::pyproject::plain_requirement(w));
    wanted.sort();
    wanted.dedup();
    wanted
}

/// A requirements file's line as a requirement, or `None` for options, includes and comments.
fn requirement(line: &str) -> Option<String> {
    let line = line.split(" #").next().unwrap_or(line).trim();
    (!line.is_empty() && !line.starts_with('#') && !line.starts_with('-')).then(|| line.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::detect::detect;
    use crate::env::tree::Tree;

    fn inputs(files: &[(&str, &str)]) -> Vec<(String, Option<Vec<u8>>)> {
        files
            .iter()
            .map(|(p, t)| ((*p).to_owned(), Some(t.as_bytes().to_vec())))
            .collect()
    }

    #[test]
    fn python_downloads_plain_requirements_only() {
        let pyproject = "[build-system]\nrequires = [\"hatchling\"]\n\n[project]\nname = \"p\"\ndependencies = [\"wcwidth>=0.2\", \"evil @ https://x.example/evil.tar.gz\"]\n\n[project.optional-dependencies]\ntests = [\"hypothesis\"]\ndocs = [\"sphinx\"]\n\n[dependency-groups]\ndev = [\"ruff\"]\n";
        let reqs = "requests==2.32.3\n-e .\n./local-pkg\n-r other.txt\ngit+https://x.example/y.git\nflask # web\n";
        let files = [("pyproject.toml", pyproject), ("requirements.txt", reqs)];
        let text = |p: &str| {
            files
                .iter()
                .find(|(f, _)| *f == p)
                .map(|(_, t)| (*t).to_owned())
        };
        let paths: Vec<String> = files.iter().map(|(p, _)| (*p).to_owned()).collect();
        assert_eq!(
            python_requirements(&paths, &text),
            [
                "editables",
                "flask",
                "hatchling",
                "hypothesis",
                "pytest",
                "requests==2.32.3",
                "ruff",
                "setuptools",
                "wcwidth>=0.2",
                "wheel"
            ]
        );
    }

    #[test]
    fn every_target_a_cargo_manifest_names_is_stubbed_inside_the_package() {
        let manifest = r#"
[package]
name = "tool"
build = "tools/build.rs"
links = "z"

[lib]
path = "lib/tool.rs"

[[bin]]
name = "tool-cli"

[[bin]]
name = "other"
path = "cli/other/main.rs"

[[example]]
name = "demo"

[[test]]
name = "integration"
harness = false

[[bench]]
name = "bench"
harness = false

[[bench]]
name = "escape"
path = "../../outside.rs"
"#;
        assert_eq!(
            cargo_targets(manifest),
            [
                "benches/bench.rs",
                "cli/other/main.rs",
                "examples/demo.rs",
                "lib/tool.rs",
                "src/bin/tool-cli.rs",
                "src/lib.rs",
                "src/main.rs",
                "tests/integration.rs",
                "tools/build.rs",
            ]
        );
        let links = "[package]\nname = \"sys\"\nlinks = \"foo\"\n";
        assert!(cargo_targets(links).contains(&"build.rs".to_owned()));
        let no_build = "[package]\nname = \"n\"\nbuild = false\nlinks = \"foo\"\n";
        assert!(!cargo_targets(no_build).contains(&"build.rs".to_owned()));
        assert_eq!(cargo_targets("not toml ["), ["src/lib.rs", "src/main.rs"]);
    }

    #[test]
    fn each_ecosystem_downloads_without_running_project_code() {
        let files = [
            ("Cargo.toml", "[package]\nname = \"c\"\n"),
            ("crates/inner/Cargo.toml", "[package]\nname = \"i\"\n"),
            ("package.json", "{}"),
            ("package-lock.json", "{}"),
            ("go.mod", "module x\n"),
            (
                "pyproject.toml",
                "[project]\nname = \"p\"\ndependencies = [\"rich\"]\n",
            ),
        ];
        let found = detect(&Tree::of(&files));
        let plan = plan(&found, &inputs(&files)).unwrap();
        assert_eq!(
            plan.command,
            "cargo fetch && python3 -m venv /tmp/fetch-venv && /tmp/fetch-venv/bin/pip download --quiet \
             --disable-pip-version-check --only-binary :all: --dest /cache/wheels -r .vibeloop-fetch/requirements.txt \
             && npm ci --ignore-scripts && go mod download"
        );
        assert!(
            plan.files
                .contains(&("crates/inner/src/lib.rs".into(), String::new()))
        );
        assert!(plan.files.contains(&("src/lib.rs".into(), String::new())));
        let reqs = &plan
            .files
            .iter()
            .find(|(p, _)| p == REQUIREMENTS)
            .unwrap()
            .1;
        assert!(reqs.contains("rich\n"), "{reqs}");
        assert_eq!(plan.env, [("PIP_FIND_LINKS".to_owned(), WHEELS.to_owned())]);
    }
}
