//! Which ecosystems a repository is, read from the files of its base branch — Rust
//! (`Cargo.toml`, workspaces too), Python (`pyproject.toml`, `setup.cfg`/`setup.py`,
//! `requirements*.txt`, `tox.ini`), Node and TypeScript (`package.json`, its lockfile: npm, pnpm
//! or yarn), Go (`go.mod`) — and what each gives by default: the setup command, the gates, the
//! runner image, the test paths and the test output's format. Every default says why, so
//! `vibeloop gates --explain` can show it and a person can pin it.

use serde::Serialize;

use crate::sandbox::CACHE_MOUNT as CACHE;

mod python;
use python::python;
pub use python::venv_with_pip;

/// What the detector may read of the base branch.
pub trait Files {
    /// Every file path, relative and `/`-separated.
    fn paths(&self) -> &[String];
    /// A file's text, when it is one.
    fn read(&self, path: &str) -> Option<String>;
}

/// The ecosystems Vibeloop knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Ecosystem {
    Rust,
    Python,
    Node,
    Go,
}

impl Ecosystem {
    pub fn as_str(self) -> &'static str {
        match self {
            Ecosystem::Rust => "rust",
            Ecosystem::Python => "python",
            Ecosystem::Node => "node",
            Ecosystem::Go => "go",
        }
    }

    /// The runner image with this ecosystem's toolchain (`docker/build-runner-image.sh`).
    pub fn image(self) -> String {
        format!("vibeloop-runner:{}", self.as_str())
    }
}

/// The format a test command prints, for counting tests and reading failures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TestFormat {
    Libtest,
    Pytest,
    GoTest,
    NodeTest,
    Jest,
    Vitest,
}

/// One ecosystem found, with its defaults and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Found {
    pub ecosystem: Ecosystem,
    /// The file that says so (`Cargo.toml`, `pyproject.toml`…).
    pub manifest: String,
    /// What the defaults are based on, for people.
    pub why: String,
    pub setup: Option<String>,
    pub test: Option<String>,
    pub lint: Option<String>,
    pub typecheck: Option<String>,
    pub build: Option<String>,
    /// Runs the tests under a coverage tool, for `acceptance.coverage` (`super::coverage`).
    pub coverage: Option<String>,
    /// What setup adds when coverage is measured (coverage.py in Python's environment).
    pub coverage_setup: Option<String>,
    /// Builds the project in a sandbox's own worktree, offline (`HiveConfig::prepare`).
    pub prepare: Option<String>,
    pub test_paths: Vec<String>,
    pub format: TestFormat,
    /// Files whose content decides what setup installs (manifests and lockfiles): the
    /// environment is set up again only when one of them changes.
    pub inputs: Vec<String>,
    /// Where the ecosystem's tools keep what setup installs and builds (in the environment's
    /// cache), and the directories to put first on `PATH`.
    pub env: Vec<(String, String)>,
    pub path: Vec<String>,
    /// Directories setup makes in the worktree that belong to the environment
    /// (`node_modules`): kept in its cache, and linked into every worktree.
    pub links: Vec<String>,
    /// Gates the project's files point at but that cannot run here, each with why and the
    /// setting that enables it (`lint`: "the project configures ruff but neither depends on it nor pins it…").
    pub left_out: Vec<(String, String)>,
    /// Gates whose command the project's own configuration gave (`typecheck`:
    /// ".pre-commit-config.yaml's mypy hook"), for `--explain`.
    pub sources: Vec<(String, String)>,
}

/// Every ecosystem found at the repository's root, in a stable order (Rust, Python, Node, Go).
pub fn detect(files: &dyn Files) -> Vec<Found> {
    let mut found = Vec::new();
    let has = |p: &str| files.paths().iter().any(|f| f == p);
    if has("Cargo.toml") {
        found.push(rust(files));
    }
    if let Some(p) = python(files) {
        found.push(p);
    }
    if has("package.json") {
        found.push(node(files));
    }
    if has("go.mod") {
        found.push(go(files));
    }
    found
}

fn present(files: &dyn Files, candidates: &[&str]) -> Vec<String> {
    candidates
        .iter()
        .filter(|c| files.paths().iter().any(|p| p == *c))
        .map(|c| (*c).to_owned())
        .collect()
}

fn rust(files: &dyn Files) -> Found {
    let manifest = files.read("Cargo.toml").unwrap_or_default();
    // Read as TOML: `[workspace]`, `workspace.members = […]` and a commented header alike.
    let workspace = manifest
        .parse::<toml::Table>()
        .is_ok_and(|t| t.contains_key("workspace"));
    let all = if workspace { " --workspace" } else { "" };
    let mut inputs: Vec<String> = files
        .paths()
        .iter()
        .filter(|p| p.ends_with("Cargo.toml"))
        .cloned()
        .collect();
    inputs.extend(present(files, &["Cargo.lock", "rust-toolchain.toml"]));
    let lock = if inputs.iter().any(|p| p == "Cargo.lock") {
        "with its Cargo.lock"
    } else {
        "without a Cargo.lock (dependencies resolved at setup)"
    };
    Found {
        ecosystem: Ecosystem::Rust,
        manifest: "Cargo.toml".into(),
        why: format!(
            "Cargo.toml{} {lock}",
            if workspace { " (a workspace)" } else { "" }
        ),
        setup: Some(format!("cargo fetch && cargo build --tests --offline{all}")),
        // Every test target runs even when one fails: each one's tests are judged by name.
        test: Some(format!("cargo test --offline --no-fail-fast{all}")),
        lint: Some(format!(
            "cargo clippy --all-targets --offline{all} -- -D warnings"
        )),
        typecheck: None,
        build: Some(format!("cargo build --offline{all}")),
        coverage: Some(super::coverage::rust(all)),
        coverage_setup: None,
        prepare: None,
        test_paths: vec!["tests/".into(), "**/tests/".into()],
        format: TestFormat::Libtest,
        inputs,
        env: vars(&[
            ("CARGO_HOME", format!("{CACHE}/cargo")),
            ("CARGO_TARGET_DIR", format!("{CACHE}/target")),
            ("CARGO_TERM_COLOR", "never".into()),
            // Without a lockfile, dependencies resolve to versions the image's Rust can build
            // (cargo's MSRV-aware resolver), not to the newest.
            (
                "CARGO_RESOLVER_INCOMPATIBLE_RUST_VERSIONS",
                "fallback".into(),
            ),
        ]),
        path: vec![format!("{CACHE}/cargo/bin")],
        links: vec![],
        left_out: vec![],
        sources: vec![],
    }
}

fn node(files: &dyn Files) -> Found {
    let manifest = files.read("package.json").unwrap_or_default();
    let pkg: serde_json::Value = serde_json::from_str(&manifest).unwrap_or_default();
    let script = |name: &str| pkg["scripts"][name].as_str().map(str::to_owned);
    let dev = |name: &str| {
        pkg["devDependencies"].get(name).is_some() || pkg["dependencies"].get(name).is_some()
    };
    let locks = present(files, &["package-lock.json", "pnpm-lock.yaml", "yarn.lock"]);
    let (install, run, tool) = match locks.first().map(String::as_str) {
        Some("pnpm-lock.yaml") => ("pnpm install --frozen-lockfile", "pnpm run", "pnpm"),
        Some("yarn.lock") => ("yarnpkg install --frozen-lockfile", "yarnpkg run", "yarn"),
        Some(_) => ("npm ci", "npm run", "npm"),
        None => ("npm install --no-package-lock", "npm run", "npm"),
    };
    let test_script = script("test").unwrap_or_default();
    let format = if test_script.contains("vitest") || dev("vitest") {
        TestFormat::Vitest
    } else if test_script.contains("jest") || dev("jest") {
        TestFormat::Jest
    } else {
        TestFormat::NodeTest
    };
    let typecheck = match script("typecheck") {
        Some(_) => Some(format!("{run} typecheck")),
        None if files.paths().iter().any(|p| p == "tsconfig.json") && dev("typescript") => {
            Some("npx tsc --noEmit".to_owned())
        }
        None => None,
    };
    let mut inputs = vec!["package.json".to_owned()];
    inputs.extend(locks.iter().cloned());
    Found {
        ecosystem: Ecosystem::Node,
        manifest: "package.json".into(),
        why: format!(
            "package.json{}: {tool}, and the scripts it has",
            locks
                .first()
                .map(|l| format!(" with {l}"))
                .unwrap_or_default()
        ),
        setup: Some(install.to_owned()),
        test: script("test").map(|_| format!("{run} test")),
        lint: script("lint").map(|_| format!("{run} lint")),
        typecheck,
        build: script("build").map(|_| format!("{run} build")),
        coverage: super::coverage::node(
            script("test").map(|_| format!("{run} test")).as_deref(),
            dev,
        ),
        coverage_setup: None,
        prepare: None,
        test_paths: vec![
            "test/".into(),
            "tests/".into(),
            "**/__tests__/".into(),
            "**/*.test.*".into(),
            "**/*.spec.*".into(),
        ],
        format,
        inputs,
        env: vars(&[
            ("npm_config_cache", format!("{CACHE}/npm")),
            ("npm_config_update_notifier", "false".into()),
            ("npm_config_fund", "false".into()),
            ("npm_config_audit", "false".into()),
        ]),
        path: vec![],
        links: vec!["node_modules".into()],
        left_out: vec![],
        sources: vec![],
    }
}

/// Go's setup: only `go mod download` may fail it.
pub const GO_SETUP: &str =
    "go mod download && { go test -exec /bin/true ./... >/dev/null 2>&1 || true; }";

fn go(files: &dyn Files) -> Found {
    let mut inputs = vec!["go.mod".to_owned()];
    inputs.extend(present(files, &["go.sum", "go.work", "go.work.sum"]));
    Found {
        ecosystem: Ecosystem::Go,
        manifest: "go.mod".into(),
        why: format!(
            "go.mod{}",
            if inputs.len() > 1 { " with go.sum" } else { "" }
        ),
        // Downloads, then compiles the packages and their tests once (running none) to warm
        // the build cache; a package that does not build is the gates' to say, and vet's
        // findings the lint gate's.
        setup: Some(GO_SETUP.into()),
        test: Some("go test -v ./...".into()),
        lint: Some("go vet ./...".into()),
        typecheck: None,
        build: Some("go build ./...".into()),
        coverage: Some(super::coverage::go()),
        coverage_setup: None,
        prepare: None,
        test_paths: vec!["**/*_test.go".into()],
        format: TestFormat::GoTest,
        inputs,
        env: vars(&[
            ("GOPATH", format!("{CACHE}/go")),
            ("GOMODCACHE", format!("{CACHE}/go/pkg/mod")),
            ("GOCACHE", format!("{CACHE}/go-build")),
            // Never download a newer toolchain than the image's: say so instead.
            ("GOTOOLCHAIN", "local".into()),
        ]),
        path: vec![format!("{CACHE}/go/bin")],
        links: vec![],
        left_out: vec![],
        sources: vec![],
    }
}

fn vars(pairs: &[(&str, String)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::tree::Tree;

    #[test]
    fn a_rust_workspace_tests_every_member_offline() {
        let t = Tree::of(&[
            // Dotted keys, not a `[workspace]` header: the same table.
            ("Cargo.toml", "workspace.members = [\"a\"] # the crates\n"),
            ("a/Cargo.toml", "[package]\nname = \"a\"\n"),
            ("Cargo.lock", ""),
        ]);
        let f = &detect(&t)[0];
        assert_eq!(f.ecosystem, Ecosystem::Rust);
        assert_eq!(
            f.test.as_deref(),
            Some("cargo test --offline --no-fail-fast --workspace")
        );
        assert!(
            f.why.contains("a workspace") && f.why.contains("Cargo.lock"),
            "{}",
            f.why
        );
        assert_eq!(f.inputs, ["Cargo.toml", "a/Cargo.toml", "Cargo.lock"]);
    }

    #[test]
    fn a_python_package_installs_its_test_extra() {
        let t = Tree::of(&[(
            "pyproject.toml",
            "[project]\nname = \"x\"\ndependencies = [\"wcwidth\"]\n\n[project.optional-dependencies]\ntests = [\"pytest\", \"ruff>=0.4\"]\n\n[tool.ruff]\n\n[tool.mypy]\n",
        )]);
        let f = &detect(&t)[0];
        assert_eq!(f.ecosystem, Ecosystem::Python);
        let setup = f.setup.as_deref().unwrap();
        assert!(setup.contains("-e '.[tests]'"), "{setup}");
        assert_eq!(f.lint.as_deref(), Some("ruff check ."));
        assert!(f.why.contains("tests extra"), "{}", f.why);
        // mypy is configured but nothing installs it: no gate, and why.
        assert_eq!(f.typecheck, None);
        assert_eq!(f.left_out.len(), 1);
        assert_eq!(f.left_out[0].0, "typecheck");
        assert!(
            f.left_out[0]
                .1
                .contains("configures mypy but neither depends on it nor pins it"),
            "{:?}",
            f.left_out
        );
        // A tool pinned only by pre-commit is installed at that version, and its gate runs.
        let t = Tree::of(&[
            ("pyproject.toml", "[project]\nname = \"x\"\n\n[tool.mypy]\n"),
            (
                ".pre-commit-config.yaml",
                "repos:\n- repo: https://github.com/pre-commit/mirrors-mypy\n  rev: v1.10.0\n  hooks:\n  - id: mypy\n",
            ),
        ]);
        let f = &detect(&t)[0];
        // …and run as its hook runs it, on the files the hook would get.
        let typecheck = f.typecheck.as_deref().unwrap();
        assert!(
            typecheck.starts_with("'python3' '-c' ") && typecheck.ends_with("'' '' '' 'mypy'"),
            "{typecheck}"
        );
        assert_eq!(f.sources[0].1, ".pre-commit-config.yaml's mypy hook");
        assert!(
            f.setup.as_deref().unwrap().contains("'mypy==1.10.0'"),
            "{:?}",
            f.setup
        );
        assert!(f.left_out.is_empty(), "{:?}", f.left_out);
        // A tool configured by dotted keys is configured.
        let t = Tree::of(&[(
            "pyproject.toml",
            "tool.ruff.line-length = 88\n\n[project]\nname = \"x\"\noptional-dependencies.test = [\"ruff\"]\n",
        )]);
        assert_eq!(detect(&t)[0].lint.as_deref(), Some("ruff check ."));
        // Extras as dotted keys, and PEP 735 dependency groups.
        let t = Tree::of(&[(
            "pyproject.toml",
            "[project]\nname = \"x\"\noptional-dependencies.testing = [\"pytest\"]\n\n[dependency-groups]\ntest = [\"hypothesis\"]\ndocs = [\"sphinx\"]\n",
        )]);
        let setup = detect(&t)[0].setup.clone().unwrap();
        assert!(setup.contains("-e '.[testing]'"), "{setup}");
        assert!(setup.contains("--group test"), "{setup}");
        assert!(!setup.contains("docs"), "{setup}");
        // Requirements files alone are Python too.
        let t = Tree::of(&[("requirements-dev.txt", "pytest\n"), ("app.py", "")]);
        let f = &detect(&t)[0];
        assert!(
            f.setup
                .as_deref()
                .unwrap()
                .contains("-r 'requirements-dev.txt'")
        );
    }

    #[test]
    fn test_tools_named_by_poetry_tox_or_a_requirements_folder_are_installed() {
        // Poetry's groups: pytest-mock and the configured ruff are installed, at the versions
        // the group allows.
        let poetry = "[tool.poetry]\nname = \"x\"\n\n[tool.poetry.group.dev.dependencies]\npytest-mock = \"^3.11\"\nruff = \"^0.4\"\n\n[build-system]\nrequires = [\"poetry-core\"]\nbuild-backend = \"poetry.core.masonry.api\"\n\n[tool.ruff]\n";
        let f = &detect(&Tree::of(&[("pyproject.toml", poetry)]))[0];
        let setup = f.setup.as_deref().unwrap();
        assert!(
            setup.contains("pip install --quiet 'pytest-mock>=3.11,<4' 'ruff>=0.4,<0.5'"),
            "{setup}"
        );
        assert!(f.why.contains("Poetry's dev dependencies"), "{}", f.why);
        assert_eq!(f.lint.as_deref(), Some("ruff check ."));
        // tox's deps, an option among them left out.
        let tox = "[testenv]\ndeps =\n    pytest\n    wcag-contrast-ratio\n    --index-url=https://x.example\n";
        let t = Tree::of(&[
            ("pyproject.toml", "[project]\nname = \"x\"\n"),
            ("tox.ini", tox),
        ]);
        let setup = detect(&t)[0].setup.clone().unwrap();
        assert!(setup.contains("'pytest' 'wcag-contrast-ratio'"), "{setup}");
        assert!(!setup.contains("index-url"), "{setup}");
        // A test extra names the tools: tox's are not added.
        let t = Tree::of(&[
            (
                "pyproject.toml",
                "[project]\nname = \"x\"\noptional-dependencies.test = [\"pytest\"]\n",
            ),
            ("tox.ini", tox),
        ]);
        assert!(!detect(&t)[0].setup.clone().unwrap().contains("wcag"));
        // requirements/test.txt is read; requirements/docs.txt is not.
        let t = Tree::of(&[
            ("requirements/test.txt", "pytest\n"),
            ("requirements/docs.txt", "sphinx\n"),
            ("setup.py", ""),
        ]);
        let setup = detect(&t)[0].setup.clone().unwrap();
        assert!(setup.contains("-r 'requirements/test.txt'"), "{setup}");
        assert!(!setup.contains("docs.txt"), "{setup}");
    }

    /// urllib3 1.26 and many others keep their test tools in `dev-requirements.txt` or
    /// `test-requirements.txt` at the root: installed, and inputs.
    #[test]
    fn dev_and_test_requirements_files_at_the_root_are_installed() {
        for name in ["dev-requirements.txt", "test-requirements.txt"] {
            let t = Tree::of(&[
                (
                    "setup.py",
                    "from setuptools import setup\nsetup(name='x')\n",
                ),
                (name, "pytest-timeout\n"),
            ]);
            let f = &detect(&t)[0];
            let setup = f.setup.as_deref().unwrap();
            assert!(
                setup.contains(&format!("pip install --quiet -r '{name}'")),
                "{setup}"
            );
            assert!(f.inputs.iter().any(|i| i == name), "{:?}", f.inputs);
        }
    }

    /// tablib's shape: `tox.ini` installs the test tools from `tests/requirements.txt`
    /// (`deps = -rtests/requirements.txt`), pytest-cov among them, which `--cov` in its pytest
    /// options needs.
    #[test]
    fn a_requirements_file_tox_installs_is_installed_and_an_input() {
        let tox = "[testenv]\ndeps =\n    -rtests/requirements.txt\n    -r{toxinidir}/ci/test-requirements.txt\n    -c ../pins.txt\ncommands = pytest {posargs:tests}\n";
        let t = Tree::of(&[
            ("pyproject.toml", "[project]\nname = \"x\"\n"),
            ("tox.ini", tox),
            (
                "tests/requirements.txt",
                "pytest-cov\n-r ../docs/requirements.txt\n",
            ),
            ("docs/requirements.txt", "sphinx\n"),
            ("ci/test-requirements.txt", "pytest-timeout\n"),
        ]);
        let f = &detect(&t)[0];
        let setup = f.setup.as_deref().unwrap();
        assert!(
            setup.contains("pip install --quiet -r 'tests/requirements.txt'"),
            "{setup}"
        );
        assert!(
            f.why
                .contains("tests/requirements.txt, ci/test-requirements.txt as tox's deps name"),
            "{}",
            f.why
        );
        assert!(
            setup.contains("pip install --quiet -r 'ci/test-requirements.txt'"),
            "{setup}"
        );
        for input in ["tox.ini", "tests/requirements.txt", "docs/requirements.txt"] {
            assert!(
                f.inputs.iter().any(|i| i == input),
                "{input}: {:?}",
                f.inputs
            );
        }
        // Not where a test extra names the tools, as with tox's other deps.
        let t = Tree::of(&[
            (
                "pyproject.toml",
                "[project]\nname = \"x\"\noptional-dependencies.test = [\"pytest\"]\n",
            ),
            ("tox.ini", tox),
            ("tests/requirements.txt", "pytest-cov\n"),
        ]);
        assert!(
            !detect(&t)[0]
                .setup
                .clone()
                .unwrap()
                .contains("tests/requirements.txt")
        );
    }

    /// tqdm's shape: tox's configuration inside `pyproject.toml` (`legacy_tox_ini`), its
    /// `[testenv] deps` pulling in `{[core]deps}`, where pytest-asyncio and pytest-timeout are.
    #[test]
    fn tox_deps_are_read_from_pyproject_and_through_section_references() {
        let tox = "[tox]\nenvlist = py3\n\n[core]\ndeps=\n    pytest\n    pytest-asyncio\n    git+https://x.example/nbval\n\n[testenv]\ndeps=\n    {[core]deps}\n    numpy\n    tf: tensorflow\n";
        let pyproject = format!(
            "[project]\nname = \"x\"\n\n[tool.tox]\nlegacy_tox_ini = \"\"\"\n{tox}\"\"\"\n"
        );
        let f = &detect(&Tree::of(&[("pyproject.toml", pyproject.as_str())]))[0];
        let setup = f.setup.as_deref().unwrap();
        assert!(
            setup.contains("pip install --quiet 'numpy' 'pytest' 'pytest-asyncio'"),
            "{setup}"
        );
        assert!(
            !setup.contains("x.example") && !setup.contains("tensorflow"),
            "{setup}"
        );
    }

    #[test]
    fn go_setup_downloads_and_fails_on_nothing_else() {
        let f = &detect(&Tree::of(&[("go.mod", "module x\n")]))[0];
        let setup = f.setup.as_deref().unwrap();
        assert!(setup.starts_with("go mod download && "), "{setup}");
        assert!(!setup.contains("go vet"), "{setup}");
        assert!(setup.ends_with("|| true; }"), "{setup}");
        assert_eq!(f.lint.as_deref(), Some("go vet ./..."));
    }

    #[test]
    fn node_uses_its_lockfiles_tool_and_the_scripts_that_exist() {
        let pkg = r#"{"scripts": {"test": "node --test", "build": "tsc"}, "devDependencies": {"typescript": "5"}}"#;
        let t = Tree::of(&[
            ("package.json", pkg),
            ("package-lock.json", "{}"),
            ("tsconfig.json", "{}"),
        ]);
        let f = &detect(&t)[0];
        assert_eq!(
            (f.setup.as_deref(), f.test.as_deref(), f.lint.as_deref()),
            (Some("npm ci"), Some("npm run test"), None)
        );
        assert_eq!(f.typecheck.as_deref(), Some("npx tsc --noEmit"));
        assert_eq!(f.format, TestFormat::NodeTest);
    }

    #[test]
    fn several_ecosystems_and_none() {
        let t = Tree::of(&[("go.mod", "module x\n"), ("Cargo.toml", "[package]\n")]);
        let e: Vec<Ecosystem> = detect(&t).iter().map(|f| f.ecosystem).collect();
        assert_eq!(e, [Ecosystem::Rust, Ecosystem::Go]);
        assert!(detect(&Tree::of(&[("README.md", "")])).is_empty());
    }
}
