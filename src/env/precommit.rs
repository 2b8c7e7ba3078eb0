//! The lint and typecheck commands a Python project runs itself, read from its configuration
//! rather than guessed: a `.pre-commit-config.yaml` hook (its `args`, `files` and `exclude`, on
//! the files pre-commit would give it), a tox environment's `commands`, a Makefile target, and
//! mypy's own `files` setting. A bare `tool .` checks
//! what the project never checks (`docs/examples/setup.py` beside `setup.py`: "Duplicate
//! module named setup") and fails every change for it.

/// Runs a tool on the files a pre-commit hook would get (`precommit/hook_files.py`): `argv[1]`
/// the hook's `files` pattern, `argv[2]` its `exclude`, `argv[3]` the base's root `.gitignore`,
/// then the tool and its arguments; the Python files that `.gitignore` does not ignore, as
/// pre-commit takes those git tracks.
const ON_HOOK_FILES: &str = include_str!("precommit/hook_files.py");

/// A root `.gitignore` longer than this is not passed to [`ON_HOOK_FILES`].
const MAX_GITIGNORE: usize = 32 * 1024;

/// Arguments that make a hook change files: a gate reports, it does not fix.
const FIXING: &[&str] = &[
    "--fix",
    "--unsafe-fixes",
    "--exit-non-zero-on-fix",
    "--show-fixes",
];

/// The command `tool`'s pre-commit hook runs (`ruff`, `mypy`, `flake8`), on the files the base's
/// root `gitignore` leaves, with where it came from; `None` when no hook of it is configured.
pub fn hook_command(config: &str, tool: &str, gitignore: &str) -> Option<(String, String)> {
    let (id, hook) = tool_hook(config, tool)?;
    let entry: &[&str] = match tool {
        "ruff" => &["ruff", "check", "--force-exclude"],
        _ => &[tool],
    };
    let args: Vec<String> = hook["args"]
        .as_sequence()
        .into_iter()
        .flatten()
        .filter_map(|a| a.as_str())
        .filter(|a| !FIXING.contains(&a.split('=').next().unwrap_or(a)))
        .map(str::to_owned)
        .collect();
    let files = hook["files"].as_str().unwrap_or("");
    let exclude = hook["exclude"].as_str().unwrap_or("");
    let mut words: Vec<String> = vec![
        "python3".into(),
        "-c".into(),
        ON_HOOK_FILES.into(),
        files.into(),
        exclude.into(),
        // Larger than any written by hand: its rules are left out rather than the command grown.
        if gitignore.len() <= MAX_GITIGNORE {
            gitignore.into()
        } else {
            String::new()
        },
    ];
    words.extend(entry.iter().map(|w| (*w).to_owned()));
    words.extend(args);
    let command: Vec<String> = words.iter().map(|w| crate::sandbox::quote(w)).collect();
    let mut from = format!(".pre-commit-config.yaml's {id} hook");
    if !files.is_empty() || !exclude.is_empty() {
        from.push_str(" (its files and exclude patterns)");
    }
    Some((command.join(" "), from))
}

/// What setup installs for the lint and typecheck hooks, as requirement lines for the download:
/// the tools at the versions pre-commit pins and the hooks' `additional_dependencies`, those
/// setup leaves out as refusals with the reason.
pub fn installs(config: &str) -> Vec<super::requirement::Line> {
    use super::requirement::{Line, from_index, line};
    let pins = super::pyproject::precommit_pins(config);
    let mut lines: Vec<Line> = pins.iter().map(|(_, spec)| line(spec)).collect();
    for tool in ["ruff", "mypy", "flake8"] {
        let (plain, refused) = hook_dependencies(config, tool);
        lines.extend(
            plain.iter().chain(&refused).map(|d| {
                from_index(d).map_or_else(|why| Line::Refused(d.clone(), why), Line::Index)
            }),
        );
    }
    lines
}

/// The first hook that runs `tool` (`ruff`, `mypy`, `flake8`), with its id.
fn tool_hook(config: &str, tool: &str) -> Option<(String, serde_yaml_ng::Value)> {
    let doc = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(config).ok()?;
    let hooks = doc["repos"]
        .as_sequence()?
        .iter()
        .flat_map(|r| r["hooks"].as_sequence().into_iter().flatten());
    for hook in hooks {
        let id = hook["id"].as_str().unwrap_or_default();
        if matches!(
            (tool, id),
            ("ruff", "ruff" | "ruff-check") | ("mypy", "mypy") | ("flake8", "flake8")
        ) {
            return Some((id.to_owned(), hook.clone()));
        }
    }
    None
}

/// What pre-commit installs beside `tool`'s hook (`additional_dependencies: [types-pytz]`:
/// mypy's stubs, flake8's plugins), as `(plain, refused)`: only a requirement pip resolves from
/// the index is installed; an option (`--index-url=…`), a URL or a path is refused.
pub fn hook_dependencies(config: &str, tool: &str) -> (Vec<String>, Vec<String>) {
    let Some((_, hook)) = tool_hook(config, tool) else {
        return (vec![], vec![]);
    };
    let all = hook["additional_dependencies"]
        .as_sequence()
        .into_iter()
        .flatten();
    all.filter_map(|d| d.as_str().map(str::trim))
        .filter(|d| !d.is_empty())
        .map(str::to_owned)
        .partition(|d| super::pyproject::plain_requirement(d))
}

/// The command a tox environment runs `tool` with (`[testenv:type] commands = mypy src`: `mypy
/// src`), `{posargs}` and `{toxinidir}/` left out; with where it came from.
pub fn tox_command(tox_ini: &str, tool: &str) -> Option<(String, String)> {
    let (section, command) = tox_env(tox_ini, tool)?;
    Some((command, format!("tox.ini's [{section}]")))
}

/// What the tox environment that runs `tool` installs for it (`[testenv:mypy] deps = mypy
/// types-requests`), where its `deps` name the tool: their plain requirements, never an option,
/// a path or a URL. Empty where no environment runs the tool or installs it.
pub fn tox_env_deps(tox_ini: &str, tool: &str) -> Vec<String> {
    let Some((section, _)) = tox_env(tox_ini, tool) else {
        return vec![];
    };
    let deps: Vec<String> = values(tox_ini, &section, "deps")
        .into_iter()
        .filter(|d| super::pyproject::plain_requirement(d))
        .collect();
    let names_tool = deps
        .iter()
        .any(|d| super::pyproject::requirement_name(d) == tool);
    if names_tool { deps } else { vec![] }
}

/// The tox environment (`testenv:type`) whose `commands` run `tool`, with that command.
fn tox_env(tox_ini: &str, tool: &str) -> Option<(String, String)> {
    let mut section = String::new();
    let mut in_commands = false;
    for line in tox_ini.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            section = t.trim_matches(['[', ']']).to_owned();
            in_commands = false;
            continue;
        }
        if !section.starts_with("testenv") || t.starts_with(['#', ';']) {
            continue;
        }
        let continued = line.starts_with([' ', '\t']);
        let value = match t.split_once('=') {
            Some((k, v)) if !continued => {
                in_commands = k.trim() == "commands";
                v.trim()
            }
            _ if continued && in_commands => t,
            _ => continue,
        };
        if !in_commands || value.is_empty() {
            continue;
        }
        let command = value
            .replace("{posargs}", "")
            .replace("{toxinidir}/", "")
            .trim()
            .to_owned();
        let runs = command.split_whitespace().next() == Some(tool)
            || command.starts_with(&format!("python -m {tool}"));
        if runs && !command.contains(['{', '}', '`', '$', ';', '&', '|', '>', '<']) {
            return Some((section, command));
        }
    }
    None
}

/// The values of `key` in the INI `section` of `text`, one a line (`deps = a` and the indented
/// lines under it), comments left out.
fn values(text: &str, section: &str, key: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut inside, mut in_key) = (false, false);
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            inside = t.trim_matches(['[', ']']) == section;
            in_key = false;
            continue;
        }
        if !inside || t.is_empty() || t.starts_with(['#', ';']) {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            if in_key {
                out.push(t.to_owned());
            }
            continue;
        }
        in_key = false;
        if let Some((k, v)) = t.split_once('=') {
            in_key = k.trim() == key;
            if in_key && !v.trim().is_empty() {
                out.push(v.trim().to_owned());
            }
        }
    }
    out
}

/// `make <target>` for a Makefile target named for the gate (`lint`, `typecheck`, `mypy`…),
/// without prerequisites, whose recipe runs `tool`; with where it came from.
pub fn make_command(makefile: &str, gate: &str, tool: &str) -> Option<(String, String)> {
    let names: &[&str] = match gate {
        "lint" => &["lint", tool],
        _ => &["typecheck", "type-check", "types", "mypy"],
    };
    let mut target: Option<&str> = None;
    for line in makefile.lines() {
        if let Some(recipe) = line.strip_prefix('\t') {
            let recipe = recipe.trim_start_matches(['@', '-', ' ']);
            let runs = recipe.split_whitespace().next() == Some(tool)
                || recipe.contains(&format!("-m {tool}"));
            if let Some(t) = target.filter(|_| runs) {
                return Some((format!("make {t}"), format!("the Makefile's `{t}` target")));
            }
            continue;
        }
        // Only a target of its own: a prerequisite may install or download.
        target = line
            .split_once(':')
            .filter(|(_, rest)| rest.trim().is_empty())
            .map(|(t, _)| t.trim())
            .filter(|t| names.contains(t));
    }
    None
}

/// Whether mypy's own configuration names what it checks (`files` in `[tool.mypy]`, or in the
/// `[mypy]` section of `mypy.ini` or `setup.cfg`): then `mypy` alone checks those.
pub fn mypy_names_its_files(pyproject: &str, mypy_ini: &str, setup_cfg: &str) -> bool {
    let in_pyproject = pyproject
        .parse::<toml::Table>()
        .ok()
        .and_then(|d| d.get("tool")?.get("mypy")?.get("files").cloned())
        .is_some();
    let in_ini = |text: &str| {
        let mut inside = false;
        text.lines().any(|l| {
            let t = l.trim();
            if t.starts_with('[') {
                inside = t == "[mypy]";
                return false;
            }
            inside && t.split_once('=').is_some_and(|(k, _)| k.trim() == "files")
        })
    };
    in_pyproject || in_ini(mypy_ini) || in_ini(setup_cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hooks_args_files_and_exclude_make_the_command_and_fixing_is_left_out() {
        let config = "repos:\n  - repo: https://github.com/pre-commit/mirrors-mypy\n    rev: v1.10.0\n    hooks:\n      - id: mypy\n        args: [--ignore-missing-imports, --strict]\n        files: ^src/\n        exclude: ^docs/\n  - repo: https://github.com/astral-sh/ruff-pre-commit\n    rev: v0.6.9\n    hooks:\n      - id: ruff\n        args: [--fix, --exit-non-zero-on-fix, --select=I]\n";
        let (mypy, from) = hook_command(config, "mypy", "*.gen.py\n").unwrap();
        assert!(
            mypy.ends_with(
                "'^src/' '^docs/' '*.gen.py\n' 'mypy' '--ignore-missing-imports' '--strict'"
            ),
            "{mypy}"
        );
        assert_eq!(
            from,
            ".pre-commit-config.yaml's mypy hook (its files and exclude patterns)"
        );
        let (ruff, _) = hook_command(config, "ruff", &"x".repeat(MAX_GITIGNORE + 1)).unwrap();
        assert!(
            ruff.ends_with("'' '' '' 'ruff' 'check' '--force-exclude' '--select=I'"),
            "{ruff}"
        );
        assert_eq!(hook_command(config, "flake8", ""), None);
        assert_eq!(hook_command("repos: [", "mypy", ""), None);
    }

    #[test]
    fn tox_and_make_give_the_command_the_project_runs() {
        let tox = "[tox]\nenvlist = py\n\n[testenv]\ncommands = pytest {posargs}\n\n[testenv:type]\ndeps = mypy\ncommands =\n    mypy {toxinidir}/src {posargs}\n\n[testenv:lint]\ncommands = ruff check src; rm -rf /\n";
        assert_eq!(
            tox_command(tox, "mypy"),
            Some(("mypy src".to_owned(), "tox.ini's [testenv:type]".to_owned()))
        );
        // A command line with shell syntax is not taken.
        assert_eq!(tox_command(tox, "ruff"), None);
        let make = "SRC := src\n\n.PHONY: lint typecheck\nlint: deps\n\t@ruff check $(SRC)\n\ntypecheck:\n\tpython -m mypy $(SRC)\n";
        assert_eq!(
            make_command(make, "typecheck", "mypy"),
            Some((
                "make typecheck".to_owned(),
                "the Makefile's `typecheck` target".to_owned()
            ))
        );
        // A target with a prerequisite (which may install) is not taken.
        assert_eq!(make_command(make, "lint", "ruff"), None);
        assert_eq!(make_command(make, "lint", "flake8"), None);
    }

    /// pytest-mock's shape: setuptools-scm writes `src/pytest_mock/_version.py` at install,
    /// which `.gitignore` names and pre-commit never lints; the hook's files are the rest. The
    /// rules are the base's, passed in: a `.gitignore` in the worktree (a change's) is not read.
    #[test]
    fn a_hook_gets_the_python_files_the_bases_gitignore_leaves() {
        let gitignore = "src/pkg/_version.py\n*.gen.py\n/top.py\ndocs/_build/\n!keep/x.gen.py\n\
                         sub/**/skip.py\n# a comment\n/[ab].py\n";
        let dir = tempfile::tempdir().unwrap();
        let files = [
            (".gitignore", "src/pkg/a.py\n"),
            ("sub/.gitignore", "kept.py\n"),
            ("src/pkg/_version.py", ""),
            ("src/pkg/a.py", ""),
            ("x.gen.py", ""),
            ("keep/x.gen.py", ""),
            ("top.py", ""),
            ("sub/top.py", ""),
            ("docs/_build/b.py", ""),
            ("docs/c.pyi", ""),
            ("sub/deep/skip.py", ""),
            ("sub/kept.py", ""),
            ("b.py", ""),
            ("build/z.py", ""),
            ("notes.txt", ""),
        ];
        for (path, text) in files {
            let p = dir.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let listed = |files: &str, exclude: &str| {
            let out = std::process::Command::new("python3")
                .args(["-c", ON_HOOK_FILES, files, exclude, gitignore, "echo"])
                .current_dir(dir.path())
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            String::from_utf8(out.stdout).unwrap().trim().to_owned()
        };
        assert_eq!(
            listed("", ""),
            "docs/c.pyi keep/x.gen.py src/pkg/a.py sub/kept.py sub/top.py"
        );
        assert_eq!(listed("^(src|sub)/", "kept"), "src/pkg/a.py sub/top.py");
    }

    /// The download takes what setup installs for a hook, and says which dependency it refused.
    #[test]
    fn what_pre_commit_installs_beside_a_hook_is_downloaded_and_an_option_refused() {
        use crate::env::requirement::Line;
        let config = "repos:\n- repo: local\n  hooks:\n  - id: mypy\n    \
                      additional_dependencies: [types-pytz, '--index-url=http://x.example/']\n";
        let lines = installs(config);
        assert!(
            matches!(&lines[..], [Line::Index(p), Line::Refused(r, _)]
            if p == "types-pytz" && r.starts_with("--index-url")),
            "{lines:?}"
        );
    }

    /// pyjwt's tox environment that runs mypy installs it; one that installs nothing for it,
    /// or an option, gives nothing.
    #[test]
    fn a_tox_environment_that_runs_a_tool_installs_its_deps() {
        let tox = "[testenv]\ndeps = pytest\n\n[testenv:py{39,313}{,-crypto}-mypy]\n\
                   dependency_groups =\n    tests\ndeps =\n    mypy\n    types-requests\n    \
                   --index-url=http://x.example/\ncommands =\n    mypy\n";
        assert_eq!(tox_env_deps(tox, "mypy"), ["mypy", "types-requests"]);
        assert!(tox_env_deps(tox, "ruff").is_empty());
        let without = tox.replace("    mypy\n    types", "    types");
        assert!(tox_env_deps(&without, "mypy").is_empty());
    }

    #[test]
    fn mypy_files_are_read_from_each_place_it_keeps_them() {
        assert!(mypy_names_its_files(
            "[tool.mypy]\nfiles = [\"src\"]\n",
            "",
            ""
        ));
        assert!(mypy_names_its_files("", "[mypy]\nfiles = src, tests\n", ""));
        assert!(mypy_names_its_files(
            "",
            "",
            "[mypy]\nfiles=src\n[flake8]\n"
        ));
        assert!(!mypy_names_its_files(
            "[tool.mypy]\nstrict = true\n",
            "",
            "[flake8]\nfiles = x\n"
        ));
    }
}
