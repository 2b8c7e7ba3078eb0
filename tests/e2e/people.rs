//! People on the bot's pull request: commits a person pushes to `feat/T-n` are part of the
//! change (kept through the rebase, in what lands, credited), and the base's own commits are
//! never undone by a second rebase.

use crate::support;

use support::hive::*;
use vibeloop::ticket::TaskState;

/// The message of the commit at the tip of `branch` in the fake GitHub's repository.
fn tip_message(w: &World, branch: &str) -> String {
    let git = git2::Repository::open_bare(w.gh.bare_path(REPO)).unwrap();
    let commit = git
        .find_reference(&format!("refs/heads/{branch}"))
        .unwrap()
        .peel_to_commit()
        .unwrap();
    commit.message().unwrap_or_default().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persons_commit_on_the_branch_lands_with_the_change_and_is_credited() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    w.label().await;
    let pr = w.waiting_for_approval().await.pr_number.unwrap();
    let readme = "# calc\n\nAdds numbers.\n";
    let theirs =
        w.gh.push_commit(REPO, "feat/T-1", &[("README.md", readme)], "Document calc");
    let (_, sent) =
        w.gh.review_pull(REPO, pr, MAINTAINER, "approved", "LGTM")
            .await;
    assert_eq!(sent.status, 202, "{}", sent.text);
    w.wait_state(TaskState::Completed).await;

    w.assert_on_main(&[("README.md", readme), ("calc.py", CALC_FIXED)]);
    let message = tip_message(&w, "main");
    assert!(
        message.contains("Co-authored-by: Maintainer <maintainer@example.com>"),
        "{message}"
    );
    let body = w.gh.pull(REPO, pr).unwrap().body;
    assert!(
        body.contains("Commits by people")
            && body.contains(&format!("`{}` Maintainer — Document calc", &theirs[..7])),
        "{body}"
    );
    let status = w.status_comment();
    assert!(
        status.contains("Commits by people in this change")
            && status.contains(&format!("Maintainer (`{}`)", &theirs[..7])),
        "{status}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_rebase_keeps_what_the_base_gained_before_the_first() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    w.gh.protect(
        REPO,
        "main",
        support::fake_github::Protection::like_main(1, &["hive/test"], true),
    );
    w.label().await;
    let pr = w.waiting_for_approval().await.pr_number.unwrap();
    // The base moves before the approval (the first rebase takes it in) and again while the
    // landing waits for a review (the second rebase must keep both).
    w.gh.push_commit(REPO, "main", &[("NOTES.md", "first\n")], "Notes");
    w.say("/hive approve").await;
    w.bot
        .wait_until("the landing to wait", WAIT, || async {
            let t = w.ticket().await?;
            t.detail
                .unwrap_or_default()
                .starts_with("Waiting to merge")
                .then_some(())
        })
        .await;
    w.gh.push_commit(REPO, "main", &[("README.md", "# widgets\n")], "Docs");
    w.gh.review_pull(REPO, pr, MAINTAINER, "approved", "").await;
    w.wait_state(TaskState::Completed).await;
    for (file, text) in [
        ("NOTES.md", "first\n"),
        ("README.md", "# widgets\n"),
        ("calc.py", CALC_FIXED),
    ] {
        assert_eq!(
            w.gh.file_on_branch(REPO, "main", file).as_deref(),
            Some(text),
            "{file} on main"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_during_the_builders_attempt_is_built_on_not_pushed_over() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    w.llm.hold("builder");
    w.label().await;
    w.bot
        .wait_until("the Builder's call", WAIT, || async {
            (w.llm.waiting() > 0).then_some(())
        })
        .await;
    // A person pushes to the branch while the Builder works.
    let readme = "# calc\n";
    let theirs =
        w.gh.push_commit(REPO, "feat/T-1", &[("README.md", readme)], "Start the docs");
    w.llm.release();
    let pr = w.waiting_for_approval().await.pr_number.unwrap();
    // The branch never left the person's commit behind.
    assert!(
        w.gh.branch_contains(REPO, "feat/T-1", &theirs),
        "feat/T-1 moved off the person's commit"
    );
    w.gh.review_pull(REPO, pr, MAINTAINER, "approved", "").await;
    w.wait_state(TaskState::Completed).await;
    w.assert_on_main(&[("README.md", readme), ("calc.py", CALC_FIXED)]);
    assert!(tip_message(&w, "main").contains("Co-authored-by: Maintainer"));
}
