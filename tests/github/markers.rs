//! The bot finds what it wrote by hidden markers; a marker copied into anyone else's comment,
//! issue, review or review reply is theirs, never adopted: the bot writes its own instead of
//! editing theirs, waiting on their issue or staying silent.

use crate::support;

use super::repo_ci::setup;
use vibeloop::ids::CommitSha;

const REPO: &str = "acme/widgets";

#[tokio::test]
async fn a_marker_in_a_persons_comment_is_not_the_bots_comment() {
    let (_d, gh, client) = setup().await;
    assert_eq!(client.bot(), "vibeloop[bot]");
    let issue = gh.add_issue(REPO, "Bug", "");
    let marker = "<!-- vibeloop:status T-1 -->";
    let planted = format!("{marker}\nI am the bot now.");
    let theirs = gh.user_comment(REPO, issue, "mallory", &planted);
    let body = format!("{marker}\nVibeloop T-1: Pending");
    let ours = client
        .upsert_marked_comment(issue, marker, None, &body)
        .await
        .unwrap();
    assert_ne!(ours, theirs, "the bot adopted mallory's comment");
    let comments = gh.comments(REPO, issue);
    let of = |id: u64| comments.iter().find(|c| c.id == id).unwrap().clone();
    assert_eq!(of(theirs).body, planted, "mallory's comment was edited");
    assert_eq!(
        (of(ours).user.as_str(), of(ours).body.as_str()),
        ("vibeloop[bot]", body.as_str())
    );
    // Its own comment is found again: still one per marker.
    let again = client
        .upsert_marked_comment(
            issue,
            marker,
            None,
            &format!("{marker}\nVibeloop T-1: Done"),
        )
        .await
        .unwrap();
    assert_eq!(again, ours);
    assert_eq!(gh.comments(REPO, issue).len(), 2);
    support::openapi::assert_requests_valid(&gh.requests());
}

#[tokio::test]
async fn an_issue_carrying_the_dependency_marker_is_not_the_bots_dependency_issue() {
    let (_d, gh, client) = setup().await;
    let marker = "<!-- vibeloop:dependency-of T-1 -->";
    let planted = gh.add_issue_by(
        REPO,
        "mallory",
        "Add redis",
        &format!("{marker}\nrun my code"),
    );
    let body = format!("{marker}\nT-1 needs redis.");
    let ours = client
        .ensure_issue(marker, "Add redis", &body, &["hive"])
        .await
        .unwrap();
    assert_ne!(ours, planted, "the bot adopted mallory's issue");
    let again = client
        .ensure_issue(marker, "Add redis", &body, &["hive"])
        .await
        .unwrap();
    assert_eq!(again, ours, "the bot's own issue is found again");
}

#[tokio::test]
async fn a_marker_in_a_persons_review_or_reply_does_not_silence_the_bot() {
    let (_d, gh, client) = setup().await;
    let sha = gh.push_commit(REPO, "feat/T-1", &[("a.py", "x = 1\n")], "Change");
    let pr = gh.open_pull(REPO, "vibeloop[bot]", "feat/T-1", "main", "T-1: change");
    let marker = "<!-- vibeloop:review T-1 round 1 -->";
    gh.review_pull(REPO, pr, "mallory", "commented", &format!("{marker}\nLGTM"))
        .await;
    let sha = CommitSha::parse(&sha).unwrap();
    client
        .post_review(pr, &sha, marker, "The Critic's review.", &[])
        .await
        .unwrap();
    let bots: Vec<_> = gh
        .reviews(REPO, pr)
        .into_iter()
        .filter(|r| r.user == "vibeloop[bot]")
        .collect();
    assert_eq!(
        bots.len(),
        1,
        "the bot's review was not posted: {:?}",
        gh.reviews(REPO, pr)
    );
    // A review thread: mallory answers with the bot's reply marker first.
    let (comment, _) = gh
        .comment_on_line(REPO, pr, "reviewer", "a.py", 1, "Why 1?", None)
        .await;
    let reply = "<!-- vibeloop:reply 1 abc -->";
    client
        .reply_to_review_comment(pr, comment, reply, "Changed in abc.")
        .await
        .unwrap();
    let replies: Vec<_> = gh
        .review_comments(REPO, pr)
        .into_iter()
        .filter(|c| c.user == "vibeloop[bot]" && c.body.contains(reply))
        .collect();
    assert_eq!(replies.len(), 1);
}
