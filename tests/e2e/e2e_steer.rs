//! People steering the hive from GitHub, end to end: slash commands and their permissions,
//! approving reviews, check-run buttons, questions that block a plan, plan approval, abort and
//! reset. Each command gets a reaction and a reply, and is recorded.

use crate::support;

use support::fake_llm::Step;
use support::hive::*;
use vibeloop::ids::RepoName;
use vibeloop::ticket::TaskState;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approval_needs_write_permission() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    w.gh.set_permission(REPO, "visitor", "read");
    w.label().await;
    let t = w.waiting_for_approval().await;
    let pr = t.pr_number.unwrap();

    // A reader's /hive approve is refused, with the permission it needs.
    let id = w.say_as("visitor", "/hive approve").await;
    let reply = w.reply_to(id).await;
    assert!(
        reply.contains("needs write permission") && reply.contains("you have read"),
        "{reply}"
    );
    assert_eq!(w.gh.comment_reactions(REPO, id), ["-1"]);
    // So is a reader's approving review.
    let (_, sent) =
        w.gh.review_pull(REPO, pr, "visitor", "approved", "LGTM")
            .await;
    let d = w.handled(&sent).await;
    assert!(
        d.detail.as_deref().unwrap_or("").contains("refused"),
        "{d:?}"
    );
    assert_eq!(
        w.ticket().await.unwrap().state,
        TaskState::AwaitingVerification
    );
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "calc.py").as_deref(),
        Some(CALC_BUGGY)
    );
    assert!(w.gh.tags(REPO).is_empty(), "merged without approval");

    // A maintainer's approving review counts as /hive approve.
    w.gh.review_pull(REPO, pr, MAINTAINER, "approved", "Ship it")
        .await;
    w.wait_state(TaskState::Completed).await;
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "calc.py").as_deref(),
        Some(CALC_FIXED)
    );

    // Who asked what, and what came of it, is on record.
    let store = w.bot.store().await;
    let records = store
        .commands_for(&RepoName::parse(REPO).unwrap(), w.issue)
        .await
        .unwrap();
    let seen: Vec<(&str, &str, &str)> = records
        .iter()
        .map(|r| (r.author.as_str(), r.command.as_str(), r.outcome.as_str()))
        .collect();
    assert_eq!(
        seen,
        [
            ("visitor", "/hive approve", "refused: permission"),
            ("visitor", "approving review", "refused: permission"),
            (MAINTAINER, "approving review", "approve"),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_approve_button_of_the_critics_check_run_merges() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    w.label().await;
    w.waiting_for_approval().await;
    let critic =
        w.gh.check_runs(REPO)
            .into_iter()
            .find(|c| c.name == "hive/critic")
            .unwrap();
    assert_eq!(critic.actions.len(), 1, "{:?}", critic.actions);
    assert_eq!(critic.actions[0]["label"], "Approve");
    w.gh.press_button(REPO, critic.id, "approve", MAINTAINER)
        .await;
    w.wait_state(TaskState::Completed).await;
    assert!(w.gh.tags(REPO).iter().any(|(t, _)| t == "auto-v0.0.1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_stops_the_ticket_and_removes_its_worktrees() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    w.label().await;
    w.waiting_for_approval().await;
    let worktrees = w.env.data_dir.join("worktrees/acme/widgets");
    assert!(worktrees.join("feat-T-1").exists(), "no worktree to remove");

    let id = w.say("/hive abort").await;
    assert!(w.reply_to(id).await.contains("T-1 is aborted"));
    let t = w.wait_state(TaskState::Failed).await;
    assert_eq!(t.detail.as_deref(), Some("Aborted by @maintainer."));
    assert!(w.status_comment().contains("Aborted by @maintainer."));
    w.bot
        .wait_until("the worktrees to go", WAIT, || async {
            (!worktrees.join("feat-T-1").exists() && !worktrees.join("test-T-1").exists())
                .then_some(())
        })
        .await;
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "calc.py").as_deref(),
        Some(CALC_BUGGY)
    );
    assert!(w.gh.tags(REPO).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn questions_block_the_plan_until_the_issue_is_edited() {
    let mut vague: serde_json::Value = serde_json::from_str(&plan_json()).unwrap();
    vague["open_questions"] = serde_json::json!(["Must add() accept floats, or integers only?"]);
    let script = script_with(vec![
        ("architect", vec![Step::say(&vague.to_string())]),
        ("architect|Integers only", vec![Step::say(&plan_json())]),
    ]);
    let w = World::start(script, &calc(HIVE_YML)).await;
    w.label().await;
    w.wait_state(TaskState::Blocked).await;
    let questions: Vec<_> =
        w.gh.comments(REPO, w.issue)
            .into_iter()
            .filter(|c| c.body.contains("<!-- vibeloop:questions T-1"))
            .collect();
    assert_eq!(questions.len(), 1, "{questions:?}");
    assert!(
        questions[0].body.contains("Must add() accept floats"),
        "{}",
        questions[0].body
    );
    assert!(
        w.llm.requests("builder").is_empty(),
        "coding started on a vague plan"
    );

    // The answer goes into the issue; the edit makes the Architect plan again.
    let body = "`add(2, 3)` returns -1; it should return 5. Integers only.";
    w.gh.edit_issue(REPO, w.issue, "add() subtracts", body)
        .await;
    w.waiting_for_approval().await;
    assert_eq!(tasks_of(&w.llm, "architect").len(), 2);
    assert!(
        w.status_comment()
            .contains("- [x] calc.py → add returns a + b"),
        "{}",
        w.status_comment()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coding_waits_for_the_plans_approval_when_asked() {
    let w = World::start(happy_script(), &calc(PLAN_APPROVAL_YML)).await;
    w.label().await;
    w.bot
        .wait_until("the plan to wait", WAIT, || async {
            w.ticket().await.filter(|t| {
                t.state == TaskState::Blocked
                    && t.detail.as_deref().unwrap_or("").contains("plan waits")
            })
        })
        .await;
    assert!(
        w.status_comment().contains("**Plan: Make add() add**"),
        "{}",
        w.status_comment()
    );
    assert!(w.llm.requests("builder").is_empty());
    let id = w.say("/hive approve").await;
    assert!(w.reply_to(id).await.contains("approved"));
    w.waiting_for_approval().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_are_parsed_like_markdown_and_edits_run_only_new_ones() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    w.label().await;
    w.waiting_for_approval().await;

    // A typo gets help with a guess.
    let id = w.say("/hive stauts").await;
    let reply = w.reply_to(id).await;
    assert!(
        reply.contains("Did you mean `/hive status`?") && reply.contains("/hive retry"),
        "{reply}"
    );
    assert_eq!(w.gh.comment_reactions(REPO, id), ["confused"]);

    // Commands in code blocks and quotes are text, not commands.
    let body = "Before:\n```\n/hive abort\n```\n> /hive abort\n\n/hive status";
    let id = w.say(body).await;
    let reply = w.reply_to(id).await;
    assert!(reply.contains("T-1 is AwaitingVerification"), "{reply}");
    let replies = |id: u64| {
        let marker = format!("<!-- vibeloop:reply comment:{id}#");
        w.gh.comments(REPO, w.issue)
            .into_iter()
            .filter(|c| c.body.contains(&marker))
            .count()
    };
    assert_eq!(replies(id), 1);

    // An edit that adds a line runs that line only.
    let sent =
        w.gh.edit_comment(REPO, id, &format!("{body}\n/hive help"))
            .await;
    w.handled(&sent).await;
    assert_eq!(replies(id), 2);
    assert_eq!(
        w.ticket().await.unwrap().state,
        TaskState::AwaitingVerification,
        "the quoted abort ran"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_needs_an_admin_and_reverts_the_base_to_a_snapshot() {
    let w = World::start(happy_script(), &calc(AUTO_YML)).await;
    w.label().await;
    w.wait_state(TaskState::Completed).await;
    let tagged =
        w.gh.tags(REPO)
            .into_iter()
            .find(|(t, _)| t == "auto-v0.0.1")
            .unwrap()
            .1;
    // Someone breaks main afterwards.
    w.gh.push_commit(
        REPO,
        "main",
        &[("calc.py", "def add(a, b):\n    return None\n")],
        "Refactor",
    );

    let id = w.say("/hive reset auto-v0.0.1").await;
    assert!(w.reply_to(id).await.contains("needs admin permission"));
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "calc.py").as_deref(),
        Some("def add(a, b):\n    return None\n")
    );

    w.gh.set_permission(REPO, "boss", "admin");
    let id = w.say_as("boss", "/hive reset auto-v0.0.1").await;
    let reply = w.reply_to(id).await;
    assert!(
        reply.contains("reset to `auto-v0.0.1` (reverted by commit"),
        "{reply}"
    );
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "calc.py").as_deref(),
        Some(CALC_FIXED)
    );
    let main = w.gh.branch_sha(REPO, "main").unwrap();
    assert_ne!(main, tagged, "history was rewritten, not reverted");
    // The revert is the App's commit made through GitHub's API: signed by GitHub.
    let git = git2::Repository::open_bare(w.gh.bare_path(REPO)).unwrap();
    let oid = git2::Oid::from_str(&main).unwrap();
    assert!(git.extract_signature(&oid, None).is_ok(), "{main} unsigned");
}

/// The retry engine as `.github/hive.yml` sets it: a step that keeps failing in passing (here
/// GitHub refusing the reaction every run of the ticket starts with) is tried
/// `retry.human_intervention_after` times with the repository's backoff, then the ticket waits
/// for a person with a report; once GitHub works again, `/hive retry` goes on from where it
/// stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_retry_engine_asks_a_person_after_the_repositorys_number_of_failures() {
    let yml = format!(
        "{HIVE_YML}retry: {{ base_delay_ms: 100, backoff_multiplier: 1.5, max_delay_ms: 200, human_intervention_after: 2 }}\n"
    );
    let w = World::start(happy_script(), &calc(&yml)).await;
    w.label().await;
    w.waiting_for_approval().await;
    w.gh.inject(
        support::fake_github::Fault::new("POST", &format!("/issues/{}/reactions", w.issue), 503)
            .times(10_000),
    );
    w.say("/hive approve").await;
    let t = w.wait_state(TaskState::HumanNeeded).await;
    let detail = t.detail.unwrap_or_default();
    assert!(
        detail.starts_with("Stopped after 2 tries in a row without progress:")
            && detail.contains("`/hive retry` goes on from where it stopped"),
        "{detail}"
    );
    assert!(!w.gh.pull(REPO, t.pr_number.unwrap()).unwrap().merged);
    w.gh.clear_faults();
    w.say("/hive retry").await;
    w.wait_state(TaskState::Completed).await;
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "calc.py").as_deref(),
        Some(CALC_FIXED)
    );
}
