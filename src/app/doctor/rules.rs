//! The branch rules check: what each installed repository's default branch asks before the bot
//! lands there — its rulesets' rules in force, as `GET …/rules/branches/{b}` shows them to the
//! App — and a warning where rulesets also hold the bot's own branches (`feat/T-n`,
//! `test/T-n`), whose pushes they would refuse.

use std::time::Duration;

use octocrab::Octocrab;
use serde_json::Value;

use super::{Check, Parsed};
use crate::github::merge::BranchRule;

const NAME: &str = "Branch rules";
/// Repositories looked at, over all installations.
const MAX_REPOS: usize = 30;
const WITHIN: Duration = Duration::from_secs(60);
/// A branch of the bot's kind, to see what the rulesets ask of its pushes.
const BOT_BRANCH: &str = "feat/T-1";

pub(super) async fn check(parsed: Option<&Parsed>, github_passed: bool) -> Check {
    let crab = match super::github::app_client(parsed, github_passed, NAME) {
        Ok(c) => c,
        Err(skipped) => return skipped,
    };
    match tokio::time::timeout(WITHIN, read(&crab)).await {
        Ok(Ok(seen)) => said(seen),
        Ok(Err(e)) => Check::skipped(NAME, format!("cannot read the rules: {e:#}")),
        Err(_) => Check::skipped(NAME, "GitHub did not answer in time"),
    }
}

/// What one repository's rules ask.
struct Seen {
    repo: String,
    branch: String,
    /// What the default branch's rulesets ask, in words (`None`: nothing).
    base: Option<String>,
    /// What they ask of the bot's own branches.
    bot: Option<String>,
}

async fn read(crab: &Octocrab) -> anyhow::Result<Vec<Seen>> {
    let mut seen = Vec::new();
    for (client, repo) in super::github::installed_repos(crab, MAX_REPOS).await? {
        let full = repo["full_name"].as_str().unwrap_or_default().to_owned();
        let branch = repo["default_branch"].as_str().unwrap_or("main").to_owned();
        let base = rules_of(&client, &full, &branch).await?;
        let bot = rules_of(&client, &full, BOT_BRANCH).await?;
        seen.push(Seen {
            repo: full,
            branch,
            base,
            bot,
        });
    }
    Ok(seen)
}

/// What the rulesets over `branch` of `repo` ask, in words.
async fn rules_of(client: &Octocrab, repo: &str, branch: &str) -> anyhow::Result<Option<String>> {
    let encoded: String = url::form_urlencoded::byte_serialize(branch.as_bytes()).collect();
    let route = format!("/repos/{repo}/rules/branches/{encoded}");
    let rules: Vec<Value> = match client.get(route, None::<&()>).await {
        Ok(rules) => rules,
        // An Enterprise Server without rulesets.
        Err(octocrab::Error::GitHub { source, .. }) if source.status_code.as_u16() == 404 => {
            vec![]
        }
        Err(e) => return Err(e.into()),
    };
    Ok(BranchRule::default().with_rules(&rules).describe())
}

fn said(seen: Vec<Seen>) -> Check {
    let ruled: Vec<String> = seen
        .iter()
        .filter_map(|s| {
            Some(format!(
                "{} `{}` asks {}",
                s.repo,
                s.branch,
                s.base.as_ref()?
            ))
        })
        .collect();
    let detail = match ruled.as_slice() {
        [] => format!(
            "{} repositor{} read; no ruleset over a default branch",
            seen.len(),
            plural(seen.len())
        ),
        _ => format!(
            "{} repositor{} read; {}",
            seen.len(),
            plural(seen.len()),
            ruled.join("; ")
        ),
    };
    let mut check = Check::pass(NAME, detail);
    for s in &seen {
        if let Some(bot) = &s.bot {
            check = check.warn(format!(
                "{}: rulesets over the bot's branches (`{BOT_BRANCH}`) ask {bot}: its pushes may be refused; narrow them to the branches people push, or add the App to their bypass list",
                s.repo
            ));
        }
    }
    check
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "y" } else { "ies" }
}
