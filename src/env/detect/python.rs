//! Python's detection: what setup installs (the project with its test extras, requirements
//! files, dependency groups, the test tools other tools name) and which lint and typecheck run,
//! as the project itself runs them.

use super::{CACHE, Ecosystem, Files, Found, TestFormat, present, vars};
use crate::env::includes::Kind;
use crate::env::{precommit, pyproject};
use crate::sandbox::quote;

const PIP: &str = "pip install --quiet";
/// Where Debian keeps the wheels its `ensurepip` installs.
const SYSTEM_WHEELS: &str = "/usr/share/python-wheels";

/// The shell command that makes a virtual environment at `dir` (a shell word) with pip in it.
/// The system's pip installs pip there from the wheel Debian's `ensurepip` would use: 2.45 s
/// in the Python runner image under the sandbox's settings, where `python3 -m venv` (running
/// `ensurepip`, pip from a zip) takes 3.2 s; where there is no such pip or wheel, `ensurepip`
/// does it. It reads no `PIP_*` variable or pip configuration (`--isolated`): nothing of the
/// project's picks that pip. `compile`: its `.pyc` files are written now, for a pip that runs
/// again and again; a pip that runs once leaves them out (0.9 s).
pub fn venv_with_pip(dir: &str, compile: bool) -> String {
    let compile = if compile { "" } else { " --no-compile" };
    format!(
        "python3 -m venv --without-pip {dir} && {{ python3 -m pip --isolated --python {dir}/bin/python \
         install --quiet --no-index --find-links {SYSTEM_WHEELS}{compile} pip 2>/dev/null \
         || {dir}/bin/python -m ensurepip --upgrade --default-pip >/dev/null; }}"
    )
}

/// The requirements files setup installs ([`crate::env::includes::is_requirements_file`]):
/// `requirements*.txt` and `dev-requirements.txt` at the top; under `requirements/`, those and
/// the test, dev and base sets (`requirements/test.txt`), not docs or release tools.
fn requirement_files(paths: &[String]) -> Vec<String> {
    paths
        .iter()
        .filter(|p| crate::env::includes::is_requirements_file(p))
        .cloned()
        .collect()
}

/// The test tools Poetry, PDM, Hatch or tox name (plain requirements only) and the
/// requirements files tox's deps install, each installed by setup where nothing else names the
/// test tools (`named_for_tests`).
fn test_tools(
    files: &dyn Files,
    (pyproject, tox_ini): (&str, &str),
    named_for_tests: bool,
    setup: &mut Setup,
) -> (Vec<(&'static str, Vec<String>)>, Vec<String>) {
    let mut others = pyproject::other_test_tools(pyproject, tox_ini);
    others.retain(|_| !named_for_tests);
    for (_, specs) in &mut others {
        specs.retain(|s| pyproject::plain_requirement(s));
    }
    others.retain(|(_, specs)| !specs.is_empty());
    for (source, specs) in &others {
        let quoted: Vec<String> = specs.iter().map(|s| quote(s)).collect();
        setup.run(format!("{PIP} {}", quoted.join(" ")));
        setup.why.push(format!("the test tools {source} name"));
    }
    let tox_files = tox_requirements(files, tox_ini, named_for_tests, setup);
    (others, tox_files)
}

/// What the requirements files `roots` include (`-r ../docs/requirements.txt`, `-c
/// pins.txt`): `roots` with the files pip installs from them (their tools are declared), and
/// every file included (the environment is made from those too).
fn with_included(files: &dyn Files, roots: &[String]) -> (Vec<String>, Vec<String>) {
    let included = crate::env::includes::closure(roots, &mut |p| files.read(p));
    let installed = roots
        .iter()
        .cloned()
        .chain(
            included
                .iter()
                .filter(|(k, _)| *k == Kind::Requirements)
                .map(|(_, p)| p.clone()),
        )
        .collect();
    (installed, included.into_iter().map(|(_, p)| p).collect())
}

/// The requirements files tox's `[testenv] deps` install (`-rtests/requirements.txt`) that
/// are there, each installed by setup, where nothing else names the test tools.
fn tox_requirements(
    files: &dyn Files,
    tox_ini: &str,
    named_for_tests: bool,
    setup: &mut Setup,
) -> Vec<String> {
    if named_for_tests {
        return vec![];
    }
    let present: Vec<String> = pyproject::tox_requirement_files(tox_ini)
        .into_iter()
        .filter(|p| files.paths().contains(p))
        .collect();
    setup.requirements_files(&present, "as tox's deps name");
    present
}

/// What setup runs, and why, in words for `--explain`.
#[derive(Default)]
struct Setup {
    steps: Vec<String>,
    why: Vec<String>,
}

impl Setup {
    fn run(&mut self, step: String) {
        self.steps.push(step);
    }

    /// Installs each of `files` (requirements files), said as "`files` `why`". A change (or a
    /// later commit) may remove one: nothing of it to install then.
    fn requirements_files(&mut self, files: &[String], why: &str) {
        for r in files.iter().map(|r| quote(r)) {
            self.run(format!("{{ test ! -e {r} || {PIP} -r {r}; }}"));
        }
        if !files.is_empty() {
            self.why.push(format!("{} {why}", files.join(", ")));
        }
    }
}

/// The project itself, with its test extras (`installable`: it has a build).
fn install_project(setup: &mut Setup, pyproject: &str, extras: &[String]) {
    // What builds the project, in the environment too: each sandbox builds it again offline
    // and without isolation (`prepare`).
    let build = pyproject::build_requires(pyproject);
    setup.run(format!("{PIP} {}", build.join(" ")));
    setup.run(format!("python -c {}", quote(pyproject::EDITABLE_REQUIRES)));
    let target = if extras.is_empty() {
        ".".to_owned()
    } else {
        quote(&format!(".[{}]", extras.join(",")))
    };
    // Its build tools are in the environment now: pip need not make an isolated one with them
    // again (2-3 s for a setuptools project).
    setup.run(format!("{PIP} --no-build-isolation -e {target}"));
    setup.why.push(if extras.is_empty() {
        "the project installed from its metadata".to_owned()
    } else {
        format!(
            "the project installed with its {} extra(s)",
            extras.join(", ")
        )
    });
}

/// The lint and typecheck gates, each where the project configures its tool and installs it
/// (or pre-commit pins it: `installs`), run as the project runs it; the gates left out with why.
struct Gates {
    lint: Option<String>,
    typecheck: Option<String>,
    installs: Vec<String>,
    /// What the tox environment that runs a gate's tool installs for it (`deps = mypy`).
    tox_installs: Vec<String>,
    left_out: Vec<(String, String)>,
    sources: Vec<(String, String)>,
}

fn gates(
    files: &dyn Files,
    (pyproject, setup_cfg, tox_ini): (&str, &str, &str),
    declared: &[String],
) -> Gates {
    let doc = pyproject.parse::<toml::Table>().unwrap_or_default();
    let paths = files.paths();
    // `[tool.ruff]`, `[tool.ruff.lint]` or `tool.ruff.line-length = 88`: the same table.
    let configures = |tool: &str| doc.get("tool").and_then(|t| t.get(tool)).is_some();
    let precommit = files.read(".pre-commit-config.yaml").unwrap_or_default();
    let pinned = pyproject::precommit_pins(&precommit);
    let mut g = Gates {
        lint: None,
        typecheck: None,
        installs: vec![],
        tox_installs: vec![],
        left_out: vec![],
        sources: vec![],
    };
    let mut gate = |gate: &str, tools: &[(&str, &str, &str)]| {
        for (name, file, command) in tools {
            if !(configures(name) || paths.iter().any(|p| p == file)) {
                continue;
            }
            if declared.iter().any(|d| d == name) {
                return Some((*command).to_owned());
            }
            if let Some((_, spec)) = pinned.iter().find(|(t, _)| t == name) {
                g.installs.push(spec.clone());
                return Some((*command).to_owned());
            }
            let deps = precommit::tox_env_deps(tox_ini, name);
            if !deps.is_empty() {
                g.tox_installs.extend(deps);
                return Some((*command).to_owned());
            }
            g.left_out.push((
                gate.to_owned(),
                format!(
                    "the project configures {name} but neither depends on it nor pins it in .pre-commit-config.yaml, nor does a tox environment that runs it install it, so it is not installed: add {name} to a test dependency group or requirements file, or set `gates.{gate}`"
                ),
            ));
            return None;
        }
        None
    };
    let lint = gate(
        "lint",
        &[
            ("ruff", "ruff.toml", "ruff check ."),
            ("flake8", ".flake8", "flake8 ."),
        ],
    );
    let typecheck = gate("typecheck", &[("mypy", "mypy.ini", "mypy .")]);
    // The command the project runs itself, where it says so, before a bare `tool .`.
    let makefile = files.read("Makefile").unwrap_or_default();
    let mypy_ini = files.read("mypy.ini").unwrap_or_default();
    let gitignore = files.read(".gitignore").unwrap_or_default();
    let mut own = |gate: &str, command: Option<String>| {
        let tool = command.as_deref()?.split_whitespace().next()?.to_owned();
        if let Some((command, mut from)) = precommit::hook_command(&precommit, &tool, &gitignore) {
            // What pre-commit installs beside the hook (mypy's stubs, flake8's plugins).
            let (plain, refused) = precommit::hook_dependencies(&precommit, &tool);
            g.installs.extend(plain);
            if !refused.is_empty() {
                let refused: Vec<String> = refused.iter().map(|r| format!("`{r}`")).collect();
                from.push_str(&format!(
                    "; not installed, as not a plain requirement: {}",
                    refused.join(", ")
                ));
            }
            g.sources.push((gate.to_owned(), from));
            return Some(command);
        }
        let own = precommit::tox_command(tox_ini, &tool)
            .or_else(|| precommit::make_command(&makefile, gate, &tool));
        if let Some((command, from)) = own {
            g.sources.push((gate.to_owned(), from));
            return Some(command);
        }
        if tool == "mypy" && precommit::mypy_names_its_files(pyproject, &mypy_ini, setup_cfg) {
            g.sources
                .push((gate.to_owned(), "mypy's own `files` setting".to_owned()));
            return Some("mypy".to_owned());
        }
        command
    };
    let lint = own("lint", lint);
    let typecheck = own("typecheck", typecheck);
    Gates {
        lint,
        typecheck,
        ..g
    }
}

/// Installs what `source` would for the gates' tools (`specs`: for pre-commit the version it
/// pins, where that is all that names the tool, and what its hooks install beside it; for tox
/// the `deps` of the environment that runs the tool), each once; returns what it installs.
fn install_for_gates(setup: &mut Setup, specs: &[String], source: &str) -> Vec<String> {
    let mut installs: Vec<String> = Vec::new();
    for spec in specs {
        if !installs.contains(spec) {
            installs.push(spec.clone());
        }
    }
    if !installs.is_empty() {
        let quoted: Vec<String> = installs.iter().map(|s| quote(s)).collect();
        setup.run(format!("{PIP} {}", quoted.join(" ")));
        setup
            .why
            .push(format!("{} as {source} install", installs.join(", ")));
    }
    installs
}

/// Installs PEP 735 dependency groups: pip reads them from ./pyproject.toml (pip 25.1 and
/// later).
fn install_groups(setup: &mut Setup, groups: &[String]) {
    // Names only (`groups::installed`): a group named with shell syntax is never one of them.
    for g in groups {
        setup.run(format!("{PIP} --group {g}"));
    }
    if !groups.is_empty() {
        setup
            .why
            .push(format!("the {} dependency group(s)", groups.join(", ")));
    }
}

pub(super) fn python(files: &dyn Files) -> Option<Found> {
    let requirements = requirement_files(files.paths());
    let markers = present(
        files,
        &["pyproject.toml", "setup.py", "setup.cfg", "tox.ini"],
    );
    if markers.is_empty() && requirements.is_empty() {
        return None;
    }
    let pyproject = files.read("pyproject.toml").unwrap_or_default();
    let doc = pyproject.parse::<toml::Table>().unwrap_or_default();
    let installable = doc.contains_key("project")
        || doc.contains_key("build-system")
        || markers.iter().any(|m| m == "setup.py" || m == "setup.cfg");
    let mut setup = Setup::default();
    setup.run(venv_with_pip("\"$VIRTUAL_ENV\"", true));
    let setup_cfg = files.read("setup.cfg").unwrap_or_default();
    let uv_lock = files.paths().iter().any(|p| p == "uv.lock");
    let tox_ini = pyproject::tox_config(&|p| files.read(p));
    let (extras, groups) = pyproject::test_groups(&pyproject, &setup_cfg, &tox_ini, uv_lock);
    if installable {
        install_project(&mut setup, &pyproject, &extras);
    }
    setup.requirements_files(&requirements, "installed");
    install_groups(&mut setup, &groups);
    // No extra, group or requirements file names the test tools: what Poetry, PDM, Hatch or
    // tox name for them.
    let named_for_tests = !extras.is_empty()
        || !groups.is_empty()
        || requirements
            .iter()
            .any(|r| r.contains("test") || r.contains("dev"));
    let manifests = (pyproject.as_str(), tox_ini.as_str());
    let (others, tox_files) = test_tools(files, manifests, named_for_tests, &mut setup);
    // pytest runs unittest suites too; installed when nothing above brings it.
    setup.run(format!(
        "(python -c 'import pytest' 2>/dev/null || {PIP} pytest)"
    ));
    let roots: Vec<String> = requirements.iter().chain(&tox_files).cloned().collect();
    let (installed, included) = with_included(files, &roots);
    // A lint or typecheck tool the project configures is a gate only where the project also
    // depends on it (setup installs it); else the gate is skipped with why.
    let mut declared = pyproject::declared_python(&|p| files.read(p), &pyproject, &installed);
    let names = others.iter().flat_map(|(_, specs)| specs);
    declared.extend(names.map(|s| pyproject::requirement_name(s)));
    let manifests = (pyproject.as_str(), setup_cfg.as_str(), tox_ini.as_str());
    let checks = gates(files, manifests, &declared);
    let installs = install_for_gates(
        &mut setup,
        &checks.installs,
        ".pre-commit-config.yaml's hooks",
    );
    install_for_gates(&mut setup, &checks.tox_installs, "tox's environments");
    let manifest = markers
        .first()
        .cloned()
        .unwrap_or_else(|| requirements[0].clone());
    let mut inputs = markers.clone();
    inputs.extend(roots);
    inputs.extend(included);
    if !installs.is_empty() {
        inputs.push(".pre-commit-config.yaml".into());
    }
    // Whether there is one decides which dependency groups are installed.
    if uv_lock {
        inputs.push("uv.lock".into());
    }
    Some(Found {
        ecosystem: Ecosystem::Python,
        manifest: manifest.clone(),
        why: format!(
            "{manifest}: a virtual environment with {}",
            if setup.why.is_empty() {
                "pytest".to_owned()
            } else {
                setup.why.join(" and ")
            }
        ),
        setup: Some(setup.steps.join(" && ")),
        test: Some("python -m pytest -q".into()),
        lint: checks.lint,
        typecheck: checks.typecheck,
        build: None,
        coverage: Some(crate::env::coverage::python()),
        coverage_setup: Some(crate::env::coverage::python_setup()),
        // The project itself, again in each sandbox's worktree: what its install writes into
        // the source tree is there too. Offline, without dependencies (the environment has
        // them) and with the build tools setup installed.
        prepare: installable
            .then(|| format!("{PIP} --no-deps --no-build-isolation --no-index -e .")),
        test_paths: vec![
            "tests/".into(),
            "**/test_*.py".into(),
            "**/*_test.py".into(),
        ],
        format: TestFormat::Pytest,
        inputs,
        env: vars(&[
            ("VIRTUAL_ENV", format!("{CACHE}/venv")),
            ("PIP_CACHE_DIR", format!("{CACHE}/pip")),
            ("PIP_DISABLE_PIP_VERSION_CHECK", "1".into()),
        ]),
        path: vec![format!("{CACHE}/venv/bin")],
        links: vec![],
        sources: checks.sources,
        left_out: checks.left_out,
    })
}

#[cfg(test)]
mod tests {
    use crate::env::detect::detect;
    use crate::env::tree::Tree;

    /// marshmallow 3.23's mypy hook: its stubs come only from `additional_dependencies`, and
    /// without them its typecheck fails on the base ("Library stubs not installed").
    const MARSHMALLOW_HOOKS: &str = "repos:
- repo: https://github.com/astral-sh/ruff-pre-commit
  rev: v0.6.9
  hooks:
    - id: ruff
- repo: https://github.com/pre-commit/mirrors-mypy
  rev: v1.11.2
  hooks:
  - id: mypy
    additional_dependencies: [types-simplejson, types-pytz, packaging]
    exclude: ^tests/mypy_test_cases/.*$
";

    #[test]
    fn what_pre_commit_installs_beside_a_hook_is_installed_with_it() {
        let pyproject = "[project]\nname = \"m\"\n[tool.ruff]\n[tool.mypy]\n";
        let t = Tree::of(&[
            ("pyproject.toml", pyproject),
            (".pre-commit-config.yaml", MARSHMALLOW_HOOKS),
        ]);
        let f = &detect(&t)[0];
        let setup = f.setup.as_deref().unwrap();
        assert!(
            setup.ends_with(
                "install --quiet 'ruff==0.6.9' 'mypy==1.11.2' 'types-simplejson' 'types-pytz' \
                 'packaging'"
            ),
            "{setup}"
        );
        assert!(f.inputs.iter().any(|i| i == ".pre-commit-config.yaml"));
    }

    #[test]
    fn a_hooks_dependency_that_is_not_a_plain_requirement_never_reaches_pip() {
        let hostile = MARSHMALLOW_HOOKS.replace(
            "[types-simplejson, types-pytz, packaging]",
            "['--index-url=http://x.example/simple', '-e git+https://x.example/p', \
             'p @ https://x.example/p.whl', './vendored', 'types-pytz']",
        );
        let t = Tree::of(&[
            ("pyproject.toml", "[project]\nname = \"m\"\n[tool.mypy]\n"),
            (".pre-commit-config.yaml", hostile.as_str()),
        ]);
        let f = &detect(&t)[0];
        let setup = f.setup.as_deref().unwrap();
        assert!(setup.ends_with("'mypy==1.11.2' 'types-pytz'"), "{setup}");
        assert!(!setup.contains("x.example") && !setup.contains("vendored"));
        let (_, from) = f.sources.iter().find(|(g, _)| g == "typecheck").unwrap();
        assert!(
            from.contains("not installed, as not a plain requirement: `--index-url="),
            "{from}"
        );
    }

    /// urllib3's shape: a `test` group for packagers and a `dev` group its developers' `uv run
    /// pytest` installs; its `conftest.py` needs what only `dev` names.
    #[test]
    fn a_uv_project_installs_the_groups_uv_run_would() {
        let pyproject = "[project]\nname = \"u\"\n\n[dependency-groups]\ntest = [\"pytest\"]\n\
                         dev = [{include-group = \"test\"}, \"trustme\"]\n";
        let t = Tree::of(&[("pyproject.toml", pyproject), ("uv.lock", "version = 1\n")]);
        let f = &detect(&t)[0];
        let setup = f.setup.as_deref().unwrap();
        assert!(
            setup.contains("--group test") && setup.contains("--group dev"),
            "{setup}"
        );
        assert!(f.inputs.iter().any(|i| i == "uv.lock"), "{:?}", f.inputs);
        let f = &detect(&Tree::of(&[("pyproject.toml", pyproject)]))[0];
        assert!(!f.setup.as_deref().unwrap().contains("--group dev"));
    }

    /// pyjwt 2.10's tox runs its tests with `extras = crypto: crypto`: without cryptography,
    /// 140 of its 348 tests skip, so a change to its RSA code would be judged by none.
    #[test]
    fn the_extras_toxs_tests_run_with_are_installed() {
        let pyproject = "[project]\nname = \"jwt\"\n\n[project.optional-dependencies]\n\
                         crypto = [\"cryptography>=3.4.0\"]\ndocs = [\"sphinx\"]\n\n\
                         [dependency-groups]\ntests = [\"pytest\"]\n";
        let tox = "[testenv]\ndependency_groups =\n    tests\nextras =\n    crypto: crypto\n\
                   \n[testenv:docs]\nextras =\n    docs\n";
        let t = Tree::of(&[("pyproject.toml", pyproject), ("tox.ini", tox)]);
        let setup = detect(&t)[0].setup.clone().unwrap();
        assert!(setup.contains("-e '.[crypto]'"), "{setup}");
        assert!(setup.contains("--group tests"), "{setup}");
        // An extra the project does not declare is not asked for.
        let tox = "[testenv]\nextras = nosuch\n";
        let t = Tree::of(&[("pyproject.toml", pyproject), ("tox.ini", tox)]);
        let setup = detect(&t)[0].setup.clone().unwrap();
        assert!(!setup.contains("nosuch"), "{setup}");
    }

    /// pyjwt's mypy runs in a tox environment of its own, whose `deps` install it: the
    /// typecheck gate runs that command, with what it installs (it had been skipped).
    #[test]
    fn a_tool_a_tox_environment_runs_and_installs_is_a_gate() {
        let pyproject = "[project]\nname = \"jwt\"\n\n[tool.mypy]\nfiles = [\"jwt\"]\n";
        let tox = "[testenv]\ncommands = pytest\n\n[testenv:py313-mypy]\ndeps =\n    mypy\n\
                   commands =\n    mypy {posargs}\n";
        let t = Tree::of(&[("pyproject.toml", pyproject), ("tox.ini", tox)]);
        let f = &detect(&t)[0];
        assert_eq!(f.typecheck.as_deref(), Some("mypy"));
        assert!(f.left_out.is_empty(), "{:?}", f.left_out);
        let setup = f.setup.as_deref().unwrap();
        assert!(setup.ends_with("pip install --quiet 'mypy'"), "{setup}");
        assert!(
            f.why.contains("mypy as tox's environments install"),
            "{}",
            f.why
        );
    }

    /// A repository's TOML keys are any string: an extra or a group named with shell syntax,
    /// which tox or uv names, never reaches the setup command.
    #[test]
    fn an_extra_or_group_named_with_shell_syntax_never_reaches_setup() {
        let evil = "x';touch /tmp/owned;'";
        let pyproject = format!(
            "[project]\nname = \"p\"\n\n[project.optional-dependencies]\n\"{evil}\" = []\n\
             tests = [\"pytest\"]\n\n[dependency-groups]\n\"{evil}\" = [\"six\"]\n\n\
             [tool.uv]\ndefault-groups = [\"{evil}\"]\n"
        );
        let tox = format!("[testenv]\nextras =\n    {evil}\n");
        let t = Tree::of(&[
            ("pyproject.toml", pyproject.as_str()),
            ("tox.ini", tox.as_str()),
        ]);
        let setup = detect(&t)[0].setup.clone().unwrap();
        assert!(!setup.contains("owned"), "{setup}");
        assert!(setup.contains("-e '.[tests]'"), "{setup}");
    }
}
