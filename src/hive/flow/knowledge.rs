//! The knowledge check of Preparing: every library and service the Architect's plan says it
//! needs (`plan.requires`) is looked for in the base's manifests, lockfiles, compose files and
//! devcontainer ([`crate::env::manifests`]). What is missing becomes a question for people
//! (`knowledge.missing: block`, the default), an issue of its own that the hive runs first while
//! the ticket waits (`dependency_ticket`), or a note on the timeline (`ignore`).

use super::ctx::{Ctx, Step, git, sync};
use super::state::Node;
use crate::env::manifests::Declared;
use crate::env::tree::Tree;
use crate::hive::job::JobError;

/// What the plan needs and the base lacks.
#[derive(Debug, Default)]
pub(super) struct Missing {
    /// One question per library or service, for people.
    pub questions: Vec<String>,
    /// Their names (cleaned), each as `name (library)` or `name (service)`.
    pub names: Vec<String>,
}

/// The libraries and services the plan needs and the base does not declare; empty when nothing
/// is missing (or the plan names nothing).
pub(super) async fn missing(cx: &mut Ctx<'_, '_>) -> Result<Missing, JobError> {
    let needs = match &cx.flow.plan.blueprint {
        Some(bp) if !bp.plan.requires.is_empty() => bp.plan.requires.clone(),
        _ => return Ok(Missing::default()),
    };
    // The base branch as it is now (a library added since the work started counts), which
    // `sync` has just fetched.
    sync(cx).await?;
    let branch = cx.base_branch();
    let declared = git(cx, move |ws, repo| {
        let tip = ws.remote_head(repo, &branch)?.oid();
        Ok(Declared::of(&Tree::of_commit(repo, tip)?))
    })
    .await?;
    let checked = match declared.sources.as_slice() {
        [] => "no manifest or lockfile at the repository's root".to_owned(),
        files => format!("checked {}", files.join(", ")),
    };
    let base_branch = cx.base_branch();
    let mut out = Missing::default();
    let lacking = needs.iter().filter(|r| {
        if r.is_service() {
            !declared.has_service(&r.name)
        } else {
            !declared.has_library(&r.name)
        }
    });
    for r in lacking {
        // The name is a model's words: one short line, no markup.
        let name: String = r
            .name
            .chars()
            .filter(|c| !c.is_control() && !matches!(c, '`' | '<' | '>' | '[' | ']'))
            .take(100)
            .collect();
        let (kind, question) = if r.is_service() {
            (
                "service",
                format!(
                    "The plan needs the service `{name}`, which the repository does not run ({checked}, and no compose file or devcontainer names it). Add it to `{base_branch}` or say what to use instead, then comment `/hive plan`."
                ),
            )
        } else {
            (
                "library",
                format!(
                    "The plan needs the library `{name}`, which the project does not depend on ({checked}). Add it to the project's dependencies on `{base_branch}` or say which library to use instead, then comment `/hive plan`."
                ),
            )
        };
        out.questions.push(question);
        out.names.push(format!("`{name}` ({kind})"));
    }
    Ok(out)
}

/// `knowledge.missing: dependency_ticket`: an issue of its own asks for what is missing, with
/// the hive's label so that it runs as a ticket first (one issue per ticket, however often this
/// runs); this ticket waits, Blocked, and plans again once that issue's change lands.
pub(super) async fn dependency_ticket(
    cx: &mut Ctx<'_, '_>,
    missing: &Missing,
) -> Result<Step, JobError> {
    let (id, issue) = (cx.run.ticket.id, cx.run.ticket.issue_number);
    let marker = format!("<!-- vibeloop:dependency-of {id} -->");
    let title = format!(
        "Add {} for #{issue}",
        missing.names.join(", ").replace('`', "")
    );
    let body = format!(
        "{marker}\n#{issue} ({id}) plans to use {}, which the project does not have yet.\n\n\
         Add it to the project (its manifest and lockfile, or the compose file for a service), \
         with a test that uses it. #{issue} waits for this issue's change to land, then plans again.",
        missing.names.join(", ")
    );
    let label = cx.env.config.label.clone();
    let n = cx
        .run
        .client
        .ensure_issue(&marker, &title, &body, &[label.as_str()])
        .await?;
    cx.flow.plan.waits_for = Some(n);
    cx.flow.next = Node::PlanCheck;
    let data = serde_json::json!({ "issue": n, "missing": missing.names });
    cx.checkpoint(Node::PlanCheck, serde_json::json!({}), data)
        .await?;
    let detail = format!(
        "Waits for #{n}, which adds {} to the project; this ticket plans again once it lands.",
        missing.names.join(", ")
    );
    cx.settle(crate::ticket::TaskState::Blocked, detail).await?;
    Ok(Step::Stop)
}

/// A ticket of `repo` completed for issue `issue`: the tickets that wait for it
/// (`knowledge.missing: dependency_ticket`) plan again.
pub(super) async fn wake_dependents(cx: &Ctx<'_, '_>) -> Result<(), JobError> {
    let (repo, issue) = (&cx.run.ticket.repo, cx.run.ticket.issue_number);
    let store = &cx.run.hive.store;
    for t in store.tickets().await? {
        if &t.repo != repo || t.state != crate::ticket::TaskState::Blocked {
            continue;
        }
        let flow = super::state::load(store, t.key).await?;
        if flow.plan.waits_for != Some(issue) {
            continue;
        }
        store
            .signal(t.key, &crate::ticket::Signal::Plan, "vibeloop")
            .await?;
        if store
            .enqueue(&crate::store::jobs::JobKey::Ticket(t.key))
            .await?
        {
            cx.run.hive.jobs_queued.notify_one();
        }
    }
    Ok(())
}
