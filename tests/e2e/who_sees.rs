//! Who may see what on the dashboard, played as an attack: one bot installed on two
//! organisations, a private repository's ticket, and a person signed in with GitHub who may read
//! only the other organisation's repository. Lists leave the private ticket out; every address
//! of it — its id, its old numeric key, its live events, its interventions, the global state,
//! `/metrics` — answers 404 as if it did not exist; the operator's token still sees all, and a
//! person GitHub gives read on it sees it too, live, until GitHub no longer does.

use crate::support;

use reqwest::StatusCode;
use support::browser::Browser;
use support::hive::*;
use vibeloop::ticket::TaskState;

use super::sessions::{github_session, no_redirects};

const TOKEN: &str = "dashboard-token-for-who-sees";
const VAULT: &str = "globex/vault";
const SECRET_TEXT: &str = "VAULT-PRIVATE-7431";

async fn get(w: &World, cookie: Option<&str>, path: &str) -> (StatusCode, String) {
    let mut r = no_redirects().get(format!("{}{path}", w.bot.url));
    r = match cookie {
        Some(c) => r.header("cookie", c),
        None => r.bearer_auth(TOKEN),
    };
    let r = r.send().await.unwrap();
    (r.status(), r.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_sees_only_the_repositories_github_lets_them_read() {
    let w = World::start_with(
        happy_script(),
        &calc(HIVE_YML),
        [
            ("VIBELOOP_DASHBOARD_TOKEN", TOKEN),
            ("VIBELOOP_GITHUB_CLIENT_ID", "Iv1.testclient"),
            ("VIBELOOP_GITHUB_CLIENT_SECRET", "client-secret-for-tests"),
            ("VIBELOOP_DASHBOARD_USERS", "alice, bob"),
            // A live timeline checks its viewer every second.
            ("VIBELOOP_DASHBOARD_RECHECK", "1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect(),
    )
    .await;
    w.gh.set_oauth_app(
        "Iv1.testclient",
        "client-secret-for-tests",
        &format!("{}/login/github/callback", w.bot.url),
    );
    // A second organisation with a private repository, on an installation of its own.
    w.gh.add_installation(INSTALLATION + 1, "globex");
    let files = calc(HIVE_YML);
    let refs: Vec<(&str, &str)> = files.iter().map(|(p, c)| (*p, c.as_str())).collect();
    w.gh.add_repo(INSTALLATION + 1, VAULT, &refs);
    let vault_issue = w.gh.add_issue(
        VAULT,
        "add() subtracts in the vault",
        &format!("Customer {SECRET_TEXT} reports `add(2, 3)` returns -1."),
    );
    // Alice reads acme/widgets and nothing of globex; Bob reads both.
    w.gh.set_permission(REPO, "alice", "read");
    w.gh.set_permission(REPO, "bob", "read");
    w.gh.set_permission(VAULT, "bob", "read");

    for (repo, issue) in [(REPO, w.issue), (VAULT, vault_issue)] {
        let sent = w.gh.label_issue(repo, issue, "hive:plan").await;
        assert_eq!(sent.status, 202, "{}", sent.text);
    }
    let store = w.bot.store().await;
    let vault = w
        .bot
        .wait_until("both plans to be posted", WAIT, || async {
            let all = store.tickets().await.unwrap();
            let planned = all.iter().filter(|t| t.state == TaskState::Blocked);
            (planned.count() == 2)
                .then(|| all.into_iter().find(|t| t.repo.as_str() == VAULT))
                .flatten()
        })
        .await;
    store.close().await;
    let key = vault.key;

    // The operator's token sees both organisations.
    let (status, all) = get(&w, None, "/api/tickets").await;
    assert_eq!(status, StatusCode::OK);
    assert!(all.contains(VAULT) && all.contains(REPO), "{all}");
    let (status, vault_json) = get(&w, None, &format!("/api/tickets/{VAULT}/T-1")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(vault_json.contains(SECRET_TEXT) || vault_json.contains("vault"));

    // Alice: the list has acme's ticket and nothing of globex.
    let alice_cookie = github_session(&w, "alice").await;
    let alice = Some(alice_cookie.as_str());
    let (status, list) = get(&w, alice, "/api/tickets").await;
    assert_eq!(status, StatusCode::OK);
    assert!(list.contains(REPO), "{list}");
    assert!(!list.contains("globex"), "alice's list leaks: {list}");
    // Every address of the private ticket answers 404, as if it did not exist.
    for path in [
        format!("/api/tickets/{VAULT}/T-1"),
        format!("/api/tickets/{key}"),
        format!("/tickets/{VAULT}/T-1"),
        format!("/tickets/{key}"),
        format!("/tickets/{key}/events"),
        "/metrics".to_owned(),
    ] {
        let (status, body) = get(&w, alice, &path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
        assert!(
            !body.contains(SECRET_TEXT) && !body.contains("in the vault"),
            "{path}: {body}"
        );
    }
    // `T-1` alone names acme's ticket only: no choice page listing globex's.
    let (status, one) = get(&w, alice, "/api/tickets/T-1").await;
    assert_eq!(status, StatusCode::OK, "{one}");
    assert!(one.contains(REPO) && !one.contains("globex"), "{one}");
    // The global state shows none of globex's tickets, events or jobs.
    for path in ["/api/state", "/state", "/"] {
        let (status, body) = get(&w, alice, path).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        assert!(
            !body.contains("globex") && !body.contains(SECRET_TEXT),
            "{path} leaks: {body}"
        );
    }
    // An intervention on it is refused as if there were no such ticket, and nothing is recorded.
    let r = no_redirects()
        .post(format!("{}/api/tickets/{key}/interventions", w.bot.url))
        .header("cookie", &alice_cookie)
        .json(&serde_json::json!({ "command": "/hive abort" }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let store = w.bot.store().await;
    let recorded = store.commands_for(&vault.repo, vault_issue).await.unwrap();
    store.close().await;
    assert!(recorded.is_empty(), "{recorded:?}");

    // In a browser, Alice's list has one row: acme's.
    let b = Browser::start().await;
    w.gh.set_oauth_user(Some("alice"));
    b.goto(&format!("{}/login?next=/", w.bot.url)).await;
    b.click("#github").await;
    let rows = b.text("#tickets").await;
    assert!(rows.contains(REPO) && !rows.contains("globex"), "{rows}");

    // Bob, whom GitHub lets read globex/vault, sees its ticket.
    let bob = github_session(&w, "bob").await;
    let (status, body) = get(&w, Some(&bob), &format!("/api/tickets/{VAULT}/T-1")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Its live events open, and stream for as long as GitHub lets Bob read the repository:
    // once it no longer does, the stream ends at its next check.
    let events = no_redirects()
        .get(format!("{}/tickets/{key}/events", w.bot.url))
        .header("cookie", &bob)
        .send()
        .await
        .unwrap();
    assert_eq!(events.status(), StatusCode::OK);
    w.gh.set_permission(VAULT, "bob", "none");
    let streamed = tokio::time::timeout(WAIT, events.text())
        .await
        .expect("the stream ends once Bob may no longer read the repository")
        .unwrap();
    assert!(streamed.contains("event: timeline"), "{streamed}");
}
