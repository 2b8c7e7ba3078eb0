//! No commit leaves the bot unscanned. A push to the origin repository runs its workflows, with
//! its Actions secrets, on code no gate has judged yet; and it sends every commit the remote
//! lacks, not only the last. So before any push of `test/T-n` or `feat/T-n`, each commit the
//! remote does not have (reachable from the head, from no `refs/remotes/origin/*`) is scanned
//! against its first parent with the security gate's secret scan (`gates::security::secrets`).
//! A hit withholds the push — nothing leaves — and the step that wrote the commit is told what
//! and where: the Builder's next attempt starts from the last commit that was pushed, the
//! Breaker writes its tests again.

use git2::{Oid, Repository};

use super::ctx::{Ctx, Step, git};
use super::state::Node;
use crate::annotation::Annotation;
use crate::gates::security::secrets::scan_diff;
use crate::hive::job::JobError;
use crate::ids::CommitSha;
use crate::ticket::Finding;
use crate::workspace::Worktree;

/// At most this many unpushed commits are walked; a head further ahead of the remote than that
/// is not pushed (the bot writes one commit a step).
const MAX_COMMITS: usize = 500;

/// Whether a push went, or was withheld for what the scan found.
#[must_use]
#[derive(Debug)]
pub(super) enum Pushed {
    /// Pushed: the head GitHub has (another commit than the one pushed where GitHub made it
    /// again, signed).
    Yes(CommitSha),
    Withheld(Vec<Finding>),
}

/// Commits an agent's work in the worktree (if it changed: tracked files, and the new files
/// in `written`) and pushes its branch unless what it would send adds a secret; the branch's
/// head, or the scan's findings (nothing pushed).
pub(super) async fn commit_push(
    cx: &mut Ctx<'_, '_>,
    wt: &Worktree,
    message: String,
    work: super::git::Work,
) -> Result<Result<CommitSha, Vec<Finding>>, JobError> {
    let head = super::ctx::commit(cx, wt, message, work).await?;
    let found = secrets_before_push(cx, &head).await?;
    if !found.is_empty() {
        return Ok(Err(found));
    }
    Ok(Ok(super::signed::replace(cx, &wt.branch, &head).await?))
}

/// The secrets the commits `head` would send to the remote add, each once.
pub(super) fn unpushed_secrets(g: &Repository, head: Oid) -> Result<Vec<Annotation>, git2::Error> {
    let mut walk = g.revwalk()?;
    walk.push(head)?;
    for r in g.references_glob("refs/remotes/origin/*")? {
        if let Some(at) = r?.target() {
            walk.hide(at)?;
        }
    }
    let empty = g.treebuilder(None)?.write()?;
    let mut found: Vec<Annotation> = Vec::new();
    for (n, oid) in walk.enumerate() {
        if n == MAX_COMMITS {
            return Err(git2::Error::from_str(&format!(
                "{head} is more than {MAX_COMMITS} commits ahead of the remote: not scanned, not pushed"
            )));
        }
        let commit = g.find_commit(oid?)?;
        let parent = commit.parent_ids().next().unwrap_or(empty);
        for a in scan_diff(g, parent, commit.id())? {
            if !found.contains(&a) {
                found.push(a);
            }
        }
    }
    Ok(found)
}

/// What the commits `head` would push add that looks like a secret, as findings for the role
/// that wrote them; empty when the push may go.
pub(super) async fn secrets_before_push(
    cx: &Ctx<'_, '_>,
    head: &CommitSha,
) -> Result<Vec<Finding>, JobError> {
    let h = head.oid();
    let found = git(cx, move |_, g| Ok(unpushed_secrets(g, h)?)).await?;
    Ok(found.iter().map(finding).collect())
}

fn finding(a: &Annotation) -> Finding {
    Finding {
        code: "secret".into(),
        message: format!(
            "{}:{}: {} Nothing was pushed.",
            a.path, a.start_line, a.message
        ),
        path: Some(a.path.clone()),
    }
}

/// The paths of `findings`, for the timeline.
fn paths(findings: &[Finding]) -> Vec<String> {
    let mut p: Vec<String> = findings.iter().filter_map(|f| f.path.clone()).collect();
    p.sort();
    p.dedup();
    p
}

/// The Builder's commit was withheld (`during`: which step's push): its findings are the
/// secrets, and the next attempt starts from the last commit that was pushed; past the attempt
/// limit, a person is asked.
pub(super) async fn builder_withheld(
    cx: &mut Ctx<'_, '_>,
    node: Node,
    findings: Vec<Finding>,
    during: &str,
) -> Result<Step, JobError> {
    let data =
        serde_json::json!({ "role": "builder", "during": during, "paths": paths(&findings) });
    cx.run.event("push_withheld", data).await;
    cx.demote_memory(&cx.attempt_step()).await?;
    let failed = format!("the push {during} was withheld: it adds what looks like a secret");
    cx.flow.code.findings = findings;
    if node == Node::Rebase {
        // The change the approval was given to is not the one that will land.
        cx.flow.land.rebased = None;
        cx.flow.review.approved_by = None;
    }
    let inputs = serde_json::json!({ "attempt": cx.flow.code.attempt });
    let out = serde_json::json!({ "withheld": cx.flow.code.findings.len() });
    if cx.flow.code.attempt >= cx.flow.code.attempt_limit {
        cx.checkpoint_failed(node, inputs, out, &failed).await?;
        let report = format!(
            "The Builder's change adds what looks like a secret, and no attempts are left; \
             nothing of it was pushed.\n\n{}\n\nRemove it by hand on `{}` and `/hive retry`, \
             or `/hive abort`.",
            list(&cx.flow.code.findings),
            cx.run.ticket.id.feat_branch()
        );
        return cx.needs_human(&report).await;
    }
    cx.flow.code.attempt += 1;
    cx.flow.next = Node::Code;
    cx.checkpoint_failed(node, inputs, out, &failed).await?;
    cx.publish().await?;
    Ok(Step::Next)
}

/// The Breaker's commit was withheld: it writes its tests again with the findings, as after a
/// red proof that did not hold, within the same retries.
pub(super) async fn breaker_withheld(
    cx: &mut Ctx<'_, '_>,
    findings: Vec<Finding>,
) -> Result<Step, JobError> {
    let data = serde_json::json!({ "role": "breaker", "paths": paths(&findings) });
    cx.run.event("push_withheld", data).await;
    cx.demote_memory(super::memory::TESTS_STEP).await?;
    cx.flow.tests.breaker_attempts += 1;
    let failed = "the Breaker's push was withheld: its tests add what looks like a secret";
    let out = serde_json::json!({ "withheld": findings.len() });
    if cx.flow.tests.breaker_attempts > cx.env.config.retry.max_retries {
        cx.checkpoint_failed(Node::Code, serde_json::json!({}), out, failed)
            .await?;
        let report = format!(
            "The Breaker's tests add what looks like a secret, and its retries are spent; \
             nothing of them was pushed.\n\n{}\n\n`/hive feedback` the Breaker, or `/hive abort`.",
            list(&findings)
        );
        return cx.needs_human(&report).await;
    }
    cx.flow.tests.breaker_findings = findings;
    cx.flow.tests.breaker = None;
    cx.flow.next = Node::Code;
    cx.checkpoint_failed(Node::Code, serde_json::json!({}), out, failed)
        .await?;
    Ok(Step::Next)
}

fn list(findings: &[Finding]) -> String {
    findings
        .iter()
        .map(|f| format!("- {}", f.message))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(g: &Repository, parent: Option<Oid>, files: &[(&str, &str)]) -> Oid {
        let mut tb = g.treebuilder(None).unwrap();
        for (path, text) in files {
            let blob = g.blob(text.as_bytes()).unwrap();
            tb.insert(path, blob, 0o100644).unwrap();
        }
        let tree = g.find_tree(tb.write().unwrap()).unwrap();
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        let parents: Vec<git2::Commit> =
            parent.iter().map(|p| g.find_commit(*p).unwrap()).collect();
        let refs: Vec<&git2::Commit> = parents.iter().collect();
        g.commit(None, &sig, &sig, "c", &tree, &refs).unwrap()
    }

    #[test]
    fn every_unpushed_commit_is_scanned_not_only_the_head() {
        let dir = tempfile::tempdir().unwrap();
        let g = Repository::init_bare(dir.path()).unwrap();
        let base = commit(&g, None, &[("a.py", "x = 1\n")]);
        g.reference("refs/remotes/origin/main", base, true, "t")
            .unwrap();
        let key = format!("k = \"ghp_{}\"\n", "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8");
        // The secret comes in one commit and goes in the next: the head's tree is clean.
        let leaks = commit(&g, Some(base), &[("a.py", "x = 1\n"), ("b.py", &key)]);
        let clean = commit(&g, Some(leaks), &[("a.py", "x = 1\n")]);
        let found = unpushed_secrets(&g, clean).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].path, "b.py");
        // Once the remote has those commits, nothing is left to scan.
        g.reference("refs/remotes/origin/feat/T-1", clean, true, "t")
            .unwrap();
        assert!(unpushed_secrets(&g, clean).unwrap().is_empty());
    }
}
