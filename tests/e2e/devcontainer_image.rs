//! A devcontainer's image is pulled from its registry (here Debian's `docker-registry` on
//! 127.0.0.1, holding a copy of a runner image under a name the engine does not have), and a
//! devcontainer whose image cannot be pulled runs on the detected ecosystem's image instead,
//! saying so: the ticket never stops for an image the detected one could replace. A
//! devcontainer that builds its image from a Dockerfile beside it is built (once: the tag is the
//! files' hash), and one whose build fails falls back the same way.

use std::net::TcpListener;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use crate::ecosystems::{Tag, docker, gates, project};

/// A registry on 127.0.0.1 for as long as it lives, its storage in a temporary directory.
struct LocalRegistry {
    child: Child,
    addr: String,
    _dir: tempfile::TempDir,
}

impl LocalRegistry {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr = format!("127.0.0.1:{port}");
        let config = dir.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: {addr}\n",
                dir.path().join("data").display()
            ),
        )
        .unwrap();
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(&config)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("docker-registry runs (Debian's docker-registry package; scripts/test-deps installs it)");
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(&addr).is_err() {
            assert!(
                Instant::now() < deadline,
                "the registry never listened on {addr}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Self {
            child,
            addr,
            _dir: dir,
        }
    }
}

impl Drop for LocalRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const TEST_PY: &str =
    "import os\n\n\ndef test_in_the_sandbox():\n    assert os.path.isdir('/cache')\n";

fn devcontainer_project(image: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    project(&[
        (
            ".devcontainer/devcontainer.json",
            &format!("{{ \"image\": \"{image}\" }}"),
        ),
        ("requirements.txt", "pytest\n"),
        ("tests/test_here.py", TEST_PY),
    ])
}

#[test]
fn a_devcontainers_image_is_pulled_from_its_registry() {
    let registry = LocalRegistry::start();
    let image = format!("{}/team/dev:{}", registry.addr, std::process::id());
    {
        let pushed = Tag(image.clone());
        docker(&["tag", "vibeloop-runner:python", &pushed.0]);
        docker(&["push", "--quiet", &pushed.0]);
    } // untagged again: the engine does not have it by that name
    let _pulled = Tag(image.clone());
    let (_d, repo) = devcontainer_project(&image);
    let envs = tempfile::tempdir().unwrap();
    let (code, out) = gates(&repo, envs.path(), &[]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&format!("image: pulled the image {image}")),
        "{out}"
    );
    assert!(out.contains("test       passed"), "{out}");
}

#[test]
fn a_devcontainers_image_that_cannot_be_pulled_falls_back_to_the_detected_one() {
    let registry = LocalRegistry::start();
    let image = format!("{}/team/never-pushed:1", registry.addr);
    let (_d, repo) = devcontainer_project(&image);
    let envs = tempfile::tempdir().unwrap();
    let (code, out) = gates(&repo, envs.path(), &[]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&format!(
            "the devcontainer's image {image} could not be had"
        )) && out.contains("so the detected vibeloop-runner:python runs instead"),
        "{out}"
    );
    assert!(out.contains("test       passed"), "{out}");
}

const MARKER_TEST: &str = "def test_the_image_is_the_devcontainers():\n    with open('/etc/vibeloop-marker') as f:\n        assert f.read().split() == ['from-the-context', 'built-by-vibeloop']\n";

fn building_project(dockerfile: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    project(&[
        (
            ".devcontainer/devcontainer.json",
            "{ // built, not pulled\n  \"build\": { \"dockerfile\": \"Dockerfile\", \"args\": { \"GREETING\": \"built-by-vibeloop\" } },\n}\n",
        ),
        (".devcontainer/Dockerfile", dockerfile),
        (".devcontainer/marker.txt", "from-the-context\n"),
        ("requirements.txt", "pytest\n"),
        ("tests/test_marker.py", MARKER_TEST),
    ])
}

/// The tag `vibeloop gates` said it built, removed when the test ends.
fn built_tag(out: &str) -> Tag {
    let tag = out
        .split("image: built the image ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no image built in:\n{out}"));
    Tag(tag.to_owned())
}

#[test]
fn a_devcontainers_dockerfile_is_built_once_from_the_files_beside_it() {
    let (_d, repo) = building_project(
        "FROM vibeloop-runner:python\nARG GREETING\nUSER root\nCOPY marker.txt /etc/vibeloop-marker\nRUN echo \"$GREETING\" >> /etc/vibeloop-marker\nUSER 1000\n",
    );
    let envs = tempfile::tempdir().unwrap();
    let (code, out) = gates(&repo, envs.path(), &[]);
    let _built = built_tag(&out);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("from .devcontainer/Dockerfile in"), "{out}");
    assert!(out.contains("test       passed"), "{out}");
    // The same files: the image is there, nothing is built again.
    let (code, again) = gates(&repo, envs.path(), &[]);
    assert_eq!(code, 0, "{again}");
    assert!(!again.contains("image: built"), "{again}");
}

#[test]
fn a_devcontainers_dockerfile_that_fails_to_build_falls_back_to_the_detected_image() {
    let (_d, repo) =
        building_project("FROM vibeloop-runner:python\nRUN echo the step that breaks && false\n");
    let envs = tempfile::tempdir().unwrap();
    let (code, out) = gates(&repo, envs.path(), &[]);
    // The marker test needs the built image: on the detected one it fails, and says so.
    assert_ne!(code, 0, "{out}");
    assert!(
        out.contains("building it from .devcontainer/Dockerfile failed")
            && out.contains("the step that breaks")
            && out.contains("so the detected vibeloop-runner:python runs instead"),
        "{out}"
    );
}

/// Through the hive: the timeline says the image is being fetched and how it was had, the
/// toolchain a project asks for that the image lacks is named, and every role's sandbox runs
/// in the built image (the base's marker test passes at the baseline and at the gates).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ticket_builds_the_devcontainers_image_and_says_so_on_its_timeline() {
    use crate::ecosystems_run::{plan, run};
    use crate::support::fake_llm::{Script, Step};
    use crate::support::hive::{approve_json, writes};

    // Its own Dockerfile (a tag of its own): the gates test above never built this one.
    let dockerfile = "FROM vibeloop-runner:python\n# for a ticket\nARG GREETING\nUSER root\nCOPY marker.txt /etc/vibeloop-marker\nRUN echo \"$GREETING\" >> /etc/vibeloop-marker\nUSER 1000\n";
    let (_d, repo) = project(&[
        (
            ".devcontainer/devcontainer.json",
            "{ \"build\": { \"dockerfile\": \"Dockerfile\", \"args\": { \"GREETING\": \"built-by-vibeloop\" } } }\n",
        ),
        (".devcontainer/Dockerfile", dockerfile),
        (".devcontainer/marker.txt", "from-the-context\n"),
        (".python-version", "3.99\n"),
        ("requirements.txt", "pytest\n"),
        ("tests/test_marker.py", MARKER_TEST),
        ("calc.py", "def add(a, b):\n    return a - b\n"),
    ]);
    let goal = "add() adds";
    let script = Script::from([
        (
            "architect".to_owned(),
            vec![Step::say(&plan(goal, "calc.py"))],
        ),
        (
            "breaker".to_owned(),
            writes(
                "tests/test_calc.py",
                "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
                "A test.",
            ),
        ),
        (
            "builder".to_owned(),
            writes("calc.py", "def add(a, b):\n    return a + b\n", "Fixed."),
        ),
        ("critic".to_owned(), vec![Step::say(&approve_json())]),
    ]);
    let (code, stdout, stderr, _) = run(script, &repo, goal).await;
    let _built = built_tag(&stdout);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    for line in [
        "is not on this Docker host: getting it (a pull or a build)",
        "from .devcontainer/Dockerfile in",
        "toolchain: .python-version asks for Python 3.99; the image vibeloop-devcontainer:",
        "gate test: passed (2 tests)",
        "T-1 completed",
    ] {
        assert!(stdout.contains(line), "no {line:?} in:\n{stdout}\n{stderr}");
    }
}
