//! The dashboard of `vibeloop serve`, against the real bot binary, the fake GitHub and the fake
//! model: what is open and what needs a sign-in, the JSON API and the metrics with the token,
//! and — in a real headless Chromium — signing in, the tickets page, the live timeline, an
//! intervention, and GitHub sign-in with the person's permission checked.

use crate::support;

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use support::browser::Browser;
use support::hive::{REPO, World, calc, happy_script};
use vibeloop::ids::RepoName;
use vibeloop::ticket::TaskState;

const TOKEN: &str = "dashboard-token-for-tests-0123456789";
const HIVE_YML: &str = "gates: { test: \"python3 -m unittest -v\" }\n";
const WAIT: Duration = Duration::from_secs(60);

fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// A ticket that went through the hive and waits for a person's approval.
async fn waiting_world(extra: Vec<(&str, &str)>) -> (World, vibeloop::ids::TicketKey) {
    let mut env = vec![("VIBELOOP_DASHBOARD_TOKEN".to_owned(), TOKEN.to_owned())];
    env.extend(extra.into_iter().map(|(k, v)| (k.to_owned(), v.to_owned())));
    let w = World::start_with(happy_script(), &calc(HIVE_YML), env).await;
    w.label().await;
    let t = w.waiting_for_approval().await;
    (w, t.key)
}

/// The interventions and commands about the world's issue, once none is pending any more.
async fn carried_out(w: &World) -> Vec<vibeloop::store::commands::CommandRecord> {
    w.bot
        .wait_until("the interventions to be carried out", WAIT, || async {
            let c = commands(w).await;
            c.iter().all(|c| c.outcome != "pending").then_some(c)
        })
        .await
}

async fn commands(w: &World) -> Vec<vibeloop::store::commands::CommandRecord> {
    let store = w.bot.store().await;
    let c = store
        .commands_for(&RepoName::parse(REPO).unwrap(), w.issue)
        .await
        .unwrap();
    store.close().await;
    c
}

#[tokio::test(flavor = "multi_thread")]
async fn only_health_and_webhook_are_open_and_the_token_opens_the_api_and_metrics() {
    let (w, key) = waiting_world(vec![]).await;
    let http = no_redirects();
    let url = |p: &str| format!("{}{p}", w.bot.url);

    for open in ["/healthz", "/readyz"] {
        let r = http.get(url(open)).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{open} is open");
    }
    // Pages send people to the sign-in page, keeping where they were going.
    let r = http
        .get(url(&format!("/tickets/{key}")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        r.headers()["location"],
        format!("/login?next=%2Ftickets%2F{key}").as_str()
    );
    // Everything else is refused without a sign-in, or with a wrong token.
    for (method, path) in [
        ("GET", "/api/state".to_owned()),
        ("GET", "/api/tickets".to_owned()),
        ("GET", "/metrics".to_owned()),
        ("GET", format!("/tickets/{key}/events")),
        ("POST", format!("/api/tickets/{key}/interventions")),
        ("POST", format!("/tickets/{key}/intervene")),
    ] {
        for auth in [None, Some("Bearer not-the-dashboard-token-at-all")] {
            let mut req = http.request(method.parse().unwrap(), url(&path));
            if let Some(a) = auth {
                req = req.header("authorization", a);
            }
            let r = req
                .json(&json!({ "command": "/hive abort" }))
                .send()
                .await
                .unwrap();
            assert_eq!(
                r.status(),
                StatusCode::UNAUTHORIZED,
                "{method} {path} with {auth:?}"
            );
            assert!(r.headers().contains_key("www-authenticate"));
        }
    }
    // A forged or expired-looking cookie is no sign-in either.
    let r = http
        .get(url("/api/state"))
        .header("cookie", "vibeloop_session=op.99999999999.00ff")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    // Nothing was done by the refused interventions.
    assert!(commands(&w).await.is_empty());

    let get = |path: String| {
        let req = http.get(url(&path)).bearer_auth(TOKEN);
        async move { req.send().await.unwrap() }
    };
    let state: Value = get("/api/state".into()).await.json().await.unwrap();
    let ticket = &state["tickets"][0];
    assert_eq!(ticket["id"], "T-1");
    assert_eq!(ticket["repo"], REPO);
    assert_eq!(ticket["state"], TaskState::AwaitingVerification.to_string());
    assert!(
        ticket["spent"]["calls"].as_u64().unwrap_or(0) >= 4,
        "{ticket}"
    );
    assert!(state["task_queue"].is_array());
    assert!(
        state["history"].as_array().is_some_and(|h| !h.is_empty()),
        "history: {}",
        state["history"]
    );
    // The ticket's worktrees, with the branch and the role working in each.
    let worktrees = state["worktrees"].as_array().unwrap();
    for (branch, role) in [("feat/T-1", "builder"), ("test/T-1", "breaker")] {
        assert!(
            worktrees
                .iter()
                .any(|w| w["branch"] == branch && w["role"] == role),
            "no {branch} worktree in {worktrees:?}"
        );
    }

    // The old numeric address redirects to the ticket's own: by repository and id.
    let moved = get(format!("/api/tickets/{key}")).await;
    assert_eq!(moved.status(), StatusCode::PERMANENT_REDIRECT);
    assert_eq!(
        moved.headers()["location"],
        format!("/api/tickets/{REPO}/T-1").as_str()
    );
    let one: Value = get(format!("/api/tickets/{REPO}/T-1"))
        .await
        .json()
        .await
        .unwrap();
    assert!(
        one["events"].as_array().is_some_and(|e| e.len() > 3),
        "{one}"
    );
    assert!(one["flow"].is_object());

    let metrics = get("/metrics".into()).await.text().await.unwrap();
    for line in [
        "vibeloop_deliveries_total{event=\"issues\",status=\"202\"} 1",
        "vibeloop_tickets{state=\"AwaitingVerification\"} 1",
        "vibeloop_model_calls_total{role=\"critic\"}",
        "vibeloop_model_tokens_total{role=\"builder\",kind=\"prompt\"}",
        "vibeloop_gate_duration_seconds_count{gate=\"test\"",
        "vibeloop_sandbox_starts_total{",
        "vibeloop_job_runs_total{",
    ] {
        assert!(
            metrics.contains(line),
            "no {line:?} in /metrics:\n{metrics}"
        );
    }

    // An intervention through the API: recorded like a slash command and queued at once, then
    // carried out by a worker; the ticket's JSON shows it pending, then done.
    let r = intervene(
        &http,
        &w,
        key,
        "/hive feedback Keep the public API unchanged",
    )
    .await;
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    let queued: Value = r.json().await.unwrap();
    let source = queued["source"].as_str().unwrap().to_owned();
    let c = carried_out(&w).await;
    assert_eq!(c.len(), 1, "{c:?}");
    assert!(c[0].source.starts_with("dashboard:"), "{c:?}");
    assert_eq!(c[0].source, source);
    assert_eq!(c[0].author, "dashboard-operator");
    assert!(c[0].command.contains("feedback"), "{c:?}");
    assert_eq!(c[0].outcome, "feedback");
    let view: Value = http
        .get(format!("{}/api/tickets/T-1", w.bot.url))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let shown = &view["interventions"][0];
    assert_eq!(
        (&shown["source"], &shown["outcome"]),
        (&json!(source), &json!("feedback"))
    );
    assert!(
        shown["reply"]
            .as_str()
            .unwrap()
            .contains("the agents get it"),
        "{shown}"
    );
    // Nonsense is refused with a reason, and nothing is recorded or run.
    let r = intervene(&http, &w, key, "/hive aprove").await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let a: Value = r.json().await.unwrap();
    assert!(
        a["text"]
            .as_str()
            .unwrap()
            .contains("Did you mean /hive approve"),
        "{a}"
    );
}

/// Sends a ticket a command through the JSON API, with the token.
async fn intervene(
    http: &reqwest::Client,
    w: &World,
    key: vibeloop::ids::TicketKey,
    command: &str,
) -> reqwest::Response {
    http.post(format!("{}/api/tickets/{key}/interventions", w.bot.url))
        .bearer_auth(TOKEN)
        .json(&json!({ "command": command }))
        .send()
        .await
        .unwrap()
}

/// The number of sentences in the timeline, and whether one holds `text`.
async fn timeline(b: &Browser, text: &str) -> (u64, bool) {
    let v = b
        .run(&format!(
            "const rows = document.querySelectorAll('#timeline li');\
             return [rows.length, Array.from(rows).some(r => r.textContent.includes({}))];",
            json!(text)
        ))
        .await;
    (v[0].as_u64().unwrap_or(0), v[1].as_bool().unwrap_or(false))
}

#[tokio::test(flavor = "multi_thread")]
async fn in_a_browser_the_operator_signs_in_watches_the_timeline_live_and_approves() {
    let (w, key) = waiting_world(vec![]).await;
    let b = Browser::start().await;

    // Without a sign-in the ticket page is not shown: the browser lands on the sign-in page.
    b.goto(&format!("{}/tickets/{key}", w.bot.url)).await;
    b.wait_url("the sign-in page", |u| u.contains("/login?next="))
        .await;
    assert!(b.find("#timeline").await.is_none());
    // A wrong token is refused with a reason.
    b.type_into("#token", "wrong-token-wrong-token").await;
    b.click("#sign-in").await;
    assert!(b.text("#error").await.contains("not the dashboard token"));
    // The right one leads to where the browser was going.
    b.type_into("#token", TOKEN).await;
    b.click("#sign-in").await;
    // The old numeric address leads on to the ticket's own.
    let ticket_page = format!("{}/tickets/{REPO}/T-1", w.bot.url);
    b.wait_url("the ticket's page", |u| u == ticket_page).await;
    assert_eq!(b.text("#state").await, "Review and landing");
    let class = b
        .run("return document.getElementById('state').className;")
        .await;
    assert_eq!(
        class,
        format!("badge st-{}", TaskState::AwaitingVerification)
    );
    assert!(b.text("#plan").await.contains("Make add() add"));

    // The timeline follows new events without a reload.
    let (rows, seen) = timeline(&b, "note from the test").await;
    assert!(rows > 3 && !seen, "{rows} rows");
    let store = w.bot.store().await;
    store
        .add_event(key, "note", &json!({ "text": "note from the test" }))
        .await
        .unwrap();
    let live = support::poll_until(WAIT, || async {
        let (n, seen) = timeline(&b, "note from the test").await;
        (seen && n == rows + 1).then_some(())
    })
    .await;
    assert!(
        live.is_some(),
        "the new event never showed:\n{}",
        b.source().await
    );

    // The tickets page and the hive's state.
    b.goto(&format!("{}/", w.bot.url)).await;
    let row = b.text(&format!("#tickets tr[data-key=\"{key}\"]")).await;
    assert!(row.contains("T-1") && row.contains(REPO), "{row}");
    b.goto(&format!("{}/state", w.bot.url)).await;
    assert!(b.text("#worktrees").await.contains("feat/T-1"));

    // Approve from the ticket's page: recorded like a comment's command, and the ticket lands.
    b.goto(&format!("{}/tickets/{key}", w.bot.url)).await;
    b.click("#do-approve").await;
    let answer = b.text("p.ok#answer").await;
    assert!(!answer.is_empty());
    let done = w.wait_state(TaskState::Completed).await;
    assert_eq!(done.key, key);
    let c = commands(&w).await;
    assert!(
        c.iter().any(|c| c.source.starts_with("dashboard:")
            && c.command.contains("approve")
            && c.author == "dashboard-operator"),
        "{c:?}"
    );
    assert!(w.gh.pulls(REPO).iter().any(|p| p.merged));

    // Signing out ends the session.
    b.click("header form button").await;
    b.wait_url("the sign-in page", |u| u.contains("/login"))
        .await;
    b.goto(&format!("{}/state", w.bot.url)).await;
    b.wait_url("the sign-in page", |u| u.contains("/login?next="))
        .await;
    store.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn github_sign_in_admits_listed_people_and_their_permission_decides() {
    let (w, key) = waiting_world(vec![
        ("VIBELOOP_GITHUB_CLIENT_ID", "Iv1.testclient"),
        ("VIBELOOP_GITHUB_CLIENT_SECRET", "client-secret-for-tests"),
        ("VIBELOOP_DASHBOARD_USERS", "reader, @Maintainer"),
    ])
    .await;
    w.gh.set_oauth_app(
        "Iv1.testclient",
        "client-secret-for-tests",
        &format!("{}/login/github/callback", w.bot.url),
    );
    w.gh.set_permission(REPO, "reader", "read");
    w.gh.set_permission(REPO, "stranger", "write");
    let b = Browser::start().await;
    let sign_in = |login: &'static str| {
        let (b, w) = (&b, &w);
        async move {
            w.gh.set_oauth_user(Some(login));
            b.goto(&format!("{}/login?next=/tickets/{key}", w.bot.url))
                .await;
            b.click("#github").await;
        }
    };

    // Someone GitHub knows but the operator did not list is refused.
    sign_in("stranger").await;
    assert!(
        b.text("#error")
            .await
            .contains("@stranger may not open this dashboard")
    );
    b.goto(&format!("{}/tickets/{key}", w.bot.url)).await;
    b.wait_url("the sign-in page", |u| u.contains("/login?next="))
        .await;

    // A listed reader gets in, but may not approve: their permission on the repository decides.
    sign_in("reader").await;
    let ticket_page = format!("{}/tickets/{REPO}/T-1", w.bot.url);
    b.wait_url("the ticket's page", |u| u == ticket_page).await;
    b.click("#do-approve").await;
    let sent = b.text("p.ok#answer").await;
    assert!(sent.contains("a worker carries it out"), "{sent}");
    let c = carried_out(&w).await;
    assert_eq!(c.last().unwrap().author, "reader");
    assert_eq!(c.last().unwrap().outcome.as_str(), "refused: permission");
    // The page shows why.
    b.goto(&ticket_page).await;
    let shown = b.text("#interventions").await;
    assert!(
        shown.contains("refused: permission") && shown.contains("needs write permission"),
        "{shown}"
    );
    assert_eq!(
        w.ticket().await.unwrap().state,
        TaskState::AwaitingVerification
    );

    // A listed maintainer (matched whatever the case) may.
    b.click("header form button").await;
    b.wait_url("the sign-in page", |u| u.contains("/login"))
        .await;
    sign_in("maintainer").await;
    b.wait_url("the ticket's page", |u| u == ticket_page).await;
    b.click("#do-approve").await;
    let approved = b.text("p.ok#answer").await;
    assert!(!approved.is_empty());
    w.wait_state(TaskState::Completed).await;

    // A forged callback (a state the bot did not sign) is refused.
    let r = no_redirects()
        .get(format!(
            "{}/login/github/callback?code=x&state=forged",
            w.bot.url
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
}
