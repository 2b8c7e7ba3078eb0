//! The page `vibeloop eval` writes (`report.html`), opened from disk in a real headless Chromium:
//! what a person sees — the heading, the resolve rate, a bar per outcome and per task, a row per
//! task, links to a task's diff and timeline — and that hostile text from the results stays
//! text: no element it names exists, no link it makes is drawn. A phone-sized screenshot is
//! taken with Chromium's own headless mode (the WebDriver helper takes none).

use crate::support;

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use support::browser::Browser;
use vibeloop::eval::report;
use vibeloop::eval::results::{DiffSize, Outcome, RoleSpend, TaskResult};

const TITLE: &str = "Eval: a handful of tasks";
const HOSTILE_ID: &str = "<img src=x onerror=\"document.title='pwned'\">";
const HOSTILE_DETAIL: &str =
    "</td></tr></table><script>document.title='pwned'</script><b id=\"injected\">x</b>";

/// One task per outcome, and a resolved one whose id, detail and paths are hostile.
fn results() -> Vec<TaskResult> {
    let mut v: Vec<TaskResult> = Outcome::ALL
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let mut r = TaskResult::error(&format!("repo__task-{i}"), "", 60.0 * (i + 1) as f64);
            r.outcome = *o;
            r.detail = format!("why task {i} ended as {}", o.as_str());
            r.attempts = 1;
            r.roles.insert(
                "builder".into(),
                RoleSpend {
                    tokens: 20_000 * (i as u64 + 1),
                    usd: 0.25 * (i + 1) as f64,
                    calls: 4,
                },
            );
            r
        })
        .collect();
    v[0].diff = Some(DiffSize {
        files: 2,
        added: 14,
        removed: 3,
    });
    v[0].diff_path = Some("diffs/repo__task-0.diff".into());
    v[0].timeline_path = Some("timelines/repo__task-0.jsonl".into());
    let mut hostile = TaskResult::error(HOSTILE_ID, HOSTILE_DETAIL, 30.0);
    hostile.outcome = Outcome::Resolved;
    hostile.diff_path = Some("javascript:document.title='pwned'".into());
    hostile.timeline_path = Some("../../etc/passwd".into());
    v.push(hostile);
    v
}

/// Chromium's binary on PATH.
fn chromium() -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|n| std::env::split_paths(&path).map(move |d| d.join(n)))
        .find(|p| p.is_file())
}

/// A 390 × 844 (phone) screenshot of `url` into `png`, by `chromium --headless --screenshot`.
async fn screenshot(url: &str, png: &Path) {
    let bin = chromium().expect("no chromium on PATH: install Debian's chromium package");
    let profile = tempfile::tempdir().unwrap();
    let mut cmd = tokio::process::Command::new(bin);
    cmd.args([
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--hide-scrollbars",
        "--window-size=390,844",
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()))
    .arg(format!("--screenshot={}", png.display()))
    .arg(url)
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .kill_on_drop(true);
    let status = tokio::time::timeout(Duration::from_secs(60), cmd.status())
        .await
        .expect("chromium took a screenshot within 60 s")
        .expect("chromium starts");
    assert!(status.success(), "chromium --screenshot: {status}");
}

/// Runs `expr` in the page; its value.
async fn eval(b: &Browser, expr: &str) -> Value {
    b.run(&format!("return {expr};")).await
}

#[tokio::test(flavor = "multi_thread")]
async fn in_a_browser_the_eval_report_shows_the_rate_charts_and_tasks_and_hostile_text_as_text() {
    let dir = tempfile::tempdir().unwrap();
    for (sub, file) in [
        ("diffs", "repo__task-0.diff"),
        ("timelines", "repo__task-0.jsonl"),
    ] {
        std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        std::fs::write(dir.path().join(sub).join(file), "the file's text\n").unwrap();
    }
    let results = results();
    let page = dir.path().join("report.html");
    std::fs::write(&page, report::html(TITLE, &results)).unwrap();
    let url = format!("file://{}", page.display());

    let b = Browser::start().await;
    b.goto(&url).await;
    assert_eq!(b.text("h1").await, TITLE);
    assert_eq!(
        b.text("#rate").await,
        "2 of 6 resolved (33 %, 95 % CI 10–70 %)"
    );
    // A bar per outcome with its count beside it, the resolved one drawn.
    assert_eq!(
        eval(&b, "document.querySelectorAll('#outcomes .bar').length").await,
        5
    );
    assert_eq!(
        eval(
            &b,
            "Array.from(document.querySelectorAll('#outcomes text.count')).map(t => t.textContent)"
        )
        .await,
        json!(["2", "1", "1", "1", "1"])
    );
    let drawn = eval(
        &b,
        "document.querySelector('#outcomes .bar.outcome-resolved').getBoundingClientRect().width",
    )
    .await;
    assert!(drawn.as_f64().unwrap_or(0.0) > 10.0, "{drawn}");
    // A bar and a row per task.
    let n = json!(results.len());
    assert_eq!(
        eval(&b, "document.querySelectorAll('#cost .bar').length").await,
        n
    );
    assert_eq!(
        eval(&b, "document.querySelectorAll('#tasks tbody tr').length").await,
        n
    );

    // The hostile id and detail are shown as text; nothing they name exists or ran.
    let ids = eval(
        &b,
        "Array.from(document.querySelectorAll('#tasks td.id')).map(td => td.textContent)",
    )
    .await;
    assert!(
        ids.as_array().unwrap().contains(&json!(HOSTILE_ID)),
        "{ids}"
    );
    let details = eval(
        &b,
        "Array.from(document.querySelectorAll('#tasks td.detail')).map(td => td.textContent)",
    )
    .await;
    assert!(
        details.as_array().unwrap().contains(&json!(HOSTILE_DETAIL)),
        "{details}"
    );
    assert_eq!(
        eval(
            &b,
            "document.querySelectorAll('img, script, #injected, [onerror]').length"
        )
        .await,
        0
    );
    assert_eq!(eval(&b, "document.title").await, json!(TITLE));
    // Only the relative links are drawn: not `javascript:`, not `../`.
    assert_eq!(
        eval(
            &b,
            "Array.from(document.querySelectorAll('a')).map(a => a.getAttribute('href'))"
        )
        .await,
        json!(["diffs/repo__task-0.diff", "timelines/repo__task-0.jsonl"])
    );

    let png = dir.path().join("report.png");
    screenshot(&url, &png).await;
    let shot = std::fs::read(&png).unwrap();
    assert!(
        shot.len() > 1000 && shot.starts_with(b"\x89PNG"),
        "{} bytes",
        shot.len()
    );

    // A task's diff link opens the diff next to the page.
    b.click("#tasks a[href='diffs/repo__task-0.diff']").await;
    b.wait_url("the task's diff", |u| {
        u.ends_with("/diffs/repo__task-0.diff")
    })
    .await;
    assert_eq!(b.text("body").await, "the file's text");
}
