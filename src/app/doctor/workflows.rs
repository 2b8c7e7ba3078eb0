//! The CI check: the bot pushes `feat/T-n` and `test/T-n` to each repository before anyone
//! reviewed them, and a workflow that runs on a push to those branches runs that code with the
//! secrets it reads. For each repository the App is installed on (the first [`MAX_REPOS`]),
//! every `.github/workflows/*.yml` on the default branch is read and one warning names each
//! workflow that both runs on a push to the bot's branches (GitHub's `branches` /
//! `branches-ignore` filters applied as GitHub applies them) or on its pull requests, and reads
//! secrets beyond `GITHUB_TOKEN` — with the lines that keep the branches out.

use std::time::Duration;

use base64::Engine as _;
use octocrab::Octocrab;
use serde_json::Value;
use serde_yaml_ng::Value as Yaml;

use super::{Check, Parsed};

const NAME: &str = "CI on the bot's branches";
/// Repositories looked at, over all installations.
const MAX_REPOS: usize = 30;
const WITHIN: Duration = Duration::from_secs(20);
/// Branch names of the bot's kind, matched against the workflows' filters.
const BOT_BRANCHES: [&str; 2] = ["feat/T-1", "test/T-1"];
/// What keeps the bot's branches out of a workflow, as docs/security.md says it.
const FIX: &str = "add `branches-ignore: [\"feat/T-*\", \"test/T-*\"]` under `on.push` (and `if: ${{ !startsWith(github.head_ref, 'feat/T-') }}` on jobs run by pull requests), or put its secrets in an environment that requires a reviewer (docs/security.md: \"Keep your CI's secrets from the bot's branches\")";

pub(super) async fn check(parsed: Option<&Parsed>, github_passed: bool) -> Check {
    let crab = match super::github::app_client(parsed, github_passed, NAME) {
        Ok(c) => c,
        Err(skipped) => return skipped,
    };
    match tokio::time::timeout(WITHIN * 3, exposed_workflows(&crab)).await {
        Ok(Ok((repos, exposed))) => {
            let mut check = Check::pass(
                NAME,
                format!(
                    "{repos} repositor{} read; {} workflow(s) run the bot's branches with secrets",
                    if repos == 1 { "y" } else { "ies" },
                    exposed.len()
                ),
            );
            for (repo, path, why) in exposed {
                check = check.warn(format!("{repo} {path} {why}: {FIX}"));
            }
            check
        }
        Ok(Err(e)) => Check::skipped(NAME, format!("cannot read the workflows: {e:#}")),
        Err(_) => Check::skipped(NAME, "GitHub did not answer in time"),
    }
}

/// How many repositories were read, and `(repository, workflow path, why)` for each workflow
/// that runs the bot's branches with secrets.
async fn exposed_workflows(
    crab: &Octocrab,
) -> anyhow::Result<(usize, Vec<(String, String, String)>)> {
    let repos = super::github::installed_repos(crab, MAX_REPOS).await?;
    let mut exposed = Vec::new();
    for (client, repo) in &repos {
        let full = repo["full_name"].as_str().unwrap_or_default();
        for (path, text) in workflows(client, full).await {
            if let Some(why) = runs_bot_branches_with_secrets(&text) {
                exposed.push((full.to_owned(), path, why));
            }
        }
    }
    Ok((repos.len(), exposed))
}

/// `(path, text)` of each workflow file of `repo`'s default branch (none when it has none).
async fn workflows(client: &Octocrab, repo: &str) -> Vec<(String, String)> {
    let dir = format!("/repos/{repo}/contents/.github/workflows");
    let Ok(Value::Array(entries)) = client.get::<Value, _, ()>(&dir, None).await else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries {
        let Some(path) = e["path"].as_str() else {
            continue;
        };
        if e["type"] != "file" || !(path.ends_with(".yml") || path.ends_with(".yaml")) {
            continue;
        }
        let file: Result<Value, _> = client
            .get(format!("/repos/{repo}/contents/{path}"), None::<&()>)
            .await;
        let text = file.ok().and_then(|f| {
            let b64: String = f["content"].as_str()?.split_whitespace().collect();
            let bytes = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
            String::from_utf8(bytes).ok()
        });
        if let Some(text) = text {
            out.push((path.to_owned(), text));
        }
    }
    out
}

/// Why a workflow runs the bot's branches with secrets (`None` when it does not, or does not
/// parse): it runs on a push to one of them, or on pull requests (the bot's too, unless the
/// file names `feat/T-` to keep them out), and reads a secret other than `GITHUB_TOKEN`.
pub(crate) fn runs_bot_branches_with_secrets(text: &str) -> Option<String> {
    let doc: Yaml = serde_yaml_ng::from_str(text).ok()?;
    let on = doc
        .get("on")
        .or_else(|| doc.as_mapping()?.get(Yaml::Bool(true)))?;
    // Each event the workflow runs on, with its filters when it has some.
    let events: Vec<(&str, Option<&Yaml>)> = match on {
        Yaml::String(s) => vec![(s.as_str(), None)],
        Yaml::Sequence(list) => list
            .iter()
            .filter_map(|e| Some((e.as_str()?, None)))
            .collect(),
        Yaml::Mapping(m) => m
            .iter()
            .filter_map(|(k, v)| Some((k.as_str()?, Some(v).filter(|v| v.is_mapping()))))
            .collect(),
        _ => return None,
    };
    let on_push = events.iter().any(|(e, filters)| {
        *e == "push" && filters.is_none_or(|f| BOT_BRANCHES.iter().any(|b| push_runs(f, b)))
    });
    let on_pulls = events
        .iter()
        .any(|(e, _)| *e == "pull_request" || *e == "pull_request_target")
        && !text.contains("feat/T-");
    let when = match (on_push, on_pulls) {
        (false, false) => return None,
        (true, false) => "on a push to the bot's branches",
        (false, true) => "on pull requests, the bot's too,",
        (true, true) => "on a push to the bot's branches and on its pull requests,",
    };
    let secrets = secrets_read(text);
    if secrets.is_empty() {
        return None;
    }
    Some(format!("runs {when} and reads {}", secrets.join(", ")))
}

/// Whether a push to `branch` runs a workflow with `on.push` = `filters` (GitHub: with only
/// `tags` filters, or `branches` that match nothing, branches do not run it).
fn push_runs(filters: &Yaml, branch: &str) -> bool {
    let list = |key: &str| -> Option<Vec<String>> {
        match filters.get(key)? {
            Yaml::Sequence(s) => Some(
                s.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect(),
            ),
            Yaml::String(s) => Some(vec![s.clone()]),
            _ => Some(Vec::new()),
        }
    };
    if let Some(patterns) = list("branches") {
        // The last pattern that matches decides; `!` excludes.
        let mut runs = false;
        for p in patterns {
            let (negated, p) = match p.strip_prefix('!') {
                Some(rest) => (true, rest.to_owned()),
                None => (false, p),
            };
            if glob_matches(&p, branch) {
                runs = !negated;
            }
        }
        return runs;
    }
    if let Some(patterns) = list("branches-ignore") {
        return !patterns.iter().any(|p| glob_matches(p, branch));
    }
    filters.get("tags").is_none() && filters.get("tags-ignore").is_none()
}

/// GitHub's filter pattern: `*` within a path segment, `**` across them.
fn glob_matches(pattern: &str, name: &str) -> bool {
    globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .is_ok_and(|g| g.compile_matcher().is_match(name))
}

/// The secrets a workflow reads (`secrets.NAME`, `secrets['NAME']`, `secrets: inherit`), less
/// `GITHUB_TOKEN`.
fn secrets_read(text: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("secrets") {
        let after = &rest[at + "secrets".len()..];
        let name: String = match after.chars().next() {
            Some('.') => after[1..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect(),
            Some('[') => after[1..]
                .trim_start_matches(['\'', '"'])
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect(),
            Some(':') if after[1..].trim_start().starts_with("inherit") => "inherit".into(),
            _ => String::new(),
        };
        if !name.is_empty() && name != "GITHUB_TOKEN" && !found.contains(&name) {
            found.push(name);
        }
        rest = after;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEPLOY: &str =
        "    steps:\n      - run: deploy\n        env: { KEY: \"${{ secrets.DEPLOY_KEY }}\" }\n";

    fn workflow(on: &str) -> String {
        format!("name: ci\non:\n{on}\njobs:\n  d:\n    runs-on: ubuntu-latest\n{DEPLOY}")
    }

    #[test]
    fn a_push_to_any_branch_with_secrets_is_named() {
        for on in ["  push:", "  push: {}", "  push:\n    paths: [\"src/**\"]"] {
            let why = runs_bot_branches_with_secrets(&workflow(on)).expect(on);
            assert!(why.contains("DEPLOY_KEY"), "{why}");
        }
        let short = format!("on: push\njobs:\n  d:\n    runs-on: x\n{DEPLOY}");
        assert!(runs_bot_branches_with_secrets(&short).is_some());
        let list = format!("on: [push, pull_request]\njobs:\n  d:\n    runs-on: x\n{DEPLOY}");
        assert!(runs_bot_branches_with_secrets(&list).is_some());
        let glob = workflow("  push:\n    branches: [\"**\"]");
        assert!(runs_bot_branches_with_secrets(&glob).is_some());
    }

    #[test]
    fn pull_requests_with_secrets_are_named_unless_the_bots_are_kept_out() {
        for on in [
            "  pull_request:",
            "  pull_request_target:\n    branches: [main]",
        ] {
            let why = runs_bot_branches_with_secrets(&workflow(on)).expect(on);
            assert!(
                why.contains("pull requests") && why.contains("DEPLOY_KEY"),
                "{why}"
            );
        }
        let guarded = workflow("  pull_request:").replace(
            "    runs-on: ubuntu-latest\n",
            "    runs-on: ubuntu-latest\n    if: ${{ !startsWith(github.head_ref, 'feat/T-') }}\n",
        );
        assert_eq!(runs_bot_branches_with_secrets(&guarded), None);
    }

    #[test]
    fn filters_that_leave_the_bot_out_and_workflows_without_secrets_are_not() {
        for on in [
            "  push:\n    branches-ignore: [\"feat/T-*\", \"test/T-*\"]",
            "  push:\n    branches: [main]",
            // `*` does not cross a `/`.
            "  push:\n    branches: [\"*\"]",
            "  push:\n    branches: [\"**\", \"!feat/**\", \"!test/**\"]",
            "  push:\n    tags: [\"v*\"]",
            "  workflow_dispatch:",
        ] {
            assert_eq!(runs_bot_branches_with_secrets(&workflow(on)), None, "{on}");
        }
        let no_secrets = "on: push\njobs:\n  t:\n    runs-on: x\n    steps:\n      - run: make test\n        env: { T: \"${{ secrets.GITHUB_TOKEN }}\" }\n";
        assert_eq!(runs_bot_branches_with_secrets(no_secrets), None);
        assert_eq!(runs_bot_branches_with_secrets("not: [valid"), None);
    }

    #[test]
    fn secrets_are_read_in_every_spelling() {
        let text = "a: ${{ secrets.A_1 }}\nb: ${{ secrets['B'] }}\nc: ${{ secrets.A_1 }}\n    secrets: inherit\n";
        assert_eq!(secrets_read(text), vec!["A_1", "B", "inherit"]);
    }
}
