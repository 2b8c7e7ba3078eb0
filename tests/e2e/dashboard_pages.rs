//! The dashboard as people see it, in a real headless Chromium against the real bot: two
//! tickets waiting for approval (one from an issue whose title is an attack, and a plan whose
//! title from the model is one too). Each page is screenshotted (kept under
//! `target/screenshots/`) and checked for what a person reads: the status Markdown rendered
//! (no `**` or `|---|`), the timeline in sentences grouped by stage with the current one
//! marked, the pictures with the right number of shapes, addresses by ticket id, friendly error
//! pages, the filters — and that no text from issues or models became markup.

use crate::support;

use std::time::Duration;

use serde_json::{Value, json};
use support::browser::Browser;
use support::fake_llm::{Script, Step};
use support::hive::{REPO, World, approve_json, breaker_after, calc, writes};
use vibeloop::ticket::TaskState;

const TOKEN: &str = "dashboard-token-for-tests-0123456789";
const HIVE_YML: &str = "gates: { test: \"python3 -m unittest -v\" }\n";
const FIXED: &str = "def add(a, b):\n    return a + b\n";
const HOSTILE_TITLE: &str = "<script>window.pwned=1</script> **bold** | a | b |";

fn shot_path(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/screenshots")
        .join(format!("{name}.png"))
}

/// Screenshots the page as `name` and checks it has a size.
async fn shot(b: &Browser, name: &str) {
    let (w, h) = b.screenshot(&shot_path(name)).await;
    assert!(w > 300 && h > 300, "{name}: {w}×{h}");
}

/// What the page's script says; `null` unless it returns.
async fn js(b: &Browser, script: &str) -> Value {
    b.run(script).await
}

/// Nothing from issue text or model output ran or became an element.
async fn no_injection(b: &Browser, page: &str) {
    let v = js(
        b,
        "return [typeof window.pwned, document.scripts.length, document.querySelectorAll('img,iframe').length, \
         Array.from(document.scripts).map(s => s.src)];",
    )
    .await;
    assert_eq!(v[0], "undefined", "{page}: an injected script ran");
    assert_eq!(v[1], 1, "{page}: only the dashboard's own script: {}", v[3]);
    assert_eq!(v[2], 0, "{page}: no image or frame from text");
}

fn script() -> Script {
    let plan = json!({
        "ticket": { "type": "bugfix", "goal": "add(a, b) returns the sum a + b", "context_refs": ["calc.py"] },
        "plan": {
            "title": "Make add() add <img src=x onerror=\"window.pwned=2\">",
            "description": "add() subtracts <script>window.pwned=3</script>; it must return their sum.",
            "steps": [{ "input": "calc.py", "output": "add returns a + b", "validation_criteria": "test_add_more and test_calc pass" }],
            "dependencies": [],
        },
        "open_questions": [],
    });
    Script::from([
        ("architect".to_owned(), vec![Step::say(&plan.to_string())]),
        ("breaker".to_owned(), breaker_after(vec![])),
        (
            "builder".to_owned(),
            writes("calc.py", FIXED, "add() adds now."),
        ),
        ("critic".to_owned(), vec![Step::say(&approve_json())]),
    ])
}

#[tokio::test(flavor = "multi_thread")]
async fn people_read_rendered_pages_with_pictures_and_no_text_becomes_markup() {
    let env = vec![("VIBELOOP_DASHBOARD_TOKEN".to_owned(), TOKEN.to_owned())];
    let w = World::start_with(script(), &calc(HIVE_YML), env).await;
    let second = w.gh.add_issue(
        REPO,
        HOSTILE_TITLE,
        "<img src=x onerror=\"window.pwned=4\">",
    );
    w.label().await;
    w.gh.label_issue(REPO, second, "hive").await;
    let store = w.bot.store().await;
    let both = w
        .bot
        .wait_until(
            "both tickets to wait for approval",
            Duration::from_secs(120),
            || async {
                let all = store.tickets().await.ok()?;
                (all.len() == 2
                    && all.iter().all(|t| {
                        t.state == TaskState::AwaitingVerification
                            && t.detail
                                .as_deref()
                                .unwrap_or("")
                                .contains("The Critic approves.")
                    }))
                .then_some(all)
            },
        )
        .await;
    let t1 = both.iter().find(|t| t.id.to_string() == "T-1").unwrap().key;
    let b = Browser::start().await;
    let url = |p: &str| format!("{}{p}", w.bot.url);

    // Sign in on a tall window (the screenshots show whole pages); the home page.
    b.window(1280, 2600).await;
    b.goto(&url("/login?next=/")).await;
    b.type_into("#token", TOKEN).await;
    b.click("#sign-in").await;
    b.wait_url("the home page", |u| u == url("/")).await;
    b.element("#tickets").await;
    shot(&b, "home").await;
    let home = js(
        &b,
        "return [document.querySelectorAll('#tickets tbody tr').length, \
         Array.from(document.querySelectorAll('svg#by-day rect.col title')).map(t => parseInt(t.textContent.split(': ')[1])).reduce((a, b) => a + b, 0), \
         document.getElementById('median-to-pr').textContent, \
         document.querySelectorAll('svg#cost-per-ticket rect.bar').length, \
         document.querySelector('#tickets tbody tr .badge').textContent, \
         document.querySelector('#eval').textContent];",
    )
    .await;
    assert_eq!(home[0], 2, "{home}");
    // The columns of the last days hold both tickets.
    assert_eq!(home[1], 2, "{home}");
    assert_ne!(
        home[2], "—",
        "a median time from label to pull request: {home}"
    );
    assert_eq!(home[3], 2, "{home}");
    assert_eq!(home[4], "Review and landing", "{home}");
    assert!(
        home[5]
            .as_str()
            .unwrap()
            .contains("No vibeloop eval run yet"),
        "{home}"
    );
    no_injection(&b, "home").await;

    // Filters: a repository with no ticket shows none, the state shows both.
    b.goto(&url("/?repo=acme%2Fother")).await;
    assert!(b.text("#none").await.contains("No ticket matches"));
    b.goto(&url("/?state=AwaitingVerification")).await;
    let n = js(
        &b,
        "return document.querySelectorAll('#tickets tbody tr').length;",
    )
    .await;
    assert_eq!(n, 2);
    let options = js(
        &b,
        "return Array.from(document.querySelectorAll('#filter-repo option')).map(o => o.value);",
    )
    .await;
    assert_eq!(options, json!(["", REPO]));

    // The ticket by the id people see, with its Markdown rendered.
    b.goto(&url("/tickets/T-1")).await;
    b.element("#timeline").await;
    shot(&b, "ticket").await;
    let plan = js(
        &b,
        "const p = document.getElementById('plan'); \
         return [p.innerText, p.querySelectorAll('table tr').length, p.querySelectorAll('strong,h1,h2,h3,h4').length, \
         p.querySelectorAll('input[type=checkbox]').length];",
    )
    .await;
    let text = plan[0].as_str().unwrap();
    for raw in ["**", "|---|", "| attempt", "- [x]", "- [ ]"] {
        assert!(!text.contains(raw), "raw Markdown {raw:?} shows:\n{text}");
    }
    assert!(plan[1].as_u64().unwrap() >= 2, "the attempts table: {plan}");
    assert!(plan[2].as_u64().unwrap() >= 1, "headings or bold: {plan}");
    assert!(
        text.contains("<img src=x"),
        "the model's HTML shows as text:\n{text}"
    );
    assert_eq!(b.text("#state").await, "Review and landing");

    // The pictures, with as many shapes as the ticket's record has.
    let events = store.events(t1).await.unwrap();
    let gates = events.iter().filter(|(_, k, _)| k == "gate").count();
    let roles = store.budget(t1).await.unwrap().len();
    let pics = js(
        &b,
        "const q = s => document.querySelectorAll(s).length; \
         return [q('svg#gantt rect.span'), Array.from(document.querySelectorAll('svg#gantt text.lane')).map(t => t.textContent), \
         q('svg#gates-grid rect.cell'), q('svg#spend rect.bar')];",
    )
    .await;
    let lanes: Vec<&str> = pics[1]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l.as_str())
        .collect();
    assert_eq!(
        (lanes.first(), lanes.last()),
        (Some(&"State"), Some(&"Gates")),
        "{pics}"
    );
    for role in ["Architect", "Breaker", "Builder", "Critic"] {
        assert!(lanes.contains(&role), "{role} in {lanes:?}");
    }
    assert!(pics[0].as_u64().unwrap() >= 6, "{pics}");
    assert!(gates >= 5, "{gates} gate events");
    assert_eq!(pics[2], gates, "{pics}");
    assert_eq!(pics[3], roles, "{pics}");

    // The timeline: sentences grouped by stage, the current one marked, raw JSON one click away.
    let tl = js(
        &b,
        "const hs = Array.from(document.querySelectorAll('#timeline section.stage > h3')).map(h => h.firstChild.textContent.trim()); \
         const sums = Array.from(document.querySelectorAll('#timeline summary')).map(s => s.textContent); \
         return [hs, document.querySelectorAll('#timeline section.current').length, \
         document.querySelector('#timeline section.current > h3').textContent, sums, \
         document.querySelectorAll('#timeline details[open]').length];",
    )
    .await;
    let heads: Vec<&str> = tl[0]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|h| h.as_str())
        .collect();
    for stage in ["Planning", "Writing tests and code", "Review and landing"] {
        assert!(heads.contains(&stage), "{stage} in {heads:?}");
    }
    assert_eq!(tl[1], 1, "one current stage");
    assert!(
        tl[2].as_str().unwrap().starts_with("Review and landing"),
        "{tl}"
    );
    let sums: Vec<&str> = tl[3]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s.as_str())
        .collect();
    assert!(
        sums.iter()
            .all(|s| !s.starts_with('{') && !s.contains("\"kind\"")),
        "{sums:?}"
    );
    assert!(sums.contains(&"Running the quality gates…"), "{sums:?}");
    assert!(
        sums.iter().any(|s| s.starts_with("Gate test: ")),
        "{sums:?}"
    );
    assert_eq!(tl[4], 0, "details are closed until clicked");
    no_injection(&b, "ticket T-1").await;

    // The live timeline adds a sentence to the current stage.
    store
        .add_event(
            t1,
            "gate",
            &json!({ "gate": "lint", "status": "failed", "result": "3 findings", "run": 99 }),
        )
        .await
        .unwrap();
    let live = support::poll_until(Duration::from_secs(30), || async {
        let v = js(&b, "const s = Array.from(document.querySelectorAll('#timeline section.current summary')).map(s => s.textContent); return s[s.length - 1];").await;
        (v == "Gate lint: 3 findings").then_some(())
    })
    .await;
    assert!(
        live.is_some(),
        "the live sentence never showed:\n{}",
        b.source().await
    );

    // The hostile issue's ticket: its title is text.
    b.goto(&url("/tickets/acme/widgets/T-2")).await;
    let h1 = b.text("h1").await;
    assert!(h1.contains(HOSTILE_TITLE), "{h1}");
    shot(&b, "ticket-hostile").await;
    no_injection(&b, "ticket T-2").await;

    // Old numeric addresses redirect; unknown ones get a page in the dashboard's style.
    b.goto(&url(&format!("/tickets/{t1}"))).await;
    b.wait_url("the ticket's own address", |u| {
        u == url("/tickets/acme/widgets/T-1")
    })
    .await;
    b.goto(&url("/tickets/T-99")).await;
    assert_eq!(b.text("h1").await, "No such ticket");
    shot(&b, "not-found").await;
    b.goto(&url("/no/such/page")).await;
    assert_eq!(b.text("h1").await, "Nothing here");
    assert!(
        b.find("header a.brand").await.is_some(),
        "the dashboard's header"
    );
    let http = reqwest::Client::new();
    let r = http
        .get(url("/api/tickets/T-1"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), reqwest::StatusCode::OK);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["id"], "T-1");
    let r = http
        .get(url("/api/tickets/T-99"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), reqwest::StatusCode::NOT_FOUND);

    // On a phone's screen nothing is wider than the window.
    b.window(390, 844).await;
    b.goto(&url("/tickets/T-1")).await;
    b.element("#timeline").await;
    shot(&b, "ticket-phone").await;
    let wide = js(
        &b,
        "const w = window.innerWidth; \
         return Array.from(document.querySelectorAll('main *')).filter(e => e.getBoundingClientRect().right > w + 1 \
           && !e.closest('table, pre, svg')).map(e => e.tagName + '.' + e.className + ': ' + e.textContent.slice(0, 40));",
    )
    .await;
    assert_eq!(wide, json!([]), "wider than a phone's screen");
    let scroll = js(
        &b,
        "return document.documentElement.scrollWidth <= window.innerWidth + 1;",
    )
    .await;
    assert_eq!(scroll, true, "the page scrolls sideways on a phone");

    // The state page names tickets by id and tells the history in sentences.
    b.window(1280, 2600).await;
    b.goto(&url("/state")).await;
    let history = b.text("#history").await;
    assert!(history.contains("acme/widgets T-1"), "{history}");
    assert!(
        history.contains("The Critic reviewed the change."),
        "{history}"
    );
    assert!(!history.contains("checkpoint"), "{history}");
    shot(&b, "state").await;
    no_injection(&b, "state").await;
    store.close().await;
}
