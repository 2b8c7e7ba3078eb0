//! Which files a Python project's requirements files are, and which others they pull in
//! (`-r other.txt`, `-c constraints.txt`), as pip follows them: relative to the including file,
//! never outside the repository, never a URL.

/// How a requirements file pulls another in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `-r`/`--requirement`: its requirements are installed.
    Requirements,
    /// `-c`/`--constraint`: it only pins versions of what something else asks for.
    Constraints,
}

/// At most this many files are followed from one project's requirements files.
const MAX_FOLLOWED: usize = 64;

/// Whether `path` is a requirements file setup installs: `requirements*.txt` and
/// `{test,tests,testing,dev}[-_]requirements.txt` at the root, or
/// `requirements/{requirements,test,dev,base,common}*.txt`.
pub fn is_requirements_file(path: &str) -> bool {
    const NESTED: [&str; 5] = ["requirements", "test", "dev", "base", "common"];
    const PREFIXED: [&str; 4] = ["test", "tests", "testing", "dev"];
    let name = path.rsplit('/').next().unwrap_or(path);
    let prefixed = || {
        let prefix = name.strip_suffix("requirements.txt");
        prefix
            .and_then(|p| p.strip_suffix(['-', '_']))
            .is_some_and(|p| PREFIXED.contains(&p))
    };
    let named = match path.strip_prefix("requirements/") {
        Some(rest) => !rest.contains('/') && NESTED.iter().any(|n| name.starts_with(n)),
        None => !path.contains('/') && (name.starts_with("requirements") || prefixed()),
    };
    named && name.ends_with(".txt")
}

/// The files `from` (a repository path) includes, as repository paths, in the order written.
/// A URL, an absolute path, a variable or a path leaving the repository is not followed.
pub fn included(from: &str, text: &str) -> Vec<(Kind, String)> {
    super::requirement::logical_lines(text)
        .iter()
        .filter_map(|l| option(l))
        .filter_map(|(kind, target)| Some((kind, join_within(from, &target)?)))
        .collect()
}

/// Every file `files` include, and those include in turn, each once and none of `files`;
/// `read` gives a file's text (`None`: no such file, which is not followed further).
pub fn closure(
    files: &[String],
    read: &mut dyn FnMut(&str) -> Option<String>,
) -> Vec<(Kind, String)> {
    let mut found: Vec<(Kind, String)> = Vec::new();
    let mut queue: Vec<String> = files.to_vec();
    let mut seen: Vec<String> = files.to_vec();
    while let Some(file) = queue.pop() {
        let Some(text) = read(&file) else { continue };
        for (kind, path) in included(&file, &text) {
            // Named for its requirements anywhere, it is installed, not only a constraint.
            if let Some(f) = found.iter_mut().find(|(_, p)| *p == path) {
                if kind == Kind::Requirements {
                    f.0 = kind;
                }
                continue;
            }
            if seen.contains(&path) || found.len() >= MAX_FOLLOWED {
                continue;
            }
            seen.push(path.clone());
            found.push((kind, path.clone()));
            queue.push(path);
        }
    }
    found
}

/// The include a logical line makes, with its raw target: `-r x`, `-rx`, `--requirement x`,
/// `--requirement=x`, and the same for `-c`/`--constraint`.
fn option(line: &str) -> Option<(Kind, String)> {
    let line = match line.find(" #").or_else(|| line.find("\t#")) {
        Some(i) => &line[..i],
        None => line,
    };
    let line = line.trim();
    let forms = [
        ("--requirement", Kind::Requirements),
        ("--constraint", Kind::Constraints),
        ("-r", Kind::Requirements),
        ("-c", Kind::Constraints),
    ];
    let (kind, rest) = forms.iter().find_map(|(flag, kind)| {
        let rest = line.strip_prefix(flag)?;
        let long = flag.starts_with("--");
        // A long flag stands alone or takes `=`; a short one may be glued to its value.
        let rest = match rest.strip_prefix('=') {
            Some(v) if long => v,
            _ if long && !rest.starts_with([' ', '\t']) => return None,
            _ => rest,
        };
        Some((*kind, rest))
    })?;
    let target = rest.trim().trim_matches(['"', '\'']);
    (!target.is_empty()).then(|| (kind, target.to_owned()))
}

/// `target` relative to the directory of `from`, as a normalised repository path; `None` for a
/// URL, an absolute path, a variable or a path that leaves the repository.
fn join_within(from: &str, target: &str) -> Option<String> {
    if target.contains("://")
        || target.starts_with("file:")
        || target.starts_with(['/', '~', '\\'])
        || target.contains('$')
        || target.chars().any(char::is_control)
    {
        return None;
    }
    let mut parts: Vec<&str> = from.split('/').collect();
    parts.pop();
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirements_files_are_those_setup_installs() {
        for p in [
            "requirements.txt",
            "requirements-dev.txt",
            "requirements/dev.txt",
            "requirements/testing.txt",
            "requirements/base-py3.txt",
            "dev-requirements.txt",
            "test-requirements.txt",
            "test_requirements.txt",
        ] {
            assert!(is_requirements_file(p), "{p}");
        }
        for p in [
            "docs/requirements.txt",
            "requirements/docs.txt",
            "requirements/sub/dev.txt",
            "tests.txt",
            "requirements.in",
            "docs-requirements.txt",
            "sub/dev-requirements.txt",
            "devrequirements.txt",
        ] {
            assert!(!is_requirements_file(p), "{p}");
        }
    }

    #[test]
    fn includes_are_read_in_every_form_pip_takes_relative_to_the_file() {
        let text = "-r testing.txt\n--requirement typechecks.txt\n--requirement=../docs/requirements.txt\n-rpackaging.txt # build\n-c ../constraints.txt\n--constraint=pins.txt\nrequests\n-e .\n--requirements-extra x\n-r \\\n  split.txt\n";
        assert_eq!(
            included("requirements/development.txt", text),
            [
                (Kind::Requirements, "requirements/testing.txt".to_owned()),
                (Kind::Requirements, "requirements/typechecks.txt".to_owned()),
                (Kind::Requirements, "docs/requirements.txt".to_owned()),
                (Kind::Requirements, "requirements/packaging.txt".to_owned()),
                (Kind::Constraints, "constraints.txt".to_owned()),
                (Kind::Constraints, "requirements/pins.txt".to_owned()),
                (Kind::Requirements, "requirements/split.txt".to_owned()),
            ]
        );
    }

    #[test]
    fn nothing_outside_the_repository_nor_a_url_is_followed() {
        let text = "-r ../../etc/passwd\n-r /etc/passwd\n-r https://x.example/r.txt\n-r file:///etc/passwd\n-r ~/r.txt\n-r ${HOME}/r.txt\n-c ../../x.txt\n";
        assert_eq!(included("requirements/dev.txt", text), []);
        assert_eq!(included("requirements.txt", "-r ../x.txt\n"), []);
    }

    #[test]
    fn the_closure_follows_includes_once_each_and_a_file_installed_anywhere_is_installed() {
        let files = [
            ("requirements/dev.txt", "-r testing.txt\n-c ../pins.txt\n"),
            (
                "requirements/testing.txt",
                "pytest\n-r dev.txt\n-r ../pins.txt\n",
            ),
            ("pins.txt", "pytest==8.3.3\n"),
        ];
        let mut read = |p: &str| {
            files
                .iter()
                .find(|(f, _)| *f == p)
                .map(|(_, t)| (*t).to_owned())
        };
        let found = closure(&["requirements/dev.txt".to_owned()], &mut read);
        assert_eq!(
            found,
            [
                (Kind::Requirements, "requirements/testing.txt".to_owned()),
                (Kind::Requirements, "pins.txt".to_owned()),
            ]
        );
    }
}
