//! People on the bot's pull request. Their commits on `feat/T-n` are part of the change from
//! then on (adopted by the next step that writes the branch, credited when it lands), and the
//! bot moves the branch only with a lease, never over such a commit. Tests they changed become
//! the Breaker's (the test lock binds agents, not people), and the red proof is taken again from
//! them. Their review comments are answered in their threads with what the attempt that took
//! them changed there.

use super::ctx::{Ctx, git, sync};
use super::withhold::Pushed;
use crate::hive::job::JobError;
use crate::ids::CommitSha;

/// The head of `feat/T-n` on GitHub when it holds commits a person pushed on top of `ours` (or
/// anywhere since): they are part of the change from now on, recorded in the flow (credited
/// when it lands, named in the status). `None` when the branch holds only the bot's work.
/// Reads the mirror as the caller's `sync` fetched it.
pub(super) async fn adopt_people(
    cx: &mut Ctx<'_, '_>,
    ours: &CommitSha,
) -> Result<Option<CommitSha>, JobError> {
    let (feat, bots, from) = (cx.run.ticket.id.feat_branch(), bot_emails(cx), ours.oid());
    let remote = git(cx, move |ws, g| {
        let Ok(r) = ws.remote_head(g, &feat) else {
            return Ok(None);
        };
        let people = ws.people_commits(g, from, r.oid(), &bots)?;
        Ok(Some((r, people)))
    })
    .await?;
    let Some((theirs, people)) = remote.filter(|(r, p)| !p.is_empty() && r != ours) else {
        return Ok(None);
    };
    let data = serde_json::json!({ "head": theirs.as_str(), "commits": people.len() });
    cx.run.event("people_commits", data).await;
    let known = cx.flow.code.people.len();
    for p in people {
        if !cx.flow.code.people.iter().any(|q| q.sha == p.sha) {
            cx.flow.code.people.push(p);
        }
    }
    let tests = adopt_tests(cx, &theirs).await?;
    if cx.flow.code.people.len() > known || tests {
        super::review::refresh_body(cx, &theirs).await?;
    }
    Ok(Some(theirs))
}

/// The emails the bot's commits carry: its own, and the App's where GitHub made them for it
/// (signed commits).
fn bot_emails(cx: &Ctx<'_, '_>) -> Vec<String> {
    let mut emails = vec![cx.run.hive.author.email.clone()];
    emails.extend(cx.flow.code.signed.clone().filter(|e| !e.is_empty()));
    emails
}

/// Tests under `policy.test_paths` that people's commits changed become the Breaker's: a commit
/// on `test/T-n` holds them as they are in `theirs`, the test lock is taken from it, and the
/// red proof is cleared so that it runs again on them. True when that happened now; false
/// when no person changed a test or their versions are already the Breaker's.
async fn adopt_tests(cx: &mut Ctx<'_, '_>, theirs: &CommitSha) -> Result<bool, JobError> {
    let Some(breaker) = cx.flow.tests.breaker.clone() else {
        return Ok(false);
    };
    let people: Vec<(git2::Oid, String)> = cx
        .flow
        .code
        .people
        .iter()
        .map(|p| (p.sha.oid(), p.name.clone()))
        .collect();
    let (test_set, (b, t)) = (
        cx.env.config.test_paths(),
        (breaker.sha.oid(), theirs.oid()),
    );
    // The test paths people's commits changed, and whose commits changed them.
    let (paths, by) = git(cx, move |ws, g| {
        let (mut touched, mut by) = (Vec::<String>::new(), Vec::<String>::new());
        for (c, name) in people {
            let Ok(parent) = g.find_commit(c).and_then(|c| c.parent_id(0)) else {
                continue;
            };
            let tests: Vec<String> = ws
                .changed_paths(g, parent, c)?
                .into_iter()
                .filter(|p| test_set.contains(p))
                .collect();
            if !tests.is_empty() && !by.contains(&name) {
                by.push(name);
            }
            for p in tests {
                if !touched.contains(&p) {
                    touched.push(p);
                }
            }
        }
        // Already the Breaker's: nothing to take again.
        let differ = ws.changed_paths(g, b, t)?;
        touched.retain(|p| differ.contains(p));
        Ok((touched, by))
    })
    .await?;
    if paths.is_empty() {
        return Ok(false);
    }
    let id = cx.run.ticket.id;
    let wt = super::git::worktree(
        &cx.run.hive.workspace,
        &cx.run.ticket.repo,
        &id.test_branch(),
        (&breaker.sha, cx.env.config.limits.disk_mb),
    )
    .await?;
    let (wt2, copied) = (wt.clone(), paths.clone());
    git(cx, move |ws, g| ws.copy_paths(g, t, &copied, &wt2)).await?;
    let msg = format!(
        "{id}: the tests as {} changed them in {}\n\n{}",
        by.join(", "),
        theirs.short(),
        paths.join("\n")
    );
    let work = super::git::Work {
        written: paths.clone(),
        scope: None,
    };
    let tests = match super::withhold::commit_push(cx, &wt, msg, work).await? {
        Ok(sha) => sha,
        Err(found) => {
            // People pushed these lines to `feat/T-n` themselves; the bot copies none of them on.
            let list: Vec<String> = found.iter().map(|f| f.message.clone()).collect();
            return Err(JobError::permanent(format!(
                "the tests {} pushed add what looks like a secret, so the bot did not copy them to {}:\n{}",
                by.join(", "),
                id.test_branch(),
                list.join("\n")
            )));
        }
    };
    let data = serde_json::json!({ "paths": paths, "by": by, "tests": tests.as_str() });
    cx.run.event("people_changed_tests", data).await;
    let mut files = breaker.files.clone();
    files.extend(paths.iter().filter(|p| !breaker.files.contains(p)).cloned());
    cx.flow.tests.people_tests.push(super::state::PeopleTests {
        by,
        paths,
        tests: tests.clone(),
    });
    cx.flow.tests.breaker = Some(super::state::Work {
        sha: tests,
        files,
        ..breaker
    });
    cx.flow.tests.red_proof = None;
    Ok(true)
}

/// Moves `feat/T-n` on GitHub to `sha` as [`push_leased`] does, unless what it would send adds
/// a secret (withheld, with the findings); when a person's commit is there instead, the step
/// (`during`, in words) fails transiently so that it runs again and adopts that commit, rather
/// than push over it.
pub(super) async fn push_or_rerun(
    cx: &mut Ctx<'_, '_>,
    sha: &CommitSha,
    expected: Option<&CommitSha>,
    during: &str,
) -> Result<Pushed, JobError> {
    let found = super::withhold::secrets_before_push(cx, sha).await?;
    if !found.is_empty() {
        return Ok(Pushed::Withheld(found));
    }
    match push_leased(cx, sha, expected).await? {
        Ok(head) => Ok(Pushed::Yes(head)),
        Err(found) => Err(JobError::transient(format!(
            "someone pushed {} to {} {during}; the step runs again from their commit",
            &found[..found.len().min(7)],
            cx.run.ticket.id.feat_branch()
        ))),
    }
}

/// Moves `feat/T-n` on GitHub to `sha` if it is still at `expected` (the bot's last push), or at
/// another commit the bot wrote (a push whose checkpoint a crash lost); `Err` is the head a
/// person put there, left as it is.
async fn push_leased(
    cx: &mut Ctx<'_, '_>,
    sha: &CommitSha,
    expected: Option<&CommitSha>,
) -> Result<Result<CommitSha, String>, JobError> {
    let branch = cx.run.ticket.id.feat_branch();
    let mut expected = expected.map(CommitSha::oid);
    for _ in 0..3 {
        let found = if cx.flow.code.signed.is_some() {
            let lease = expected.map(CommitSha::from);
            match super::signed::push(cx, &branch, sha, Some(lease.as_ref())).await? {
                Ok(head) => return Ok(Ok(head)),
                Err(found) => found,
            }
        } else {
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
            match pushed {
                Ok(()) => return Ok(Ok(sha.clone())),
                Err(crate::workspace::WorkspaceError::LeaseBroken { found, .. }) => found,
                Err(e) if super::signed::wants_signatures(&e) => {
                    super::signed::refused(cx, &branch).await;
                    continue;
                }
                Err(e) => return Err(e.into()),
            }
        };
        sync(cx).await?;
        let bots = bot_emails(cx);
        let Ok(theirs) = CommitSha::parse(&found) else {
            return Ok(Err(found));
        };
        let f = theirs.oid();
        let ours = git(cx, move |_, g| {
            Ok(g.find_commit(f).is_ok_and(|c| {
                let email = c.author().email().unwrap_or_default().to_owned();
                bots.iter().any(|b| b.eq_ignore_ascii_case(&email))
            }))
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

/// Answers each review comment the passing attempt took, in its thread: the commit and the
/// lines of the commented file that changed since the comment's head, read from the diff —
/// not from the model's account. Once per comment and commit (a marker finds a reply made
/// before a crash).
pub(super) async fn answer_threads(cx: &mut Ctx<'_, '_>, head: &CommitSha) -> Result<(), JobError> {
    let Some(pr) = cx.flow.review.pr else {
        return Ok(());
    };
    for t in cx.flow.code.answering.clone() {
        let (from, to, path) = (t.commit.oid(), head.oid(), t.path.clone());
        let lines = git(cx, move |ws, g| ws.changed_lines(g, from, to, &path)).await?;
        let short = head.short();
        let body = match lines.as_slice() {
            [] => format!(
                "`{}` is unchanged in `{short}`: the change answered this elsewhere (see the diff).",
                t.path
            ),
            ranges => {
                let shown: Vec<String> = ranges
                    .iter()
                    .map(|(a, b)| {
                        if a == b {
                            format!("{a}")
                        } else {
                            format!("{a}–{b}")
                        }
                    })
                    .collect();
                format!(
                    "Changed in `{short}`: `{}` line(s) {}.",
                    t.path,
                    shown.join(", ")
                )
            }
        };
        let marker = format!("<!-- vibeloop:reply {} {} -->", t.comment, head.as_str());
        // A thread GitHub no longer has (the comment was deleted) goes on the timeline and
        // the change goes on; a passing outage retries the step (the marker keeps it once).
        match cx
            .run
            .client
            .reply_to_review_comment(pr, t.comment, &marker, &body)
            .await
        {
            Ok(()) => {}
            Err(e) if e.is_transient() => return Err(e.into()),
            Err(e) => {
                tracing::warn!(comment = t.comment, error = %e, "cannot answer a review thread");
                let data = serde_json::json!({ "comment": t.comment, "error": e.to_string() });
                cx.run.event("review_reply_failed", data).await;
            }
        }
    }
    cx.flow.code.answering.clear();
    Ok(())
}
