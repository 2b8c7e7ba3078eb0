//! What a change's Node manifests may download: packages from the registry only, each pinned
//! by an `integrity` in the lockfile. A git, file, link, tarball-URL or `exec:` dependency is
//! refused with the reason before the download phase runs, because npm prepares a git
//! dependency by running its scripts even under `--ignore-scripts` — with the network open.
//! Workspace links inside the repository (its own packages) are the project's code and pass.

/// Why each dependency in the Node dependency files (`text` gives a file's content) is refused,
/// one line each ("`evil` in package.json: a git dependency (`git+https://…`)").
pub fn refused(paths: &[String], text: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    let mut out = Vec::new();
    for path in paths {
        let Some(content) = text(path) else { continue };
        let name = path.rsplit('/').next().unwrap_or(path);
        match name {
            "package.json" => manifest(path, &content, &mut out),
            "package-lock.json" | "npm-shrinkwrap.json" => lockfile(path, &content, &mut out),
            "yarn.lock" => yarn(path, &content, &mut out),
            "pnpm-lock.yaml" => pnpm(path, &content, &mut out),
            _ => {}
        }
    }
    out
}

/// The dependency tables of a `package.json`.
const TABLES: [&str; 5] = [
    "dependencies",
    "devDependencies",
    "optionalDependencies",
    "peerDependencies",
    "overrides",
];

fn manifest(path: &str, content: &str, out: &mut Vec<String>) {
    let Ok(json) = serde_json::from_str::<serde_json::Value>(content) else {
        out.push(format!(
            "{path}: not JSON, so its dependencies cannot be checked"
        ));
        return;
    };
    for table in TABLES {
        let Some(deps) = json.get(table).and_then(|d| d.as_object()) else {
            continue;
        };
        for (name, spec) in deps {
            // `overrides` may nest objects: their leaves are specs too.
            let Some(spec) = spec.as_str() else { continue };
            if let Some(why) = spec_refusal(spec) {
                out.push(format!("`{}` in {path}: {why}", shown(name)));
            }
        }
    }
}

/// Why a dependency spec of `package.json` is not a registry package, if it is not.
fn spec_refusal(spec: &str) -> Option<String> {
    let spec = spec.trim();
    if let Some(alias) = spec.strip_prefix("npm:") {
        // `npm:@scope/name@^1`: the alias's own range must be a registry range.
        let range = alias.rsplit_once('@').map(|(_, r)| r).unwrap_or("");
        return spec_refusal(range).map(|_| {
            format!(
                "an alias to something not from the registry (`{}`)",
                shown(spec)
            )
        });
    }
    if spec.starts_with("workspace:") {
        return None;
    }
    let range_chars = |c: char| c.is_ascii_alphanumeric() || " .^~<>=|*-+xX".contains(c);
    if spec.chars().all(range_chars) {
        return None;
    }
    let kind = if spec.starts_with("git") || spec.contains(".git") || spec.starts_with("github:") {
        "a git dependency"
    } else if spec.starts_with("file:")
        || spec.starts_with("link:")
        || spec.starts_with('.')
        || spec.starts_with('/')
    {
        "a local path"
    } else if spec.starts_with("http:") || spec.starts_with("https:") {
        "a tarball URL"
    } else if spec.contains('/') {
        "a GitHub shorthand (`owner/repo`)"
    } else {
        "not a version range of a registry package"
    };
    Some(format!("{kind} (`{}`)", shown(spec)))
}

/// `package-lock.json` (v2/v3 `packages`, v1 `dependencies`): every package from the registry,
/// with an `integrity`; workspace links only inside the repository.
fn lockfile(path: &str, content: &str, out: &mut Vec<String>) {
    let Ok(json) = serde_json::from_str::<serde_json::Value>(content) else {
        out.push(format!(
            "{path}: not JSON, so its packages cannot be checked"
        ));
        return;
    };
    if let Some(packages) = json.get("packages").and_then(|p| p.as_object()) {
        for (at, entry) in packages.iter().filter(|(k, _)| !k.is_empty()) {
            if let Some(why) = entry_refusal(entry) {
                out.push(format!("`{}` in {path}: {why}", shown(at)));
            }
        }
        return;
    }
    let mut stack: Vec<(String, &serde_json::Value)> = json
        .get("dependencies")
        .and_then(|d| d.as_object())
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v))
        .collect();
    while let Some((name, entry)) = stack.pop() {
        if let Some(why) = entry_refusal(entry) {
            out.push(format!("`{}` in {path}: {why}", shown(&name)));
        }
        let nested = entry.get("dependencies").and_then(|d| d.as_object());
        stack.extend(nested.into_iter().flatten().map(|(k, v)| (k.clone(), v)));
    }
}

fn entry_refusal(entry: &serde_json::Value) -> Option<String> {
    let text = |k: &str| entry.get(k).and_then(|v| v.as_str());
    let resolved = text("resolved").or_else(|| text("version").filter(|v| v.contains(':')));
    if entry.get("link").and_then(|l| l.as_bool()) == Some(true) {
        let inside = resolved.is_some_and(|r| {
            !r.is_empty()
                && !r.starts_with('/')
                && !r.contains(':')
                && !r.split('/').any(|c| c == "..")
        });
        return (!inside).then(|| {
            format!(
                "a link outside the repository (`{}`)",
                shown(resolved.unwrap_or(""))
            )
        });
    }
    if entry.get("inBundle").and_then(|b| b.as_bool()) == Some(true) {
        return None;
    }
    let Some(resolved) = resolved else {
        return Some("no `resolved` source: it cannot be checked to come from the registry".into());
    };
    if !registry_tarball(resolved) {
        return Some(format!("not a registry package (`{}`)", shown(resolved)));
    }
    text("integrity")
        .is_none()
        .then(|| "no `integrity`: the download could not be checked".into())
}

/// A registry's tarball: `https://<registry>/<name>/-/<name>-<version>.tgz`.
fn registry_tarball(url: &str) -> bool {
    let url = url.split('#').next().unwrap_or(url);
    url.starts_with("https://") && url.contains("/-/") && url.ends_with(".tgz")
}

/// Yarn's lockfiles: v1 `resolved "…"` lines must be registry tarballs; Berry's `resolution:`
/// lines must use the `npm:` or `workspace:` protocol.
fn yarn(path: &str, content: &str, out: &mut Vec<String>) {
    for line in content.lines().map(str::trim) {
        let value = |key: &str| {
            line.strip_prefix(key)
                .map(|v| v.trim().trim_matches('"').to_owned())
        };
        if let Some(url) = value("resolved ") {
            if !registry_tarball(&url) {
                out.push(format!(
                    "{path}: not a registry package (`{}`)",
                    shown(&url)
                ));
            }
        } else if let Some(r) = value("resolution:") {
            let protocol = r
                .get(1..)
                .and_then(|r| r.split_once('@'))
                .map(|(_, p)| p)
                .unwrap_or("");
            if !(protocol.starts_with("npm:") || protocol.starts_with("workspace:")) {
                out.push(format!("{path}: not a registry package (`{}`)", shown(&r)));
            }
        }
    }
}

/// pnpm's lockfile: a resolution by tarball URL, git or directory is refused.
fn pnpm(path: &str, content: &str, out: &mut Vec<String>) {
    for line in content.lines().map(str::trim) {
        let from_elsewhere = ["tarball:", "type: git", "directory:", "repo:"]
            .iter()
            .any(|k| line.contains(k));
        if line.starts_with("resolution:") && from_elsewhere {
            out.push(format!(
                "{path}: not a registry package (`{}`)",
                shown(line)
            ));
        }
    }
}

/// At most 120 characters of `s`, control characters escaped and backticks replaced.
fn shown(s: &str) -> String {
    let escaped: String = s.escape_debug().collect::<String>().replace('`', "'");
    escaped.chars().take(120).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(files: &[(&str, &str)]) -> Vec<String> {
        let paths: Vec<String> = files.iter().map(|(p, _)| (*p).to_owned()).collect();
        let text = |p: &str| {
            files
                .iter()
                .find(|(f, _)| *f == p)
                .map(|(_, t)| (*t).to_owned())
        };
        refused(&paths, &text)
    }

    #[test]
    fn registry_ranges_aliases_and_workspaces_pass() {
        let package = r#"{"dependencies": {"a": "^1.2.3", "b": "~2 || >=3.1 <4", "c": "latest", "d": "npm:@scope/d@^1", "e": "workspace:*", "f": "1.x", "g": "*"}}"#;
        assert_eq!(check(&[("package.json", package)]), Vec::<String>::new());
    }

    #[test]
    fn git_file_link_and_url_dependencies_are_refused_by_name() {
        let package = r#"{"dependencies": {"g1": "git+https://x.example/e.git", "g2": "github:o/r", "g3": "o/r#main", "f": "file:../x", "l": "link:./y", "t": "https://x.example/t.tgz", "a": "npm:evil@git+ssh://x"}, "devDependencies": {"ok": "^1"}}"#;
        let refused = check(&[("package.json", package)]);
        for (name, kind) in [
            ("g1", "a git dependency"),
            ("g2", "a git dependency"),
            ("g3", "a GitHub shorthand"),
            ("f", "a local path"),
            ("l", "a local path"),
            ("t", "a tarball URL"),
            ("a", "an alias to something not from the registry"),
        ] {
            assert!(
                refused
                    .iter()
                    .any(|r| r.starts_with(&format!("`{name}` in package.json: {kind}"))),
                "{name}: {refused:?}"
            );
        }
        assert_eq!(refused.len(), 7, "{refused:?}");
    }

    #[test]
    fn a_lockfile_takes_registry_packages_with_integrity_and_inner_links_only() {
        let lock = r#"{"lockfileVersion": 3, "packages": {
            "": {"name": "app"},
            "node_modules/ok": {"version": "1.0.0", "resolved": "https://r.example/ok/-/ok-1.0.0.tgz", "integrity": "sha512-x"},
            "node_modules/noint": {"version": "1.0.0", "resolved": "https://r.example/noint/-/noint-1.0.0.tgz"},
            "node_modules/git": {"version": "1.0.0", "resolved": "git+ssh://git@x.example/o/r.git#abc", "integrity": "sha512-x"},
            "node_modules/tar": {"version": "1.0.0", "resolved": "https://x.example/t.tgz", "integrity": "sha512-x"},
            "node_modules/ws": {"resolved": "packages/ws", "link": true},
            "node_modules/out": {"resolved": "../outside", "link": true}
        }}"#;
        let refused = check(&[("package-lock.json", lock)]);
        assert_eq!(
            refused,
            [
                "`node_modules/git` in package-lock.json: not a registry package (`git+ssh://git@x.example/o/r.git#abc`)",
                "`node_modules/noint` in package-lock.json: no `integrity`: the download could not be checked",
                "`node_modules/out` in package-lock.json: a link outside the repository (`../outside`)",
                "`node_modules/tar` in package-lock.json: not a registry package (`https://x.example/t.tgz`)",
            ]
        );
        let v1 = r#"{"lockfileVersion": 1, "dependencies": {"a": {"version": "github:o/r#abc", "dependencies": {"b": {"version": "1.0.0", "resolved": "https://r.example/b/-/b-1.0.0.tgz", "integrity": "sha1-x"}}}}}"#;
        assert_eq!(
            check(&[("package-lock.json", v1)]),
            ["`a` in package-lock.json: not a registry package (`github:o/r#abc`)"]
        );
    }

    #[test]
    fn yarn_and_pnpm_lockfiles_are_read_for_what_they_resolve_to() {
        let yarn1 = "ok@^1:\n  version \"1.0.0\"\n  resolved \"https://r.example/ok/-/ok-1.0.0.tgz#abc\"\n  integrity sha512-x\n\nevil@o/r:\n  resolved \"https://codeload.x.example/o/r/tar.gz/abc\"\n";
        assert_eq!(check(&[("yarn.lock", yarn1)]).len(), 1);
        let berry = "\"ok@npm:^1\":\n  resolution: \"ok@npm:1.0.0\"\n\"app@workspace:.\":\n  resolution: \"app@workspace:.\"\n\"evil@exec:./x.js\":\n  resolution: \"evil@exec:./x.js::locator=app\"\n";
        let refused = check(&[("yarn.lock", berry)]);
        assert!(
            refused.len() == 1 && refused[0].contains("evil@exec"),
            "{refused:?}"
        );
        let pnpm = "packages:\n  /ok@1.0.0:\n    resolution: {integrity: sha512-x}\n  evil@https://x.example/e.tgz:\n    resolution: {tarball: https://x.example/e.tgz}\n  g@git:\n    resolution: {type: git, repo: x, commit: y}\n";
        assert_eq!(check(&[("pnpm-lock.yaml", pnpm)]).len(), 2);
    }
}
