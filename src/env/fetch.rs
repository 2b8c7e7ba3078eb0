//! Setting up dependency files a change edited without running the change's code on an open
//! network. Setup with network runs the repository's own setup only on the base's manifests
//! and lockfiles; a change to them (`changed_dependencies` in `.github/hive.yml`) is set up in
//! two phases by default ([`crate::config::repo::ChangedDependencies::Fetch`]): first a download that runs no project code,
//! with only the dependency files in the sandbox (not the source) — `cargo fetch`, `pip
//! download` of binary wheels only, `npm ci --ignore-scripts`, `go mod download` — and then
//! the ordinary setup command with no network, from what was downloaded. A setup the
//! repository or its devcontainer wrote by hand cannot be split: it runs without network.

use super::detect::{Ecosystem, Found, venv_with_pip};

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
    /// Requirements refused, each with where it is and why: the download does not run, and
    /// setup fails saying so.
    pub refused: Vec<String>,
}

/// Where `pip download` keeps the wheels for the build phase.
pub const WHEELS: &str = "/cache/wheels";
/// What makes git unusable to a package manager: no protocol allowed, and npm's git command
/// one that fails.
const NO_GIT: &str = "GIT_ALLOW_PROTOCOL=none npm_config_git=false";
/// The requirements the bot wrote for `pip download`.
const REQUIREMENTS: &str = ".vibeloop-fetch/requirements.txt";
/// The versions the project's constraints files pin, for `pip download -c`.
const CONSTRAINTS: &str = ".vibeloop-fetch/constraints.txt";

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
        refused: vec![],
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
                    .push((REQUIREMENTS.into(), wanted.specs.join("\n") + "\n"));
                let mut pinned = String::new();
                if !wanted.constraints.is_empty() {
                    let pins = wanted.constraints.join("\n") + "\n";
                    plan.files.push((CONSTRAINTS.into(), pins));
                    pinned = format!(" -c {CONSTRAINTS}");
                }
                plan.refused.extend(wanted.refused);
                commands.push(format!(
                    "{} && /tmp/fetch-venv/bin/pip download --quiet \
                     --disable-pip-version-check --only-binary :all: --dest {WHEELS} -r {REQUIREMENTS}{pinned}",
                    venv_with_pip("/tmp/fetch-venv", false)
                ));
                plan.env.push(("PIP_FIND_LINKS".into(), WHEELS.into()));
            }
            Ecosystem::Node => {
                plan.refused
                    .extend(super::node_deps::refused(&f.inputs, &text));
                let lock = |p: &str| text(p).is_some();
                // git unusable: npm prepares a git dependency by running its scripts.
                commands.push(format!(
                    "env {NO_GIT} {}",
                    if lock("pnpm-lock.yaml") {
                        "pnpm install --frozen-lockfile --ignore-scripts"
                    } else if lock("yarn.lock") {
                        "yarnpkg install --frozen-lockfile --ignore-scripts"
                    } else if lock("package-lock.json") {
                        "npm ci --ignore-scripts"
                    } else {
                        "npm install --ignore-scripts --no-package-lock"
                    }
                ));
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

/// What a Python project's dependency files ask the index for, and what was refused.
#[derive(Debug, Default, PartialEq)]
struct Wanted {
    /// Requirements as the PEP 508 parser wrote them back, sorted.
    specs: Vec<String>,
    /// "`\"pytest\\r--no-binary x\"` in pyproject.toml: it holds a control character…".
    refused: Vec<String>,
    /// Versions a constraints file (`-c pins.txt`) pins, as the parser wrote them back.
    constraints: Vec<String>,
}

impl Wanted {
    /// `specs` from `from` that must each be a requirement (the packaging standards' fields).
    fn strict(&mut self, from: &str, specs: Vec<String>) {
        for spec in specs {
            match super::requirement::from_index(&spec) {
                Ok(c) => self.specs.push(c),
                Err(why) => self.refuse(&spec, from, &why),
            }
        }
    }

    /// Lines of `from` as a requirements file has them: options, paths and substitutions are
    /// setup's, read offline from the worktree; the rest must be requirements.
    fn lines(&mut self, from: &str, lines: Vec<super::requirement::Line>) {
        let specs = self.read(from, lines);
        self.specs.extend(specs);
    }

    /// Lines of the constraints file `from`, read as [`Wanted::lines`] reads requirements.
    fn constraints(&mut self, from: &str, lines: Vec<super::requirement::Line>) {
        let pins = self.read(from, lines);
        self.constraints.extend(pins);
    }

    /// The requirements of `lines`; the refused ones are noted.
    fn read(&mut self, from: &str, lines: Vec<super::requirement::Line>) -> Vec<String> {
        use super::requirement::Line;
        let mut specs = Vec::new();
        for l in lines {
            match l {
                Line::Index(c) => specs.push(c),
                Line::Skipped => {}
                Line::Refused(text, why) => self.refuse(&text, from, &why),
            }
        }
        specs
    }

    fn refuse(&mut self, spec: &str, from: &str, why: &str) {
        let shown: String = format!("{spec:?}").chars().take(200).collect();
        self.refused.push(format!("`{shown}` in {from}: {why}"));
    }
}

/// What a Python project's dependency files ask for, as requirements pip reads from an index:
/// the project's dependencies, its test extras and dependency groups, its build system, the
/// test tools of Poetry, PDM, Hatch and tox, and every `requirements*.txt` — each parsed as PEP
/// 508 and written back from the parse, so no line is ever an option; a URL, a path or a string
/// that is not a requirement is refused with the reason (see [`Plan::refused`]). pytest, which
/// setup adds, comes too.
fn python_requirements(inputs: &[String], text: &dyn Fn(&str) -> Option<String>) -> Wanted {
    use super::requirement::{line, requirements_file};
    let mut wanted = Wanted {
        specs: vec!["pytest".into()],
        ..Wanted::default()
    };
    let pyproject = text("pyproject.toml").unwrap_or_default();
    let tox = super::pyproject::tox_config(text);
    let tox_extras = super::pyproject::tox_extras(&tox);
    if let Ok(py) = pyproject.parse::<toml::Table>() {
        let strings = |v: Option<&toml::Value>| -> Vec<String> {
            v.and_then(|v| v.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        };
        let tests = |t: Option<&toml::Value>| -> Vec<String> {
            t.and_then(|t| t.as_table())
                .into_iter()
                .flatten()
                .filter(|(name, _)| {
                    super::groups::TEST_GROUPS.contains(&name.as_str()) || tox_extras.contains(name)
                })
                .flat_map(|(_, list)| strings(Some(list)))
                .collect()
        };
        let project = py.get("project");
        let from = "pyproject.toml";
        wanted.strict(from, strings(project.and_then(|p| p.get("dependencies"))));
        wanted.strict(
            from,
            tests(project.and_then(|p| p.get("optional-dependencies"))),
        );
        // The groups setup installs, with the groups they include.
        let uv_lock = inputs.iter().any(|p| p == "uv.lock");
        for group in super::groups::installed(&py, uv_lock) {
            wanted.strict(from, super::groups::requirements(&py, &group));
        }
        wanted.strict(
            from,
            strings(py.get("build-system").and_then(|b| b.get("requires"))),
        );
    }
    for (source, specs) in super::pyproject::other_test_tools(&pyproject, &tox) {
        // Setup installs only their plain requirements and leaves the rest out (tox's factor
        // lines such as `tf: tensorflow`, URLs): the download takes the same.
        let plain = specs
            .iter()
            .filter(|s| super::pyproject::plain_requirement(s));
        wanted.lines(source, plain.map(|s| line(s)).collect());
    }
    // A build without a declared backend uses setuptools; hatchling's editable builds need
    // `editables` (what the backend asks for at setup, offline then).
    wanted
        .specs
        .extend(["setuptools", "wheel", "editables"].map(str::to_owned));
    if let Some(cfg) = text("setup.cfg") {
        let requires = super::pyproject::setup_cfg_requires(&cfg, &tox);
        wanted.lines("setup.cfg", requires.iter().map(|s| line(s)).collect());
    }
    if let Some(config) = text(".pre-commit-config.yaml") {
        let lines = super::precommit::installs(&config);
        wanted.lines(".pre-commit-config.yaml", lines);
    }
    // What tox's environments install for the lint and typecheck tools they run.
    let deps = ["ruff", "mypy", "flake8"].map(|t| super::precommit::tox_env_deps(&tox, t));
    wanted.lines("tox.ini", deps.iter().flatten().map(|d| line(d)).collect());
    // A file only ever included as constraints (`-c pins.txt`) pins versions, and the download
    // must honour the pins the offline setup will.
    let mut roots = super::pyproject::tox_requirement_files(&tox);
    roots.extend(
        inputs
            .iter()
            .filter(|p| super::includes::is_requirements_file(p))
            .cloned(),
    );
    let pins: Vec<String> = super::includes::closure(&roots, &mut |p| text(p))
        .into_iter()
        .filter(|(k, _)| *k == super::includes::Kind::Constraints)
        .map(|(_, p)| p)
        .collect();
    for r in inputs.iter().filter(|p| p.ends_with(".txt")) {
        let lines = requirements_file(&text(r).unwrap_or_default());
        if pins.contains(r) {
            wanted.constraints(r, lines);
        } else {
            wanted.lines(r, lines);
        }
    }
    wanted.specs.sort();
    wanted.specs.dedup();
    wanted.constraints.sort();
    wanted.constraints.dedup();
    wanted
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
    fn python_downloads_plain_requirements_only_and_says_what_it_refused() {
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
        let wanted = python_requirements(&paths, &text);
        assert_eq!(
            wanted.refused,
            [
                "`\"evil @ https://x.example/evil.tar.gz\"` in pyproject.toml: it names a URL: only packages from the configured index are downloaded",
                "`\"git+https://x.example/y.git\"` in requirements.txt: it is not a PEP 508 requirement (URL requirement must be preceded by a package name. Add the name of the package before the URL (e.g., `package_name @ https://...`).)",
            ]
        );
        assert_eq!(
            wanted.specs,
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

    /// A model-written `pyproject.toml` whose requirement strings carry a line break pip
    /// splits at (`\r`, `\x0c`, U+2028…) would put option lines in the download's
    /// requirements file — `--no-binary` overriding `--only-binary :all:`, so pip builds an
    /// sdist with the network open. Each is refused by name, and the file holds requirements
    /// only.
    #[test]
    fn requirement_strings_never_become_pip_options() {
        // As TOML writes them: `\\r`, `\\f`, `\\u2028` are escapes of the TOML string.
        let hostile = [
            r#""pytest\r--no-binary evilpkg""#,
            r#""attrs\f-r /etc/hostname""#,
            r#""six\u2028--find-links https://x.example/""#,
            r#""evilpkg; --trusted-host x.example""#,
        ];
        let pyproject = format!(
            "[project]\nname = \"p\"\ndependencies = [{}]\n",
            hostile.join(", ")
        );
        let files = [("pyproject.toml", pyproject.as_str())];
        let found = detect(&Tree::of(&files));
        let files = inputs(&files);
        let plan = plan(&found, &files).unwrap();
        let (_, requirements) = plan.files.iter().find(|(p, _)| p == REQUIREMENTS).unwrap();
        for l in requirements.split(|c: char| c.is_control() || c == '\u{2028}' || c == '\u{2029}')
        {
            assert!(
                l.is_empty() || l.chars().next().unwrap().is_ascii_alphanumeric(),
                "an option line {l:?} in:\n{requirements:?}"
            );
        }
        assert!(!requirements.contains("evilpkg") && !requirements.contains("x.example"));
        assert_eq!(plan.refused.len(), hostile.len(), "{:?}", plan.refused);
        assert!(
            plan.refused[0].contains("pytest\\r--no-binary evilpkg"),
            "{:?}",
            plan.refused
        );
        assert!(plan.refused[0].contains("U+000D"), "{:?}", plan.refused);
    }

    /// more-itertools' `requirements/development.txt` pulls in `typechecks.txt` (mypy) and
    /// `../docs/requirements.txt` with `-r`: the download follows them as pip will, and takes
    /// the versions a `-c` file pins.
    #[test]
    fn what_requirements_files_include_is_downloaded_with_their_pins() {
        let files = [
            ("pyproject.toml", "[project]\nname = \"p\"\n"),
            (
                "requirements/development.txt",
                "--requirement typechecks.txt\n-r ../docs/requirements.txt\n-c ../pins.txt\n",
            ),
            ("requirements/typechecks.txt", "mypy\n"),
            ("docs/requirements.txt", "Sphinx\n"),
            ("pins.txt", "mypy==1.18.2\n--hash=sha256:00\n"),
            ("docs/unrelated.txt", "evilpkg\n"),
        ];
        let found = detect(&Tree::of(&files));
        for included in [
            "requirements/typechecks.txt",
            "docs/requirements.txt",
            "pins.txt",
        ] {
            assert!(
                found[0].inputs.iter().any(|i| i == included),
                "{included} is not an input: {:?}",
                found[0].inputs
            );
        }
        let plan = plan(&found, &inputs(&files)).unwrap();
        let file = |name: &str| {
            plan.files
                .iter()
                .find(|(p, _)| p == name)
                .unwrap()
                .1
                .clone()
        };
        let requirements = file(REQUIREMENTS);
        for spec in ["mypy\n", "sphinx\n"] {
            assert!(requirements.contains(spec), "{spec:?} in {requirements:?}");
        }
        assert!(!requirements.contains("evilpkg"), "{requirements:?}");
        assert!(!requirements.contains("1.18.2"), "{requirements:?}");
        assert_eq!(file(CONSTRAINTS), "mypy==1.18.2\n");
        assert!(
            plan.command
                .ends_with(&format!("-r {REQUIREMENTS} -c {CONSTRAINTS}")),
            "{}",
            plan.command
        );
    }

    /// Debian's npm runs a git dependency's `prepare` script even under `--ignore-scripts`:
    /// a change that adds one is refused before the download runs, and git is unusable there.
    #[test]
    fn a_git_dependency_never_reaches_the_download() {
        let package =
            r#"{"name": "app", "devDependencies": {"evil": "git+https://x.example/evil.git"}}"#;
        let lock = r#"{"lockfileVersion": 3, "packages": {"": {"name": "app"}, "node_modules/evil": {"version": "1.0.0", "resolved": "git+https://x.example/evil.git#0123", "integrity": "sha512-x"}}}"#;
        let files = [("package.json", package), ("package-lock.json", lock)];
        let plan = plan(&detect(&Tree::of(&files)), &inputs(&files)).unwrap();
        assert_eq!(
            plan.refused,
            [
                "`evil` in package.json: a git dependency (`git+https://x.example/evil.git`)",
                "`node_modules/evil` in package-lock.json: not a registry package (`git+https://x.example/evil.git#0123`)",
            ]
        );
        assert!(
            plan.command
                .starts_with("env GIT_ALLOW_PROTOCOL=none npm_config_git=false npm ci")
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
            format!(
                "cargo fetch && {} && /tmp/fetch-venv/bin/pip download --quiet \
                 --disable-pip-version-check --only-binary :all: --dest /cache/wheels -r .vibeloop-fetch/requirements.txt \
                 && env GIT_ALLOW_PROTOCOL=none npm_config_git=false npm ci --ignore-scripts && go mod download",
                venv_with_pip("/tmp/fetch-venv", false)
            )
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
