//! The knowledge check of Preparing: every library and service the Architect's plan says it
//! needs (`plan.requires`) is looked for in the base's manifests, lockfiles, compose files and
//! devcontainer ([`crate::env::manifests`]). What is missing becomes a question for people
//! (`knowledge.missing: block`, the default) or a note on the timeline (`ignore`).

use super::ctx::{Ctx, git, sync};
use crate::env::manifests::Declared;
use crate::env::tree::Tree;
use crate::hive::job::JobError;

/// One question per library or service the plan needs and the base does not declare; empty
/// when nothing is missing (or the plan names nothing).
pub(super) async fn missing(cx: &mut Ctx<'_, '_>) -> Result<Vec<String>, JobError> {
    let needs = match &cx.flow.blueprint {
        Some(bp) if !bp.plan.requires.is_empty() => bp.plan.requires.clone(),
        _ => return Ok(Vec::new()),
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
    let questions = needs
        .iter()
        .filter(|r| {
            if r.is_service() {
                !declared.has_service(&r.name)
            } else {
                !declared.has_library(&r.name)
            }
        })
        .map(|r| {
            // The name is a model's words: one short line, no markup.
            let name: String = r
                .name
                .chars()
                .filter(|c| !c.is_control() && !matches!(c, '`' | '<' | '>' | '[' | ']'))
                .take(100)
                .collect();
            if r.is_service() {
                format!(
                    "The plan needs the service `{name}`, which the repository does not run ({checked}, and no compose file or devcontainer names it). Add it to `{base_branch}` or say what to use instead, then comment `/hive plan`."
                )
            } else {
                format!(
                    "The plan needs the library `{name}`, which the project does not depend on ({checked}). Add it to the project's dependencies on `{base_branch}` or say which library to use instead, then comment `/hive plan`."
                )
            }
        })
        .collect();
    Ok(questions)
}
