//! What a Python project's manifests say, read as data: `pyproject.toml` with a TOML parser
//! (extras as tables or dotted keys, PEP 735 dependency groups, the build system) and
//! `setup.cfg`'s options, for detection (what setup installs, which gates have their tool) and
//! for the download phase of a changed dependency file.

use super::groups::{TEST_GROUPS, without_dev};

/// The names of the packages a Python project depends on where setup installs from: its
/// dependencies, the test extras and groups setup picks, its requirements files and
/// `setup.cfg` (lower-cased, without versions or extras).
pub(super) fn declared_python(
    read: &dyn Fn(&str) -> Option<String>,
    pyproject: &str,
    requirements: &[String],
) -> Vec<String> {
    let mut specs: Vec<String> = Vec::new();
    let tox = tox_config(read);
    if let Ok(doc) = pyproject.parse::<toml::Table>() {
        let mut list = |v: Option<&toml::Value>| {
            specs.extend(
                v.and_then(|v| v.as_array())
                    .into_iter()
                    .flatten()
                    .filter_map(|s| s.as_str().map(str::to_owned)),
            )
        };
        let project = doc.get("project");
        list(project.and_then(|p| p.get("dependencies")));
        // Only the extras and groups setup installs (a `type` extra holding mypy is not).
        let (extras, groups) = test_groups(pyproject, "", &tox, read("uv.lock").is_some());
        let table = project.and_then(|p| p.get("optional-dependencies"));
        for name in extras {
            list(table.and_then(|t| t.get(name.as_str())));
        }
        for name in groups {
            specs.extend(super::groups::requirements(&doc, &name));
        }
    }
    for r in requirements {
        specs.extend(read(r).iter().flat_map(|t| t.lines().map(str::to_owned)));
    }
    if let Some(cfg) = read("setup.cfg") {
        specs.extend(setup_cfg_requires(&cfg, &tox));
    }
    specs
        .iter()
        .map(|s| requirement_name(s))
        .filter(|n| !n.is_empty())
        .collect()
}

/// The package a requirement names, lower-cased, without version, extras or markers.
pub(super) fn requirement_name(spec: &str) -> String {
    spec.trim()
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'))
        .next()
        .unwrap_or_default()
        .to_lowercase()
}

/// The lint and typecheck tools `.pre-commit-config.yaml` pins, each as the pip requirement
/// that installs that version (`ruff==0.4.4` for `rev: v0.4.4`; the bare name when the rev is
/// not a version). Hooks of `repo: local` pin nothing: they run what the environment has.
pub(super) fn precommit_pins(config: &str) -> Vec<(String, String)> {
    let Ok(doc) = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(config) else {
        return vec![];
    };
    let mut pins = Vec::new();
    for repo in doc["repos"].as_sequence().into_iter().flatten() {
        let url = repo["repo"].as_str().unwrap_or_default();
        if url == "local" || url == "meta" {
            continue;
        }
        let rev = repo["rev"].as_str().unwrap_or_default();
        let version = rev.strip_prefix('v').unwrap_or(rev);
        let pinned = !version.is_empty()
            && version.starts_with(|c: char| c.is_ascii_digit())
            && version.len() < 40
            && version
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '.');
        for hook in repo["hooks"].as_sequence().into_iter().flatten() {
            let id = hook["id"].as_str().unwrap_or_default();
            // ruff-pre-commit's hooks are `ruff` and `ruff-check` (lint) and `ruff-format`.
            let tool = match id {
                "ruff" | "ruff-check" => "ruff",
                "mypy" => "mypy",
                "flake8" => "flake8",
                _ => continue,
            };
            if pins.iter().any(|(t, _)| t == tool) {
                continue;
            }
            let spec = if pinned {
                format!("{tool}=={version}")
            } else {
                tool.to_owned()
            };
            pins.push((tool.to_owned(), spec));
        }
    }
    pins
}

/// Installs what the project's build backend says an editable build needs beyond its
/// `requires` (hatchling: `editables`), asked of the backend itself (PEP 660's
/// `get_requires_for_build_editable`), so that `prepare` can build without isolation.
pub(super) const EDITABLE_REQUIRES: &str = r#"import importlib, subprocess, sys, tomllib
try:
    with open("pyproject.toml", "rb") as f:
        bs = tomllib.load(f).get("build-system", {})
except FileNotFoundError:
    bs = {}
sys.path[:0] = bs.get("backend-path", [])
name, _, attr = bs.get("build-backend", "setuptools.build_meta:__legacy__").partition(":")
backend = importlib.import_module(name)
for a in filter(None, attr.split(".")):
    backend = getattr(backend, a)
hook = getattr(backend, "get_requires_for_build_editable", None)
reqs = hook() if hook else []
if reqs:
    subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet", *reqs])
"#;

/// `[build-system] requires` of a `pyproject.toml`, each as a shell word; setuptools (what
/// pip builds a project without one with) when there is none.
pub(super) fn build_requires(pyproject: &str) -> Vec<String> {
    let requires: Vec<String> = pyproject
        .parse::<toml::Table>()
        .ok()
        .and_then(|doc| {
            doc.get("build-system")?
                .get("requires")?
                .as_array()
                .cloned()
        })
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .filter(|r| !r.trim().is_empty() && !r.contains('\0'))
        .collect();
    if requires.is_empty() {
        return vec!["setuptools".into()];
    }
    requires.iter().map(|r| crate::sandbox::quote(r)).collect()
}

/// The test extras (`[project.optional-dependencies]`, dotted keys too, and `setup.cfg`'s
/// `[options.extras_require]`), with those tox's `[testenv] extras` installs, and the PEP 735
/// dependency groups setup installs ([`super::groups::installed`]; `uv_lock`: the project has
/// a `uv.lock`) of a project, its `pyproject.toml` read as TOML.
pub(super) fn test_groups(
    pyproject: &str,
    setup_cfg: &str,
    tox_ini: &str,
    uv_lock: bool,
) -> (Vec<String>, Vec<String>) {
    let mut all: Vec<String> = setup_cfg_entries(setup_cfg, "options.extras_require")
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    let doc = pyproject.parse::<toml::Table>().ok();
    let table = doc.as_ref().and_then(|d| d.get("project"));
    let table = table.and_then(|p| p.get("optional-dependencies"));
    for k in table
        .and_then(|t| t.as_table())
        .into_iter()
        .flat_map(|t| t.keys())
    {
        if !all.contains(k) {
            all.push(k.clone());
        }
    }
    let named = all.iter().filter(|k| TEST_GROUPS.contains(&k.as_str()));
    let mut extras = without_dev(named.cloned().collect());
    // What tox's tests run with (pyjwt's `crypto: crypto`, without which 140 tests skip).
    for e in tox_extras(tox_ini) {
        if super::groups::is_name(&e) && all.contains(&e) && !extras.contains(&e) {
            extras.push(e);
        }
    }
    let groups = doc.map(|d| super::groups::installed(&d, uv_lock));
    (extras, groups.unwrap_or_default())
}

/// The test tools a project names outside the packaging standards, each source with the
/// requirements it names: Poetry's dev dependencies (`[tool.poetry.dev-dependencies]`, its
/// `test`/`dev` groups), PDM's (`[tool.pdm.dev-dependencies]`), Hatch's default and test
/// environments, and tox's `[testenv] deps`. Only plain requirements from an index: never an
/// option, a path, a URL or a substitution. For projects whose extras and dependency groups
/// name no test tools.
pub(super) fn other_test_tools(pyproject: &str, tox_ini: &str) -> Vec<(&'static str, Vec<String>)> {
    let mut out: Vec<(&'static str, Vec<String>)> = Vec::new();
    let doc = pyproject.parse::<toml::Table>().unwrap_or_default();
    let tool = |path: &[&str]| {
        path.iter()
            .try_fold(doc.get("tool")?, |v, k| v.get(*k))
            .cloned()
    };
    let strings = |v: Option<toml::Value>| -> Vec<String> {
        v.and_then(|v| v.as_array().cloned())
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(str::to_owned))
            .collect()
    };
    // Poetry: `name = "^1.2"` or `{ version = …, extras = […] }`, its constraints as pip's.
    // The test groups of a table of groups (`dev` only where no other is named).
    let test_keys = |table: Option<toml::Value>| -> Vec<String> {
        let keys = table.and_then(|t| t.as_table().map(|t| t.keys().cloned().collect()));
        let keys: Vec<String> = keys.unwrap_or_default();
        without_dev(
            keys.into_iter()
                .filter(|k| TEST_GROUPS.contains(&k.as_str()))
                .collect(),
        )
    };
    let mut poetry = super::poetry::requirements(tool(&["poetry", "dev-dependencies"]));
    for g in test_keys(tool(&["poetry", "group"])) {
        poetry.extend(super::poetry::requirements(tool(&[
            "poetry",
            "group",
            &g,
            "dependencies",
        ])));
    }
    out.push(("Poetry's dev dependencies", poetry));
    let pdm_specs = test_keys(tool(&["pdm", "dev-dependencies"]))
        .iter()
        .flat_map(|g| strings(tool(&["pdm", "dev-dependencies", g])))
        .collect();
    out.push(("PDM's dev dependencies", pdm_specs));
    let mut hatch = Vec::new();
    for env in ["default", "test", "tests"] {
        for key in ["dependencies", "extra-dependencies"] {
            hatch.extend(strings(tool(&["hatch", "envs", env, key])));
        }
    }
    out.push(("Hatch's environments", hatch));
    out.push(("tox's deps", tox_deps(tox_ini)));
    for (_, specs) in &mut out {
        specs.sort();
        specs.dedup();
    }
    out.retain(|(_, specs)| !specs.is_empty());
    out
}

/// tox's configuration: `tox.ini` (`read` gives a file's text), else the INI text
/// `pyproject.toml` holds in `[tool.tox] legacy_tox_ini` (tqdm keeps it there).
pub(super) fn tox_config(read: &dyn Fn(&str) -> Option<String>) -> String {
    if let Some(ini) = read("tox.ini").filter(|t| !t.trim().is_empty()) {
        return ini;
    }
    let pyproject = read("pyproject.toml").unwrap_or_default();
    let doc = pyproject.parse::<toml::Table>().unwrap_or_default();
    let legacy = doc
        .get("tool")
        .and_then(|t| t.get("tox"))
        .and_then(|t| t.get("legacy_tox_ini"))
        .and_then(|t| t.as_str());
    legacy.unwrap_or_default().to_owned()
}

/// The lines of tox's `[testenv] deps`, each `{[section]key}` replaced by that key's lines
/// (tqdm's `{[core]deps}`), three references deep at most.
fn tox_deps(tox_ini: &str) -> Vec<String> {
    tox_entry(tox_ini, "deps")
}

/// The extras tox's `[testenv] extras` names, a factor's condition taken as met (`crypto:
/// crypto` is `crypto`).
pub(super) fn tox_extras(tox_ini: &str) -> Vec<String> {
    let lines = tox_entry(tox_ini, "extras");
    let names = lines.iter().flat_map(|line| {
        let names = line.rsplit_once(':').map_or(line.as_str(), |(_, n)| n);
        names.split([',', ' ']).map(str::trim).map(str::to_owned)
    });
    names.filter(|n| !n.is_empty()).collect()
}

/// The lines of `[testenv]`'s `key`, each `{[section]key}` replaced by that key's lines, three
/// references deep at most.
fn tox_entry(tox_ini: &str, key: &str) -> Vec<String> {
    fn entry(tox_ini: &str, section: &str, key: &str, depth: u8) -> Vec<String> {
        let lines = setup_cfg_entries(tox_ini, section)
            .into_iter()
            .filter(|(k, _)| k == key)
            .flat_map(|(_, v)| v);
        let mut out = Vec::new();
        for line in lines {
            let reference = line
                .strip_prefix("{[")
                .and_then(|r| r.strip_suffix('}'))
                .and_then(|r| r.split_once(']'));
            match reference {
                Some((s, k)) if depth > 0 && !s.is_empty() && !k.is_empty() => {
                    out.extend(entry(tox_ini, s, k, depth - 1));
                }
                _ => out.push(line),
            }
        }
        out
    }
    entry(tox_ini, "testenv", key, 3)
}

/// The requirements files tox's `[testenv] deps` name (`-rtests/requirements.txt`), as
/// repository paths (tox reads them relative to `tox.ini`, at the root).
pub(super) fn tox_requirement_files(tox_ini: &str) -> Vec<String> {
    let mut files: Vec<String> = tox_deps(tox_ini)
        .into_iter()
        // `-r{toxinidir}/requirements-test.txt`: tox's own directory is the root.
        .map(|line| line.replace("{toxinidir}/", ""))
        .flat_map(|line| super::includes::included("tox.ini", &line))
        .filter(|(k, _)| *k == super::includes::Kind::Requirements)
        .map(|(_, p)| p)
        .collect();
    files.dedup();
    files
}

/// A requirement pip resolves from an index (`pytest ~= 8.2`, `rich[jupyter]>=13;
/// python_version >= "3.9"`): PEP 508 with no URL, path, option or control character
/// ([`super::requirement::from_index`]).
pub(super) fn plain_requirement(r: &str) -> bool {
    super::requirement::from_index(r).is_ok()
}

/// What a `setup.cfg` installs: `[options] install_requires` and the test extras of
/// `[options.extras_require]`, with those tox's `[testenv] extras` names (`tox_ini`).
pub(super) fn setup_cfg_requires(cfg: &str, tox_ini: &str) -> Vec<String> {
    let tox = tox_extras(tox_ini);
    let mut out: Vec<String> = setup_cfg_entries(cfg, "options")
        .into_iter()
        .filter(|(k, _)| k == "install_requires")
        .flat_map(|(_, v)| v)
        .collect();
    out.extend(
        setup_cfg_entries(cfg, "options.extras_require")
            .into_iter()
            .filter(|(k, _)| TEST_GROUPS.contains(&k.as_str()) || tox.contains(k))
            .flat_map(|(_, v)| v),
    );
    out
}

/// The keys of `[section]` in a `setup.cfg` (INI: `key = value`, continued on indented lines),
/// each with its values one per line, comments left out.
fn setup_cfg_entries(cfg: &str, section: &str) -> Vec<(String, Vec<String>)> {
    let header = format!("[{section}]");
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut inside = false;
    for line in cfg.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            inside = t == header;
            continue;
        }
        if !inside || t.is_empty() || t.starts_with(['#', ';']) {
            continue;
        }
        let continued = line.starts_with([' ', '\t']);
        match t.split_once(['=', ':']) {
            Some((k, v)) if !continued => {
                let v = v.trim();
                let values = if v.is_empty() {
                    vec![]
                } else {
                    vec![v.to_owned()]
                };
                out.push((k.trim().to_owned(), values));
            }
            _ if continued => {
                if let Some((_, values)) = out.last_mut() {
                    values.push(t.to_owned());
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setup_cfg_requirements_and_test_extras_are_read() {
        let cfg = "[metadata]\nname = x\n\n[options]\npackages = find:\ninstall_requires =\n    click>=8\n    # a comment\n    rich\n\n[options.extras_require]\ntest = pytest\ndocs =\n    sphinx\ntesting =\n    hypothesis\n    pytest-cov\n";
        assert_eq!(
            setup_cfg_requires(cfg, ""),
            ["click>=8", "rich", "pytest", "hypothesis", "pytest-cov"]
        );
        // tox's `extras`, a factor's condition taken as met, adds its extras.
        let tox = "[testenv]\nextras =\n    docs\n    py39: nosuch\n";
        assert_eq!(tox_extras(tox), ["docs", "nosuch"]);
        assert_eq!(
            setup_cfg_requires(cfg, tox),
            [
                "click>=8",
                "rich",
                "pytest",
                "sphinx",
                "hypothesis",
                "pytest-cov"
            ]
        );
        assert_eq!(
            test_groups("", cfg, tox, false),
            (
                vec!["test".to_owned(), "testing".into(), "docs".into()],
                vec![]
            )
        );
        assert_eq!(
            test_groups("", cfg, "", false),
            (vec!["test".to_owned(), "testing".to_owned()], vec![])
        );
        // A dev group beside a test group is left out; alone, it is the test tools.
        let both = "[dependency-groups]\ndev = [{ include-group = \"test\" }, \"sphinx\"]\ntest = [\"pytest\"]\n";
        assert_eq!(
            test_groups(both, "", "", false),
            (vec![], vec!["test".to_owned()])
        );
        let dev = "[project]\noptional-dependencies.dev = [\"pytest\"]\n";
        assert_eq!(
            test_groups(dev, "", "", false),
            (vec!["dev".to_owned()], vec![])
        );
    }

    #[test]
    fn poetry_pdm_hatch_and_tox_name_test_tools_as_plain_requirements() {
        let pyproject = r#"
[tool.poetry.dependencies]
python = "^3.9"
requests = "^2.31"

[tool.poetry.dev-dependencies]
black = "^23"

[tool.poetry.group.test.dependencies]
pytest = "^7.4"
pytest-mock = { version = "^3.11", extras = ["extra"] }
local-thing = { path = "../local" }

[tool.poetry.group.dev.dependencies]
sphinx = "*"

[tool.pdm.dev-dependencies]
test = ["hypothesis>=6", "--index-url=https://evil.example/simple", "-e ./x"]

[tool.hatch.envs.default]
dependencies = ["coverage[toml]>=6.5", "pytest"]
"#;
        let tox = "[tox]\nenvlist = py\n\n[testenv]\ndeps =\n    pytest ~= 8.2\n    wcag-contrast-ratio\n    -r requirements.txt\n    {[base]deps}\ncommands = pytest {posargs}\n";
        let mut plain = other_test_tools(pyproject, tox);
        for (_, specs) in &mut plain {
            specs.retain(|s| plain_requirement(s));
        }
        assert_eq!(
            plain,
            [
                (
                    "Poetry's dev dependencies",
                    vec![
                        "black>=23,<24".to_owned(),
                        "pytest-mock[extra]>=3.11,<4".into(),
                        "pytest>=7.4,<8".into()
                    ]
                ),
                ("PDM's dev dependencies", vec!["hypothesis>=6".to_owned()]),
                (
                    "Hatch's environments",
                    vec!["coverage[toml]>=6.5".to_owned(), "pytest".into()]
                ),
                (
                    "tox's deps",
                    vec!["pytest ~= 8.2".to_owned(), "wcag-contrast-ratio".into()]
                ),
            ]
        );
        assert!(other_test_tools("", "").is_empty());
    }

    #[test]
    fn pre_commit_pins_its_tools_by_rev_and_local_hooks_pin_nothing() {
        let config = "repos:\n  - repo: https://github.com/astral-sh/ruff-pre-commit\n    rev: v0.4.4\n    hooks:\n      - id: ruff\n        args: [--fix]\n      - id: ruff-format\n  - repo: https://github.com/pre-commit/mirrors-mypy\n    rev: 0123456789abcdef0123456789abcdef01234567\n    hooks:\n      - id: mypy\n  - repo: local\n    hooks:\n      - id: flake8\n        entry: flake8\n";
        assert_eq!(
            precommit_pins(config),
            [
                ("ruff".to_owned(), "ruff==0.4.4".to_owned()),
                ("mypy".to_owned(), "mypy".to_owned()),
            ]
        );
        assert!(precommit_pins("repos: [unclosed").is_empty());
    }
}
