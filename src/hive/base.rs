//! The branch a ticket lands on when its issue chooses one: `base: <branch>` on a line of the
//! issue (or an issue form's "Base branch" field), or `/hive base <branch>` while it plans.
//! A branch is taken only when its name is a plain ref name and the App can read it.

use super::job::{Hive, JobError};
use crate::commands::check_ref_name;
use crate::github::RepoClient;
use crate::store::tickets::Ticket;
use crate::ticket::{Signal, TaskState};

/// The branch the issue's text asks to land on, as written: a line `base: <branch>` (one word,
/// backticks allowed) outside code blocks, or the value under a form's `### Base branch`
/// heading. `None` when it asks for none.
pub fn asked_in(body: &str) -> Option<String> {
    let mut in_code = false;
    let mut lines = body.lines().map(str::trim);
    while let Some(line) = lines.next() {
        if line.starts_with("```") || line.starts_with("~~~") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        let heading = line
            .strip_prefix("###")
            .map(|h| h.trim().to_ascii_lowercase());
        if matches!(heading.as_deref(), Some("base branch" | "base")) {
            let value = lines.by_ref().find(|l| !l.is_empty())?;
            return one_word(value).filter(|v| *v != "_No response_");
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        if key.trim().eq_ignore_ascii_case("base")
            && let Some(word) = one_word(value)
        {
            return Some(word);
        }
    }
    None
}

/// `value` as one word, its backticks dropped; `None` when it is several words or none.
fn one_word(value: &str) -> Option<String> {
    let word = value.trim().trim_matches('`').trim();
    (!word.is_empty() && !word.contains(char::is_whitespace)).then(|| word.to_owned())
}

/// Whether `branch` may be a ticket's base: a plain ref name that is a branch the App can
/// read. `Ok(Err(why))`, in words for the issue, when it may not.
pub async fn check(client: &RepoClient, branch: &str) -> Result<Result<(), String>, JobError> {
    // Shown as the issue wrote it, within reason: one word of any length is hostile text too.
    let mut shown: String = branch
        .chars()
        .take(60)
        .collect::<String>()
        .replace('`', "'");
    if branch.chars().count() > 60 {
        shown.push('…');
    }
    if let Err(why) = check_ref_name(branch) {
        return Ok(Err(format!("`{shown}` is no branch name: {why}")));
    }
    match client.get_ref(&format!("heads/{branch}")).await? {
        Some(_) => Ok(Ok(())),
        None => Ok(Err(format!(
            "{} has no branch `{shown}` that the App can read",
            client.repo()
        ))),
    }
}

/// The base `body` asks for, checked: `Ok(Ok(None))` when it asks for none.
pub async fn chosen_in(
    client: &RepoClient,
    body: &str,
) -> Result<Result<Option<String>, String>, JobError> {
    let Some(branch) = asked_in(body) else {
        return Ok(Ok(None));
    };
    Ok(check(client, &branch).await?.map(|()| Some(branch)))
}

/// `/hive base <branch>` on ticket `t`: `(reaction, reply, outcome)`.
pub(super) async fn command(
    hive: &Hive,
    t: &Ticket,
    branch: &str,
    author: &str,
) -> Result<(&'static str, String, String), JobError> {
    if !matches!(
        t.state,
        TaskState::Pending | TaskState::Preparing | TaskState::Validating | TaskState::Blocked
    ) {
        let reply = format!(
            "{} is past its plan ({}): its branches start from `{}`. `/hive abort` it, write `base: {branch}` in the issue, and label it again.",
            t.id,
            t.state,
            t.config_branch()
        );
        return Ok(("confused", reply, "refused: past the plan".into()));
    }
    let client = hive.github.repo(t.installation_id, &t.repo).await?;
    if let Err(why) = check(&client, branch).await? {
        return Ok((
            "confused",
            format!("{why}."),
            "refused: no such branch".into(),
        ));
    }
    let signal = Signal::Base {
        branch: branch.to_owned(),
    };
    super::signal::send(hive, t, &signal, author).await?;
    let reply = format!(
        "{} will land on `{branch}`: it plans again from there.",
        t.id
    );
    Ok(("+1", reply, "base".into()))
}

#[cfg(test)]
mod tests {
    use super::asked_in;

    #[test]
    fn the_base_is_read_from_a_line_or_an_issue_form() {
        let asked = |body: &str| asked_in(body);
        assert_eq!(
            asked("Fix it.\n\nbase: release/1.x\n"),
            Some("release/1.x".into())
        );
        assert_eq!(asked("Base: `maint`"), Some("maint".into()));
        let form = "### What breaks\n\nIt does.\n\n### Base branch\n\nrelease/2.0\n\n### More\n\nx";
        assert_eq!(asked(form), Some("release/2.0".into()));
        assert_eq!(asked("### Base branch\n\n_No response_\n"), None);
        // Prose that only mentions a base, or quotes one in code, asks for nothing.
        assert_eq!(asked("base: the old approach was slow"), None);
        assert_eq!(asked("```yaml\nbase: develop\n```\n"), None);
        assert_eq!(asked("database: postgres"), None);
        assert_eq!(asked("no base here"), None);
    }
}
