//! Poetry's dependency tables as pip requirements: `mypy = "1.19.1"` is `mypy==1.19.1`, `pytest
//! = "^7.2"` is `pytest>=7.2,<8`. A project that pins its linter in a Poetry group gets that
//! version, not the newest, whose findings differ.
//!
//! Poetry's constraint syntax (its documentation's "Dependency specification"): `^` allows
//! changes that do not modify the left-most non-zero part, `~` only patch-level changes (minor
//! ones for a major version alone), `1.2.*` a wildcard, a bare version that version, `*` any;
//! comparisons as pip's, joined by `,` or spaces. An alternative (`||`) has no pip spelling: that
//! dependency is taken by name, as is anything not read here.

/// The requirements of a Poetry dependency table, `name[extras]<constraint>`, leaving out
/// Python itself and what does not come from an index (`path`, `git`, `url`). A dependency
/// constrained by Python version (`python = "<3.8"`, or a list of such) becomes one requirement
/// each with its `python_full_version` marker, which pip reads.
pub(super) fn requirements(table: Option<toml::Value>) -> Vec<String> {
    let Some(toml::Value::Table(t)) = table else {
        return vec![];
    };
    let mut out = Vec::new();
    for (name, spec) in t.iter().filter(|(name, _)| name.as_str() != "python") {
        match spec {
            toml::Value::Array(each) => {
                let read: Option<Vec<String>> = each.iter().map(|s| entry(name, s)).collect();
                // One that is not read (a path, a marker of its own): the name alone, once.
                out.extend(read.unwrap_or_else(|| vec![name.clone()]));
            }
            // One that is not read (a marker of its own, an odd `python`): by name, as before.
            _ => out.extend(entry(name, spec).or_else(|| from_index(spec).then(|| name.clone()))),
        }
    }
    out
}

/// Whether a dependency comes from an index: not a `path`, `git` or `url` one.
fn from_index(spec: &toml::Value) -> bool {
    !["path", "git", "url"]
        .iter()
        .any(|k| spec.get(*k).is_some())
}

/// One constraint of dependency `name`: `"^1.2"` or `{ version, extras, python }`; `None` for
/// what does not come from an index or is not read here.
fn entry(name: &str, spec: &toml::Value) -> Option<String> {
    let (version, extras, python) = match spec {
        toml::Value::String(v) => (Some(v.as_str()), vec![], None),
        toml::Value::Table(o) => {
            if !from_index(spec) || o.contains_key("markers") {
                return None;
            }
            let extras = o.get("extras").and_then(|e| e.as_array());
            let extras = extras.into_iter().flatten().filter_map(|x| x.as_str());
            let str_of = |k: &str| o.get(k).and_then(|v| v.as_str());
            (str_of("version"), extras.collect(), str_of("python"))
        }
        _ => return None,
    };
    let mut requirement = name.to_owned();
    if !extras.is_empty() {
        requirement.push_str(&format!("[{}]", extras.join(",")));
    }
    requirement.push_str(&version.and_then(constraint).unwrap_or_default());
    if let Some(python) = python {
        let clauses: Vec<String> = constraint(python)?
            .split(',')
            .filter(|c| !c.is_empty())
            .map(|c| {
                let at = c.find(|ch: char| !"<>=!~".contains(ch)).unwrap_or(c.len());
                format!("python_full_version {} \"{}\"", &c[..at], &c[at..])
            })
            .collect();
        if !clauses.is_empty() {
            requirement.push_str(&format!("; {}", clauses.join(" and ")));
        }
    }
    Some(requirement)
}

/// Poetry's `constraint` in pip's spelling (`^1.2` → `>=1.2,<2`), empty for any version; `None`
/// where pip has no spelling for it or it is not read here.
pub(super) fn constraint(constraint: &str) -> Option<String> {
    let c = constraint.trim();
    if c.is_empty() || c == "*" {
        return Some(String::new());
    }
    if c.contains('|') {
        return None;
    }
    // `>= 1.2, < 2.0` and `>=1.2 <2.0` alike: an operator with its version is one part.
    let mut parts: Vec<String> = Vec::new();
    for word in c.split([',', ' ']).filter(|w| !w.is_empty()) {
        match parts.last_mut() {
            Some(last) if last.chars().all(|ch| "<>=!~^".contains(ch)) => last.push_str(word),
            _ => parts.push(word.to_owned()),
        }
    }
    let specs: Option<Vec<String>> = parts.iter().map(|p| one(p)).collect();
    Some(specs?.join(","))
}

/// One constraint, `^1.2`, `~1.2.3`, `1.2.*`, `>=1.2`, `1.2.3`.
fn one(c: &str) -> Option<String> {
    if let Some(v) = c.strip_prefix('^') {
        let release = release(v)?;
        // The left-most non-zero part, or the last given one where all are zero.
        let at = release
            .iter()
            .position(|&n| n != 0)
            .unwrap_or(release.len() - 1);
        return Some(format!(">={v},<{}", bumped(&release, at)));
    }
    if let Some(v) = c.strip_prefix('~').filter(|v| !v.starts_with('=')) {
        let release = release(v)?;
        let at = if release.len() == 1 { 0 } else { 1 };
        return Some(format!(">={v},<{}", bumped(&release, at)));
    }
    let op_len = c.find(|ch: char| !"<>=!~".contains(ch)).unwrap_or(c.len());
    let (op, v) = c.split_at(op_len);
    if !version_like(v) {
        return None;
    }
    match op {
        "" | "=" => Some(format!("=={v}")),
        "==" | "!=" | ">=" | "<=" | ">" | "<" | "~=" => Some(format!("{op}{v}")),
        _ => None,
    }
}

/// The release numbers of `v` (`1.2.3b1`: 1, 2, 3), `None` unless it is a version.
fn release(v: &str) -> Option<Vec<u64>> {
    if !version_like(v) || v.contains('*') {
        return None;
    }
    let end = v
        .find(|ch: char| !(ch.is_ascii_digit() || ch == '.'))
        .unwrap_or(v.len());
    let numbers: Option<Vec<u64>> = v[..end]
        .trim_end_matches('.')
        .split('.')
        .map(|n| n.parse().ok())
        .collect();
    numbers.filter(|n| !n.is_empty() && n.len() <= 6)
}

/// `release` up to part `at`, that part one more: (1, 2, 3) at 1 → `1.3`.
fn bumped(release: &[u64], at: usize) -> String {
    let mut parts: Vec<String> = release[..at].iter().map(u64::to_string).collect();
    parts.push((release[at] + 1).to_string());
    parts.join(".")
}

/// A version as Poetry and pip write it: a digit first, then digits, letters, `.`, `*`, `+`,
/// `-`, `!`.
fn version_like(v: &str) -> bool {
    v.starts_with(|c: char| c.is_ascii_digit())
        && v.len() <= 64
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || ".*+-!".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poetrys_constraints_in_pips_spelling() {
        let cases = [
            ("^1.2.3", ">=1.2.3,<2"),
            ("^1.2", ">=1.2,<2"),
            ("^0.2.3", ">=0.2.3,<0.3"),
            ("^0.0.3", ">=0.0.3,<0.0.4"),
            ("^0.0", ">=0.0,<0.1"),
            ("^0", ">=0,<1"),
            ("^7.2.0", ">=7.2.0,<8"),
            ("~1.2.3", ">=1.2.3,<1.3"),
            ("~1.2", ">=1.2,<1.3"),
            ("~1", ">=1,<2"),
            ("~=1.2", "~=1.2"),
            ("1.19.1", "==1.19.1"),
            ("=1.0", "==1.0"),
            ("1.2.*", "==1.2.*"),
            (">= 1.2, < 2.0", ">=1.2,<2.0"),
            (">=1.2 <2.0", ">=1.2,<2.0"),
            ("!=1.5", "!=1.5"),
            ("^2022.9.29", ">=2022.9.29,<2023"),
            ("^1.0.0b1", ">=1.0.0b1,<2"),
            ("*", ""),
        ];
        for (poetry, pip) in cases {
            assert_eq!(constraint(poetry).as_deref(), Some(pip), "{poetry}");
        }
        for unread in [
            "^1.2 || ^2.0",
            "latest",
            "^",
            "~x",
            ">=1.2; --index-url",
            "==1 -e x",
        ] {
            assert_eq!(constraint(unread), None, "{unread}");
        }
    }

    /// tomlkit 0.15.1's dev group pins mypy: the typecheck must run that version. What is not
    /// read here (a marker of its own, an alternative) is still installed, by name.
    #[test]
    fn a_groups_versions_and_extras_are_kept() {
        let table: toml::Value = toml::from_str(
            "python = \">=3.9\"\npytest = \"^7.2.0\"\nmypy = \"1.19.1\"\nmock = { version = \"~3.11\", \
             extras = [\"x\"] }\nany = \"*\"\nlocal = { path = \"../l\" }\nalt = \"^1 || ^2\"\n\
             multi = [{ version = \"^1\", python = \"<3.10\" }]\n\
             xdist = { version = \"^3\", markers = \"sys_platform != 'win32'\" }\n\
             odd = { version = \"^1\", python = \"3.8 || 3.9\" }\n",
        )
        .unwrap();
        let mut got = requirements(Some(table));
        got.sort();
        assert_eq!(
            got,
            [
                "alt",
                "any",
                "mock[x]>=3.11,<3.12",
                "multi>=1,<2; python_full_version < \"3.10\"",
                "mypy==1.19.1",
                "odd",
                "pytest>=7.2.0,<8",
                "xdist"
            ]
        );
    }

    /// cleo 2.1.0's dev group: mypy `^1.0` below Python 3.8 and `^1.5` from it; pip picks by
    /// the markers.
    #[test]
    fn a_constraint_for_each_python_is_a_requirement_with_its_marker() {
        let table: toml::Value = toml::from_str(
            "mypy = [\n  { version = \"^1.0\", python = \"<3.8\" },\n  { version = \"^1.5\", \
             python = \">=3.8\" },\n]\nold = { version = \"^2\", python = \"^3.7\" }\n\
             odd = [{ version = \"^1\", markers = \"sys_platform == 'win32'\" }]\n",
        )
        .unwrap();
        let got = requirements(Some(table));
        let want = [
            "mypy>=1.0,<2; python_full_version < \"3.8\"",
            "mypy>=1.5,<2; python_full_version >= \"3.8\"",
            "odd",
            "old>=2,<3; python_full_version >= \"3.7\" and python_full_version < \"4\"",
        ];
        assert_eq!(got, want);
        for r in &got {
            assert!(crate::env::pyproject::plain_requirement(r), "{r}");
        }
    }
}
