//! A real headless Chromium, driven over the W3C WebDriver protocol (Debian's `chromium` and
//! `chromium-driver`) with reqwest: no WebDriver crate, just the handful of commands the
//! dashboard tests need. Each [`Browser`] owns its `chromedriver` process and a fresh profile.

use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

/// WebDriver's key for an element reference.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    http: reqwest::Client,
    _profile: tempfile::TempDir,
}

impl Drop for Browser {
    /// Ends the WebDriver session first, so chromedriver quits Chromium, then stops the driver
    /// and, as a backstop, every process of its group. Killing the driver alone left Chromium
    /// running with its page open: the page's event stream kept reconnecting to the bot's port
    /// after the test ended, and a later test's fake GitHub, given that port, recorded
    /// `GET /tickets/1/events` among its requests.
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = delete_session(&self.base, &self.session);
        }
        // SAFETY: kill(2) on our own child's process group; no memory is touched.
        unsafe { libc::kill(-(self.driver.id() as i32), libc::SIGKILL) };
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// `DELETE /session/{id}` over a plain blocking socket (Drop cannot wait on async work).
fn delete_session(base: &str, session: &str) -> std::io::Result<()> {
    use std::io::{Read as _, Write as _};
    let addr = base.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        s,
        "DELETE /session/{session} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )?;
    let mut answer = Vec::new();
    s.read_to_end(&mut answer)?;
    Ok(())
}

fn which(name: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| std::path::Path::new(d).join(name))
        .find(|p| p.is_file())
}

impl Browser {
    /// Starts chromedriver and a headless Chromium session.
    pub async fn start() -> Browser {
        let driver_bin = which("chromedriver").expect(
            "chromedriver is not on PATH: install Debian's chromium and chromium-driver (.ci/run does)",
        );
        let chromium = ["chromium", "chromium-browser", "google-chrome"]
            .iter()
            .find_map(|n| which(n))
            .expect("no chromium on PATH: install Debian's chromium package (.ci/run does)");
        let port = super::free_port();
        let driver = Command::new(driver_bin)
            .arg(format!("--port={port}"))
            // Its own process group, with the Chromium it starts: killed together on drop.
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let profile = tempfile::tempdir().unwrap();
        let http = reqwest::Client::new();
        let base = format!("http://127.0.0.1:{port}");
        let ready = super::poll_until(Duration::from_secs(30), || {
            let http = http.clone();
            let url = format!("{base}/status");
            async move {
                let v: Value = http.get(url).send().await.ok()?.json().await.ok()?;
                v["value"]["ready"].as_bool().filter(|r| *r)
            }
        })
        .await;
        let mut b = Browser {
            driver,
            base,
            session: String::new(),
            http,
            _profile: profile,
        };
        assert!(ready.is_some(), "chromedriver did not become ready in 30 s");
        let caps = json!({ "capabilities": { "alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         "--no-first-run", "--disable-extensions",
                         format!("--user-data-dir={}", b._profile.path().display())],
            },
        }}});
        let v = b.call(reqwest::Method::POST, "/session", Some(caps)).await;
        b.session = v["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session from chromedriver: {v}"))
            .to_owned();
        b
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        self.try_call(method, path, body)
            .await
            .unwrap_or_else(|e| panic!("WebDriver {path}: {e}"))
    }

    async fn try_call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, Value> {
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.expect("chromedriver answers");
        let ok = resp.status().is_success();
        let v: Value = resp.json().await.expect("chromedriver answers JSON");
        if ok {
            Ok(v["value"].clone())
        } else {
            Err(v["value"].clone())
        }
    }

    fn at(&self, rest: &str) -> String {
        format!("/session/{}{rest}", self.session)
    }

    /// Opens `url` and waits for the page to load.
    pub async fn goto(&self, url: &str) {
        self.call(
            reqwest::Method::POST,
            &self.at("/url"),
            Some(json!({ "url": url })),
        )
        .await;
    }

    /// Waits up to ten seconds for the page's address to satisfy `ok` (a click's navigation
    /// may still be under way); the address.
    pub async fn wait_url(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let found = super::poll_until(Duration::from_secs(10), || async {
            let url = self.current_url().await;
            ok(&url).then_some(url)
        })
        .await;
        match found {
            Some(url) => url,
            None => panic!("the browser is at {}, not {what}", self.current_url().await),
        }
    }

    pub async fn current_url(&self) -> String {
        self.call(reqwest::Method::GET, &self.at("/url"), None)
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// The element `css` selects, if there is one now.
    pub async fn find(&self, css: &str) -> Option<String> {
        self.try_call(
            reqwest::Method::POST,
            &self.at("/element"),
            Some(json!({ "using": "css selector", "value": css })),
        )
        .await
        .ok()
        .and_then(|v| v[ELEMENT].as_str().map(str::to_owned))
    }

    /// The element `css` selects, waiting up to ten seconds for it (a page that is still
    /// loading after a click); fails the test when none comes.
    pub async fn element(&self, css: &str) -> String {
        match super::poll_until(Duration::from_secs(10), || self.find(css)).await {
            Some(e) => e,
            None => panic!(
                "no element {css:?} on {}:\n{}",
                self.current_url().await,
                self.source().await
            ),
        }
    }

    /// The visible text of the element `css` selects.
    pub async fn text(&self, css: &str) -> String {
        let e = self.element(css).await;
        self.call(
            reqwest::Method::GET,
            &self.at(&format!("/element/{e}/text")),
            None,
        )
        .await
        .as_str()
        .unwrap_or_default()
        .to_owned()
    }

    pub async fn click(&self, css: &str) {
        let e = self.element(css).await;
        self.call(
            reqwest::Method::POST,
            &self.at(&format!("/element/{e}/click")),
            Some(json!({})),
        )
        .await;
    }

    pub async fn type_into(&self, css: &str, text: &str) {
        let e = self.element(css).await;
        self.call(
            reqwest::Method::POST,
            &self.at(&format!("/element/{e}/value")),
            Some(json!({ "text": text })),
        )
        .await;
    }

    /// Runs `script` in the page; its return value.
    pub async fn run(&self, script: &str) -> Value {
        self.call(
            reqwest::Method::POST,
            &self.at("/execute/sync"),
            Some(json!({ "script": script, "args": [] })),
        )
        .await
    }

    /// Saves what the window shows as a PNG at `path` (made with its parents); its width and
    /// height in pixels, read from the PNG.
    pub async fn screenshot(&self, path: &std::path::Path) -> (u32, u32) {
        use base64::Engine as _;
        let shot = self
            .call(reqwest::Method::GET, &self.at("/screenshot"), None)
            .await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot.as_str().expect("a screenshot in base64"))
            .expect("base64");
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(path, &png).unwrap();
        // The IHDR chunk: width and height, big-endian, at bytes 16..24.
        let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        (be(&png[16..20]), be(&png[20..24]))
    }

    /// Sets the window's size (a phone's, say).
    pub async fn window(&self, width: u32, height: u32) {
        self.call(
            reqwest::Method::POST,
            &self.at("/window/rect"),
            Some(json!({ "width": width, "height": height })),
        )
        .await;
    }

    /// The page's HTML.
    pub async fn source(&self) -> String {
        self.call(reqwest::Method::GET, &self.at("/source"), None)
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }
}
