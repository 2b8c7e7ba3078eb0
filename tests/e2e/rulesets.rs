//! Landing where rulesets hold the branches (GitHub's rules in force for a branch, beside or
//! instead of classic protection): the bot says which rules hold the landing, and a push the
//! rules refuse stops the ticket at once with GitHub's own words, never tried again; where they
//! ask for sign-offs or signed commits, the bot's commits have them.

use crate::support;

use support::fake_github::{Rule, Ruleset};
use support::hive::*;
use vibeloop::ticket::TaskState;

/// The bot's pushes (`git-receive-pack` requests).
fn pushes(w: &World) -> usize {
    w.gh.requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/git-receive-pack"))
        .count()
}

/// The commits on the bot's branches since `first` (main when the ticket started), with the
/// branch each was found on.
pub(crate) fn bot_commits(
    w: &World,
    git: &git2::Repository,
    first: &str,
) -> Vec<(&'static str, git2::Oid)> {
    let mut found = Vec::new();
    for branch in ["test/T-1", "feat/T-1"] {
        let tip = w.gh.branch_sha(REPO, branch).unwrap();
        let mut walk = git.revwalk().unwrap();
        walk.push(git2::Oid::from_str(&tip).unwrap()).unwrap();
        walk.hide(git2::Oid::from_str(first).unwrap()).unwrap();
        found.extend(walk.map(|oid| (branch, oid.unwrap())));
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_a_ruleset_refuses_stops_the_ticket_at_once_naming_the_rule() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    w.gh.add_ruleset(
        REPO,
        Ruleset {
            id: 7,
            name: "tracked everywhere".into(),
            branches: vec!["~ALL".into()],
            rules: vec![Rule::MessagePattern {
                name: String::new(),
                pattern: "^JIRA-[0-9]+ ".into(),
            }],
        },
    );
    w.label().await;
    let t = w.wait_state(TaskState::Failed).await;
    let status = w.status_comment();
    assert!(
        status.contains("GH013")
            && status.contains("Commit message must match a given regex pattern: ^JIRA-[0-9]+"),
        "{status}"
    );
    assert!(status.contains("bypass list"), "{status}");
    // Refused once per branch, not tried again: the Breaker's and the Builder's first pushes.
    let n = pushes(&w);
    assert!((1..=2).contains(&n), "{n} pushes; {t:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_landing_waits_for_what_the_rulesets_over_the_base_ask_and_says_so() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    w.gh.add_ruleset(
        REPO,
        Ruleset {
            id: 9,
            name: "main".into(),
            branches: vec!["main".into()],
            rules: vec![
                Rule::PullRequest { approvals: 2 },
                Rule::StatusChecks {
                    contexts: vec!["hive/test".into()],
                    strict: false,
                },
                Rule::LinearHistory,
            ],
        },
    );
    w.label().await;
    let t = w.waiting_for_approval().await;
    let pr = t.pr_number.unwrap();
    // What the rulesets ask is said before anyone tries.
    let prompt = t.detail.unwrap_or_default();
    assert!(
        prompt.contains(
            "`main` needs 2 approving reviews from people with write access, `hive/test` passing \
             and a linear history (rulesets: 9 of acme/widgets)"
        ),
        "{prompt}"
    );
    // One approval: GitHub, under the ruleset, refuses the merge, and the bot waits for more.
    w.gh.review_pull(REPO, pr, MAINTAINER, "approved", "LGTM")
        .await;
    let detail = w
        .bot
        .wait_until("the landing to wait", WAIT, || async {
            let t = w.ticket().await?;
            let d = t.detail.unwrap_or_default();
            d.starts_with("Waiting to merge").then_some(d)
        })
        .await;
    assert!(detail.contains("2 approving reviews"), "{detail}");
    assert!(w.gh.pull(REPO, pr).is_some_and(|p| !p.merged));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn where_a_ruleset_asks_for_sign_offs_every_commit_of_the_bot_has_one() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    w.gh.add_ruleset(
        REPO,
        Ruleset {
            id: 13,
            name: "DCO".into(),
            branches: vec!["~ALL".into()],
            rules: vec![Rule::MessagePattern {
                name: String::new(),
                pattern: "Signed-off-by: ".into(),
            }],
        },
    );
    let first = w.gh.branch_sha(REPO, "main").unwrap();
    w.label().await;
    let t = w.waiting_for_approval().await;
    w.gh.review_pull(REPO, t.pr_number.unwrap(), MAINTAINER, "approved", "LGTM")
        .await;
    w.wait_state(TaskState::Completed).await;
    let git = git2::Repository::open_bare(w.gh.bare_path(REPO)).unwrap();
    let line = "Signed-off-by: vibeloop[bot] <vibeloop[bot]@users.noreply.github.com>";
    let commits = bot_commits(&w, &git, &first);
    for (branch, oid) in &commits {
        let commit = git.find_commit(*oid).unwrap();
        let message = commit.message().unwrap_or_default();
        let n = message.lines().filter(|l| *l == line).count();
        assert_eq!(n, 1, "{branch}: {message}");
    }
    let n = commits.len();
    assert!(
        n >= 2,
        "the Breaker's and the Builder's commits at least: {n}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn where_rules_require_signed_commits_the_bot_makes_them_through_the_api_and_lands() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    w.gh.add_ruleset(
        REPO,
        Ruleset {
            id: 17,
            name: "signed everywhere".into(),
            branches: vec!["~ALL".into()],
            rules: vec![Rule::Signatures],
        },
    );
    let first = w.gh.branch_sha(REPO, "main").unwrap();
    w.label().await;
    let t = w.waiting_for_approval().await;
    let pr = t.pr_number.unwrap();
    // Every commit on the bot's branches is GitHub's, signed.
    let git = git2::Repository::open_bare(w.gh.bare_path(REPO)).unwrap();
    let commits = bot_commits(&w, &git, &first);
    for (branch, oid) in &commits {
        let signed = git.extract_signature(oid, None).is_ok();
        assert!(signed, "{branch}: {oid} unsigned");
    }
    let n = commits.len();
    assert!(n >= 3, "the tests, the code and their merge: {n}");
    // The head the gates judged is the head GitHub has.
    let head = w.gh.branch_sha(REPO, "feat/T-1").unwrap();
    assert_eq!(t.head_sha.as_deref(), Some(head.as_str()));
    let judged =
        w.gh.check_runs(REPO)
            .into_iter()
            .any(|c| c.head_sha == head && c.name == "hive/test");
    assert!(judged, "hive/test on {head}");
    w.gh.review_pull(REPO, pr, MAINTAINER, "approved", "LGTM")
        .await;
    w.wait_state(TaskState::Completed).await;
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "calc.py").as_deref(),
        Some(CALC_FIXED)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ref_update_the_rulesets_refuse_is_reported_in_githubs_words() {
    let yml = format!("{HIVE_YML}merge: {{ method: fast-forward }}\n");
    let w = World::start(happy_script(), &calc(&yml)).await;
    w.gh.add_ruleset(
        REPO,
        Ruleset {
            id: 19,
            name: "signed main".into(),
            branches: vec!["main".into()],
            rules: vec![Rule::Signatures],
        },
    );
    let main = w.gh.branch_sha(REPO, "main").unwrap();
    w.label().await;
    let pr = w.waiting_for_approval().await.pr_number.unwrap();
    w.gh.review_pull(REPO, pr, MAINTAINER, "approved", "LGTM")
        .await;
    let t = w.wait_state(TaskState::HumanNeeded).await;
    let why = t.detail.unwrap_or_default();
    assert!(
        why.contains("Repository rule violations found")
            && why.contains("Commits must have verified signatures"),
        "{why}"
    );
    assert_eq!(w.gh.branch_sha(REPO, "main").unwrap(), main);
}
