//! People's commits on the bot's branch `feat/T-n`: a commit the bot did not write is part of
//! the change from then on (adopted by the next step that writes the branch, credited when it
//! lands), and the bot moves the branch only with a lease, never over such a commit.

use super::ctx::{Ctx, git, sync};
use crate::hive::job::JobError;
use crate::ids::CommitSha;

/// The head of `feat/T-n` on GitHub when it holds commits a person pushed on top of `ours` (or
/// anywhere since): they are part of the change from now on, recorded in the flow (credited
/// when it lands, named in the status). `None` when the branch holds only the bot's work.
pub(super) async fn adopt_people(
    cx: &mut Ctx<'_, '_>,
    ours: &CommitSha,
) -> Result<Option<CommitSha>, JobError> {
    sync(cx).await?;
    let (feat, bot, from) = (
        cx.run.ticket.id.feat_branch(),
        cx.run.hive.author.email.clone(),
        ours.oid(),
    );
    let remote = git(cx, move |ws, g| {
        let Ok(r) = ws.remote_head(g, &feat) else {
            return Ok(None);
        };
        let people = ws.people_commits(g, from, r.oid(), &bot)?;
        Ok(Some((r, people)))
    })
    .await?;
    let Some((theirs, people)) = remote.filter(|(r, p)| !p.is_empty() && r != ours) else {
        return Ok(None);
    };
    let data = serde_json::json!({ "head": theirs.as_str(), "commits": people.len() });
    cx.run.event("people_commits", data).await;
    for p in people {
        if !cx.flow.people.iter().any(|q| q.sha == p.sha) {
            cx.flow.people.push(p);
        }
    }
    Ok(Some(theirs))
}

/// Moves `feat/T-n` on GitHub to `sha` if it is still at `expected` (the bot's last push), or at
/// another commit the bot wrote (a push whose checkpoint a crash lost); `Err` is the head a
/// person put there, left as it is.
pub(super) async fn push_leased(
    cx: &mut Ctx<'_, '_>,
    sha: &CommitSha,
    expected: Option<&CommitSha>,
) -> Result<Result<(), String>, JobError> {
    let branch = cx.run.ticket.id.feat_branch();
    let mut expected = expected.map(CommitSha::oid);
    for _ in 0..2 {
        let (b, repo, token, new) = (
            branch.clone(),
            cx.run.ticket.repo.clone(),
            cx.run.client.token().await?,
            sha.oid(),
        );
        let pushed = git(cx, move |ws, g| {
            ws.set_branch(g, &b, new)?;
            Ok(ws.push_with_lease(&repo, &b, expected, &token))
        })
        .await?;
        let found = match pushed {
            Ok(()) => return Ok(Ok(())),
            Err(crate::workspace::WorkspaceError::LeaseBroken { found, .. }) => found,
            Err(e) => return Err(e.into()),
        };
        sync(cx).await?;
        let bot = cx.run.hive.author.email.clone();
        let Ok(theirs) = CommitSha::parse(&found) else {
            return Ok(Err(found));
        };
        let f = theirs.oid();
        let ours = git(cx, move |_, g| {
            Ok(g.find_commit(f)
                .is_ok_and(|c| c.author().email() == Some(bot.as_str())))
        })
        .await?;
        if !ours {
            return Ok(Err(found));
        }
        expected = Some(f);
    }
    Err(JobError::transient(format!(
        "{branch} kept moving while the bot pushed"
    )))
}
