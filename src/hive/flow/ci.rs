//! The repository's own CI as feedback: after the regate, the landing waits for the checks
//! other Apps (GitHub Actions, any CI that reports check runs or commit statuses) report on the
//! head it will land ([`Watch`]: all of them, those branch protection requires, and those that
//! reported on the pull request's head before the rebase, which CI may not have started yet).
//! A failing GitHub Actions job is re-run once on the same commit; one that passes then was
//! flaky and costs the Builder nothing. A failure that holds becomes the Builder's findings —
//! the check's name, summary, annotations and its job's log tail, fenced as data — for at most
//! `ci.max_attempts` attempts; then a person is asked, with the failing checks linked. A check
//! completing wakes the ticket (`deliveries.rs`), as the sweep does for a missed one.

use std::collections::BTreeSet;

use super::ci_report::{finding, linked};
use super::ctx::enter_node;
use super::ctx::{Ctx, Step};
use super::state::{Node, Wait};
use crate::config::ci::Watch;
use crate::github::ci::{CiAnnotation, CiReport, CiState, LogTail};
use crate::hive::job::JobError;
use crate::ids::CommitSha;
use crate::ticket::TaskState;

/// At most this many failing checks are told in full to the Builder (the rest by name).
const DETAILED: usize = 3;
/// What of a job's log is downloaded.
const LOG_KEEP: usize = 32 << 10;

/// What the reports on one commit say of the watched checks.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Look {
    /// Checks not finished, or not reported yet, with why.
    pub pending: Vec<String>,
    /// The latest failing run of each failing check.
    pub failing: Vec<CiReport>,
    pub passed: Vec<String>,
    /// Checks whose latest run passed after an earlier one on the same commit failed.
    pub flaky: Vec<String>,
}

/// Judges `reports` (oldest first) for the checks `watch` covers: every check of another App
/// with `All`, and each name in `expected` whatever `watch` is (a missing one is pending).
/// The bot's own check runs (`external_id` `vibeloop:…`) and `hive/…` names are never watched.
pub(super) fn judge(reports: &[CiReport], expected: &BTreeSet<String>, watch: Watch) -> Look {
    let ours = |r: &CiReport| {
        r.external_id
            .as_deref()
            .is_some_and(|e| e.starts_with("vibeloop:"))
    };
    let mut names: BTreeSet<&str> = expected
        .iter()
        .map(String::as_str)
        .filter(|n| !n.starts_with("hive/"))
        .collect();
    if watch == Watch::All {
        names.extend(reports.iter().filter(|r| !ours(r)).map(|r| r.name.as_str()));
    }
    let mut look = Look::default();
    for name in names {
        let runs: Vec<&CiReport> = reports
            .iter()
            .filter(|r| r.name == name && !ours(r))
            .collect();
        let Some(last) = runs.last() else {
            look.pending
                .push(format!("`{}` (not reported yet)", name.replace('`', "'")));
            continue;
        };
        match last.state {
            CiState::Pending => look.pending.push(last.describe_as(&last.conclusion)),
            CiState::Failed => look.failing.push((*last).clone()),
            CiState::Passed => {
                if runs.iter().any(|r| r.state == CiState::Failed) {
                    look.flaky.push(name.to_owned());
                }
                look.passed.push(name.to_owned());
            }
        }
    }
    look
}

/// Ci: wait for the repository's CI on the regated head, re-run a failing Actions job once,
/// then land, or send the failure to the Builder.
pub(super) async fn ci(cx: &mut Ctx<'_, '_>) -> Result<Step, JobError> {
    enter_node(cx).await?;
    let sha = cx
        .flow
        .land
        .rebased
        .clone()
        .ok_or_else(|| JobError::permanent("ci without a rebased commit"))?;
    let config = cx.env.config.ci.clone();
    if config.watch == Watch::None {
        return passed(cx, &sha, &Look::default()).await;
    }
    let reports = cx.run.client.ci_reports(&sha).await?;
    let expected = expected(cx, &sha, config.watch).await?;
    let look = judge(&reports, &expected, config.watch);
    if !look.pending.is_empty() {
        let said = format!("waits for {}", look.pending.join(", "));
        return wait(cx, &sha, said).await;
    }
    if config.rerun_failed && rerun_flaky_suspects(cx, &sha, &reports, &look).await? {
        return Ok(Step::Stop);
    }
    for name in &look.flaky {
        let key = (sha.clone(), name.clone());
        if !cx.flow.land.ci.flaky.contains(&key) {
            cx.flow.land.ci.flaky.push(key);
            let said = format!(
                "`{name}` failed on `{}`, then passed when run again: flaky, not charged to the Builder.",
                sha.short()
            );
            cx.run
                .event(
                    "ci",
                    serde_json::json!({ "verdict": "flaky", "check": name, "said": said }),
                )
                .await;
        }
    }
    if look.failing.is_empty() {
        return passed(cx, &sha, &look).await;
    }
    failed(cx, &sha, look.failing).await
}

/// The names the landing waits for whatever has reported: those the base's protection
/// requires, and (watching all) those other Apps reported on the Builder's head before the
/// rebase, which CI may not have started on the rebased one yet.
async fn expected(
    cx: &mut Ctx<'_, '_>,
    sha: &CommitSha,
    watch: Watch,
) -> Result<BTreeSet<String>, JobError> {
    let base = cx.base_branch();
    let mut names: BTreeSet<String> = match cx.run.client.branch_rule(&base).await {
        Ok(rule) => rule
            .map(|r| r.required_checks)
            .unwrap_or_default()
            .into_iter()
            .collect(),
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the base branch's protection");
            BTreeSet::new()
        }
    };
    let before = cx.flow.code.builder.as_ref().map(|w| w.sha.clone());
    if watch == Watch::All
        && let Some(before) = before.filter(|b| b != sha)
    {
        let earlier = cx.run.client.ci_reports(&before).await?;
        let theirs = earlier.iter().filter(|r| {
            !r.external_id
                .as_deref()
                .is_some_and(|e| e.starts_with("vibeloop:"))
        });
        names.extend(theirs.map(|r| r.name.clone()));
    }
    Ok(names)
}

/// Re-runs each failing GitHub Actions job that failed once on `sha` and was not re-run yet.
/// True when one was: the ticket waits for its result.
async fn rerun_flaky_suspects(
    cx: &mut Ctx<'_, '_>,
    sha: &CommitSha,
    reports: &[CiReport],
    look: &Look,
) -> Result<bool, JobError> {
    let suspects: Vec<&CiReport> = look
        .failing
        .iter()
        .filter(|f| f.is_actions_job())
        .filter(|f| {
            let failures = reports
                .iter()
                .filter(|r| r.name == f.name && r.state == CiState::Failed)
                .count();
            failures == 1
                && !cx
                    .flow
                    .land
                    .ci
                    .reruns
                    .contains(&(sha.clone(), f.name.clone()))
        })
        .collect();
    if suspects.is_empty() {
        return Ok(false);
    }
    // Each job is asked once: one GitHub re-ran, or would not (no permission, too old), is
    // recorded; a request that failed in passing is not, and the retried step asks again (a
    // job already re-running is refused, and recorded then). The re-run's completion finds
    // the ticket whether or not its wait is stored yet (`deliveries.rs` wakes any landing of
    // that head).
    let mut rerun = Vec::new();
    for f in suspects {
        let Some(id) = f.id else { continue };
        let accepted = cx.run.client.rerun_job(id).await?;
        cx.flow.land.ci.reruns.push((sha.clone(), f.name.clone()));
        if accepted {
            rerun.push(f.describe());
        }
    }
    if rerun.is_empty() {
        return Ok(false);
    }
    let said = format!(
        "re-runs {} once on the same commit: a check that passes then is flaky and costs the Builder nothing",
        rerun.join(", ")
    );
    cx.run
        .event(
            "ci",
            serde_json::json!({ "verdict": "rerun", "said": said }),
        )
        .await;
    wait(cx, sha, said).await?;
    Ok(true)
}

/// The ticket waits for the CI: a completed check (or the sweep) wakes it.
async fn wait(cx: &mut Ctx<'_, '_>, sha: &CommitSha, said: String) -> Result<Step, JobError> {
    cx.flow.land.waiting = Some(Wait::Checks);
    cx.checkpoint(
        Node::Ci,
        serde_json::json!({ "sha": sha.as_str() }),
        serde_json::json!({ "waiting": said }),
    )
    .await?;
    let pr = cx
        .flow
        .review
        .pr
        .map(|n| format!(" (#{n})"))
        .unwrap_or_default();
    let detail = format!(
        "The repository's CI on `{}`{pr} {said}. The bot lands it once they pass.",
        sha.short()
    );
    cx.settle(TaskState::AwaitingVerification, detail).await?;
    Ok(Step::Stop)
}

async fn passed(cx: &mut Ctx<'_, '_>, sha: &CommitSha, look: &Look) -> Result<Step, JobError> {
    cx.flow.land.waiting = None;
    cx.flow.next = Node::Merge;
    cx.checkpoint(
        Node::Ci,
        serde_json::json!({ "sha": sha.as_str() }),
        serde_json::json!({ "passed": look.passed, "flaky": look.flaky }),
    )
    .await?;
    Ok(Step::Next)
}

/// The CI failed on `sha`: the Builder's findings, or a person once its attempts are spent.
async fn failed(
    cx: &mut Ctx<'_, '_>,
    sha: &CommitSha,
    failing: Vec<CiReport>,
) -> Result<Step, JobError> {
    let mut findings = Vec::new();
    for (i, f) in failing.iter().enumerate() {
        findings.push(if i < DETAILED {
            let (annotations, log) = evidence(cx, f).await;
            finding(f, sha, &annotations, log.as_ref())
        } else {
            finding(f, sha, &[], None)
        });
    }
    let named: Vec<String> = failing.iter().map(linked).collect();
    let why = format!("{} failed", named.join(", "));
    cx.flow.land.ci.charged += 1;
    let max = cx.env.config.ci.max_attempts;
    let said = format!("The repository's CI on `{}`: {why}.", sha.short());
    cx.run
        .event(
            "ci",
            serde_json::json!({ "verdict": "failed", "said": said, "charged": cx.flow.land.ci.charged }),
        )
        .await;
    cx.flow.code.findings = findings;
    cx.flow.land.waiting = None;
    super::memory::attempt_failed(cx).await?;
    cx.checkpoint_failed(
        Node::Ci,
        serde_json::json!({ "sha": sha.as_str() }),
        serde_json::json!({ "failed": named }),
        &why,
    )
    .await?;
    // The Builder starts from the head the CI judged.
    cx.flow.code.builder = cx.flow.code.builder.take().map(|w| super::state::Work {
        sha: sha.clone(),
        ..w
    });
    if cx.flow.land.ci.charged > max {
        let branch = cx.run.ticket.id.feat_branch();
        let report = format!(
            "{said}\n\nIt sent the Builder back {max} time(s) (`ci.max_attempts`), and fails still. \
             Fix it on `{branch}` (or re-run it if it is flaky), then `/hive retry` to look at the CI again; \
             `/hive retry builder` gives the Builder another attempt with what the CI said."
        );
        return cx.needs_human(&report).await;
    }
    cx.flow.code.attempt += 1;
    cx.flow.code.attempt_limit = cx.flow.code.attempt_limit.max(cx.flow.code.attempt);
    cx.flow.review.approved_by = None;
    cx.flow.land.rebased = None;
    cx.flow.next = Node::Code;
    cx.note(format!(
        "{said} The Builder tries again with what it said (CI attempt {} of {max}).",
        cx.flow.land.ci.charged
    ))
    .await?;
    cx.publish().await?;
    Ok(Step::Next)
}

/// A failing check's annotations and, for an Actions job, its log's tail; what cannot be had
/// is left out (the check's name and summary still tell the Builder what failed).
async fn evidence(cx: &Ctx<'_, '_>, f: &CiReport) -> (Vec<CiAnnotation>, Option<LogTail>) {
    let Some(id) = f.id else {
        return (Vec::new(), None);
    };
    let client = &cx.run.client;
    let annotations = client.check_annotations(id).await.unwrap_or_else(|e| {
        tracing::warn!(error = %e, check = %f.name, "cannot read the check's annotations");
        Vec::new()
    });
    let log = if f.is_actions_job() {
        client.job_log_tail(id, LOG_KEEP).await.unwrap_or_else(|e| {
            tracing::warn!(error = %e, check = %f.name, "cannot read the job's log");
            None
        })
    } else {
        None
    };
    (annotations, log)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(id: u64, name: &str, state: CiState, app: Option<&str>) -> CiReport {
        CiReport {
            id: Some(id),
            name: name.into(),
            app: app.map(str::to_owned),
            external_id: None,
            state,
            conclusion: match state {
                CiState::Passed => "success",
                CiState::Failed => "failure",
                CiState::Pending => "queued",
            }
            .into(),
            title: None,
            summary: None,
            url: Some(format!("https://github.com/o/r/runs/{id}")),
        }
    }

    #[test]
    fn the_latest_run_of_each_check_decides_and_a_pass_after_a_failure_is_flaky() {
        let ours = CiReport {
            external_id: Some("vibeloop:T-1:test".into()),
            ..report(1, "hive/test", CiState::Failed, Some("vibeloop"))
        };
        let reports = vec![
            ours,
            report(2, "lint", CiState::Failed, Some("github-actions")),
            report(3, "lint", CiState::Passed, Some("github-actions")),
            report(4, "build", CiState::Failed, Some("github-actions")),
            report(5, "docs", CiState::Pending, Some("readthedocs")),
        ];
        let look = judge(&reports, &BTreeSet::new(), Watch::All);
        assert_eq!(look.passed, ["lint"]);
        assert_eq!(look.flaky, ["lint"]);
        assert_eq!(look.failing.len(), 1);
        assert_eq!(look.failing[0].name, "build");
        assert_eq!(look.pending, ["`docs` (check run of readthedocs, queued)"]);
    }

    #[test]
    fn expected_checks_that_have_not_reported_are_waited_for() {
        let expected: BTreeSet<String> = ["ci / test", "hive/test"]
            .into_iter()
            .map(str::to_owned)
            .collect();
        let reports = vec![report(2, "other", CiState::Failed, Some("github-actions"))];
        let look = judge(&reports, &expected, Watch::Required);
        assert_eq!(look.pending, ["`ci / test` (not reported yet)"]);
        assert!(
            look.failing.is_empty(),
            "only the required ones are watched"
        );
        let look = judge(&reports, &expected, Watch::All);
        assert_eq!(look.failing.len(), 1);
    }
}
