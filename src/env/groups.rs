//! PEP 735 dependency groups (`[dependency-groups]`): which ones setup installs, and what each
//! requires with the groups it includes (`{include-group = "test"}`) followed; the names of the
//! groups and extras that hold test tools, which `pyproject` picks extras by.

/// Extras and dependency groups that hold test tools (`dev` only when none of the others is
/// there).
pub(super) const TEST_GROUPS: [&str; 4] = ["test", "tests", "testing", "dev"];

/// `dev` only where no group is named for tests: a `dev` group beside a `test` one is usually
/// the docs, release and lint tools too (heavy, and not what the tests need).
pub(super) fn without_dev(mut names: Vec<String>) -> Vec<String> {
    if names.iter().any(|n| n != "dev") {
        names.retain(|n| n != "dev");
    }
    names
}

/// At most this many groups are read through includes from one group.
const MAX_INCLUDED: usize = 32;

/// Whether `name` is a name as PEP 508 and 735 spell an extra or a group (`dev-base`,
/// `tests_2`): a letter or digit at each end, letters, digits, `.`, `_` and `-` between. Only
/// such a name is ever written into a setup command: a repository's TOML keys are any string.
pub(super) fn is_name(name: &str) -> bool {
    let inner = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
        && name.chars().all(inner)
}

/// The groups setup installs (`pip install --group …`): those named for tests (`dev` only where
/// none of the others is), and where the project runs its tests with uv (`[tool.uv]` or a
/// `uv.lock`) the groups `uv run` installs by default as well — `tool.uv.default-groups`, else
/// `dev` — since that is what its tests run with (urllib3's `conftest.py` imports `trustme`,
/// which only its `dev` group names).
pub(super) fn installed(doc: &toml::Table, uv_lock: bool) -> Vec<String> {
    let Some(groups) = doc.get("dependency-groups").and_then(|g| g.as_table()) else {
        return vec![];
    };
    let named = groups.keys().filter(|k| TEST_GROUPS.contains(&k.as_str()));
    let mut names = without_dev(named.cloned().collect());
    let uv = doc.get("tool").and_then(|t| t.get("uv"));
    if uv.is_some() || uv_lock {
        let defaults = uv
            .and_then(|u| u.get("default-groups"))
            .and_then(|d| d.as_array());
        let defaults: Vec<&str> = match defaults {
            Some(list) => list.iter().filter_map(|d| d.as_str()).collect(),
            None => vec!["dev"],
        };
        for d in defaults {
            if is_name(d) && groups.contains_key(d) && !names.iter().any(|n| n == d) {
                names.push(d.to_owned());
            }
        }
    }
    names
}

/// The requirements of group `name` and of the groups it includes, each group read once.
pub(super) fn requirements(doc: &toml::Table, name: &str) -> Vec<String> {
    let groups = doc.get("dependency-groups").and_then(|g| g.as_table());
    let mut out = Vec::new();
    let mut queue = vec![name.to_owned()];
    let mut seen: Vec<String> = Vec::new();
    while let Some(group) = queue.pop() {
        if seen.contains(&group) || seen.len() >= MAX_INCLUDED {
            continue;
        }
        let entries = groups
            .and_then(|g| g.get(&group))
            .and_then(|l| l.as_array());
        seen.push(group);
        for entry in entries.into_iter().flatten() {
            match entry {
                toml::Value::String(s) => out.push(s.clone()),
                toml::Value::Table(t) => {
                    let included = t.get("include-group").and_then(|g| g.as_str());
                    queue.extend(included.map(str::to_owned));
                }
                _ => {}
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// urllib3 2.6's groups, shortened: `test` for packagers, `dev` (which includes it through
    /// `dev-base`) for its developers, who run the tests with uv.
    const URLLIB3: &str = "[dependency-groups]\ntest = [\"pytest>=8.3.4\", \"trio>=0.27.0\"]\n\
        dev-base = [{include-group = \"test\"}, \"coverage>=7.8.0\"]\n\
        dev = [{include-group = \"dev-base\"}, \"trustme>=1.2.1\"]\n\
        mypy = [{include-group = \"test\"}, \"mypy>=1.18.2\"]\n\n[tool.uv]\npackage = true\n";

    fn doc(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    #[test]
    fn a_uv_project_gets_its_default_groups_beside_the_test_ones() {
        assert_eq!(installed(&doc(URLLIB3), false), ["test", "dev"]);
        let without_uv = URLLIB3.replace("[tool.uv]\npackage = true\n", "");
        assert_eq!(installed(&doc(&without_uv), false), ["test"]);
        assert_eq!(installed(&doc(&without_uv), true), ["test", "dev"]);
        let chosen = format!("{URLLIB3}default-groups = [\"mypy\", \"missing\"]\n");
        assert_eq!(installed(&doc(&chosen), false), ["test", "mypy"]);
        assert_eq!(
            installed(&doc("[project]\nname = \"x\"\n"), true),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_groups_requirements_follow_its_includes_once() {
        let mut dev = requirements(&doc(URLLIB3), "dev");
        dev.sort();
        assert_eq!(
            dev,
            [
                "coverage>=7.8.0",
                "pytest>=8.3.4",
                "trio>=0.27.0",
                "trustme>=1.2.1"
            ]
        );
        let looped = "[dependency-groups]\na = [{include-group = \"b\"}, \"x\"]\nb = [{include-group = \"a\"}, \"y\"]\n";
        let mut a = requirements(&doc(looped), "a");
        a.sort();
        assert_eq!(a, ["x", "y"]);
        assert!(requirements(&doc(URLLIB3), "absent").is_empty());
    }
}
