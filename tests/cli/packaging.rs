//! Packaging checks: `docker/Dockerfile`, `docker/compose.yml` and `deploy/kubernetes/*.yaml`
//! held against the real binary and against each other. Every environment variable and flag
//! they give the bot is one `vibeloop serve --help` lists; the image builds and runs the binary
//! the README documents and listens beyond loopback; the compose file is valid Compose (checked
//! by `docker-compose config`); the manifests parse, run one role per Deployment, and give each
//! worker a Docker engine that sees the bot's data directory at the bot's own path.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::parse::*;
use serde_yaml_ng::Value;

#[test]
fn dockerfile_builds_the_documented_binary_and_listens_beyond_loopback() {
    let all = dockerfile();
    let run = runtime_stage(&all);
    let bin = bin_name();
    assert!(
        read("README.md").contains(&format!("`{bin} serve`")),
        "README.md does not document `{bin} serve`"
    );
    // Every cargo build is a locked release build; the last one builds the shipped binary.
    let builds: Vec<&str> = all[..all.len() - run.len()]
        .iter()
        .filter(|(k, _)| k == "RUN")
        .flat_map(|(_, a)| a.split(';').filter(|c| c.contains("cargo build")))
        .collect();
    let last = format!("cargo build --release --locked --bin {bin}");
    assert!(
        builds
            .iter()
            .all(|c| c.contains("--release") && c.contains("--locked"))
            && builds.last().is_some_and(|c| c.contains(&last)),
        "the build stage must run `{last}` last, and only locked release builds: {builds:?}"
    );
    assert!(
        run.iter().any(|(k, a)| k == "COPY"
            && a.starts_with("--from=")
            && a.split_whitespace()
                .nth(1)
                .is_some_and(|src| src.ends_with(&format!("/{bin}")))),
        "the runtime stage copies no `{bin}` binary from the build stage"
    );
    let entry = run
        .iter()
        .rfind(|(k, _)| k == "ENTRYPOINT")
        .expect("an ENTRYPOINT");
    assert_eq!(
        json_words(&entry.1)[0],
        bin,
        "ENTRYPOINT runs another binary"
    );

    let env = env_of(&run);
    let listen: std::net::SocketAddr = env["VIBELOOP_LISTEN"].parse().expect("an address");
    assert!(
        listen.ip().is_unspecified(),
        "VIBELOOP_LISTEN={listen}: only reachable from inside the container"
    );
    let exposed: Vec<String> = run
        .iter()
        .filter(|(k, _)| k == "EXPOSE")
        .flat_map(|(_, a)| {
            a.split_whitespace()
                .map(|p| p.trim_end_matches("/tcp").to_owned())
        })
        .collect();
    assert!(
        exposed.contains(&listen.port().to_string()),
        "EXPOSE {exposed:?} misses the port the bot listens on ({})",
        listen.port()
    );
    let volumes: Vec<String> = run
        .iter()
        .filter(|(k, _)| k == "VOLUME")
        .flat_map(|(_, a)| json_words(a))
        .collect();
    assert!(
        volumes.contains(&env["VIBELOOP_DATA_DIR"]),
        "VIBELOOP_DATA_DIR={} is not a VOLUME ({volumes:?})",
        env["VIBELOOP_DATA_DIR"]
    );
    let user = run
        .iter()
        .rfind(|(k, _)| k == "USER")
        .expect("a USER: the bot must not run as root");
    let name = user.1.split(':').next().unwrap();
    assert!(name != "root" && name != "0", "USER {} is root", user.1);

    let known = known_env(&serve_help());
    assert_known("docker/Dockerfile", &env.keys().cloned().collect(), &known);
    for (k, a) in all.iter().filter(|(k, _)| k == "ENV" || k == "ARG") {
        let upper = a.to_ascii_uppercase();
        assert!(
            !["SECRET", "KEY", "PASSWORD", "TOKEN"]
                .iter()
                .any(|w| upper.contains(w)),
            "docker/Dockerfile bakes a credential into the image: {k} {a}"
        );
    }
    let ignore: BTreeSet<String> = read(".dockerignore")
        .lines()
        .map(|l| l.trim().trim_end_matches('/').to_owned())
        .collect();
    for must in ["target", ".git", ".vibeloop", ".env"] {
        assert!(
            ignore.contains(must),
            ".dockerignore does not exclude {must}"
        );
    }
}

// --- compose ---------------------------------------------------------------------------------

fn docker_compose() -> PathBuf {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("docker-compose"))
        .find(|p| p.is_file())
        .expect(
            "docker-compose is not on PATH; these tests check docker/compose.yml with it: \
             install Debian's package (apt-get install docker-compose)",
        )
}

/// `docker-compose config` of docker/compose.yml, with `env` as the only variables and an
/// empty `.env` in a scratch project directory `<tmp>/docker` (so `..` is `<tmp>`).
fn compose_config(env: &[(&str, &str)]) -> (std::process::Output, tempfile::TempDir) {
    let tmp = tempfile::tempdir().expect("a scratch directory");
    let project = tmp.path().join("docker");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(project.join(".env"), "").unwrap();
    let mut cmd = Command::new(docker_compose());
    cmd.arg("-f")
        .arg(repo().join("docker/compose.yml"))
        .arg("--project-directory")
        .arg(&project)
        .arg("config")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(env.iter().copied());
    (cmd.output().expect("runs docker-compose"), tmp)
}

#[test]
fn compose_file_is_valid_and_gives_workers_the_engine_and_the_data_dir_at_the_same_path() {
    let (out, tmp) = compose_config(&[("POSTGRES_PASSWORD", "pw"), ("DOCKER_GID", "999")]);
    assert!(
        out.status.success(),
        "docker-compose config rejects docker/compose.yml:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let config: Value = serde_yaml_ng::from_slice(&out.stdout).expect("config prints YAML");
    let help = serve_help();
    let (known, flags) = (known_env(&help), known_flags(&help));
    let image_dir = image_data_dir();
    let mut roles = BTreeSet::new();
    let services = config["services"].as_mapping().expect("services");
    for (name, svc) in services {
        let name = name.as_str().unwrap();
        if svc.get("build").is_none() {
            continue;
        }
        let build = &svc["build"];
        let context = Path::new(build["context"].as_str().unwrap());
        let rel = context
            .canonicalize()
            .unwrap()
            .strip_prefix(tmp.path().canonicalize().unwrap())
            .map(Path::to_path_buf)
            .unwrap_or_else(|_| {
                panic!("{name}: build context {context:?} is outside the repository")
            });
        let dockerfile = repo().join(rel).join(build["dockerfile"].as_str().unwrap());
        assert_eq!(
            dockerfile.canonicalize().ok(),
            repo().join("docker/Dockerfile").canonicalize().ok(),
            "{name}: builds {dockerfile:?}, not docker/Dockerfile"
        );

        let mut words = strings(svc.get("entrypoint"));
        words.extend(strings(svc.get("command")));
        assert_known(
            &format!("compose service {name} (flags)"),
            &flags_in(&words),
            &flags,
        );
        let role = flag_value(&words, "--role")
            .unwrap_or_else(|| panic!("compose service {name} runs no `--role`: {words:?}"));
        roles.insert(role.clone());

        let env: BTreeMap<String, String> = svc["environment"]
            .as_mapping()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| {
                        (
                            k.as_str().unwrap().to_owned(),
                            v.as_str().unwrap_or("").to_owned(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        assert_known(
            &format!("compose service {name}"),
            &env.keys().cloned().collect(),
            &known,
        );
        assert!(
            env.get("DATABASE_URL")
                .is_some_and(|u| u.starts_with("postgres://")),
            "compose service {name} does not use the postgres service"
        );
        if role == "ingress" {
            continue;
        }
        assert_eq!(
            env.get("VIBELOOP_SANDBOX").map(String::as_str),
            Some("docker"),
            "compose service {name}: without VIBELOOP_SANDBOX=docker a worker that cannot reach \
             the engine runs gates as unconfined local processes"
        );
        let volumes = strings(svc.get("volumes"));
        assert!(
            env.contains_key("DOCKER_HOST")
                || volumes
                    .iter()
                    .any(|v| v.starts_with("/var/run/docker.sock:/var/run/docker.sock")),
            "compose service {name} ({role}) reaches no Docker engine: {volumes:?}"
        );
        // The engine resolves bind mounts on the host: the data dir must be a bind mount at
        // the same path on both sides.
        let env_dir = env
            .get("VIBELOOP_DATA_DIR")
            .cloned()
            .unwrap_or(image_dir.clone());
        let data_dir = match flag_value(&words, "--data-dir") {
            Some(d) => d
                .replace("$${VIBELOOP_DATA_DIR}", &env_dir)
                .replace("${VIBELOOP_DATA_DIR}", &env_dir),
            None => env_dir,
        };
        let shared = volumes.iter().any(|v| {
            let mut parts = v.split(':');
            let (src, dst) = (parts.next().unwrap(), parts.next().unwrap_or(""));
            src.starts_with('/') && src == dst && Path::new(&data_dir).starts_with(dst)
        });
        assert!(
            shared,
            "compose service {name}: data dir {data_dir} is not inside a bind mount at the same \
             path on host and container ({volumes:?}); the sandbox would see empty worktrees"
        );
    }
    for role in ["all", "ingress", "worker"] {
        assert!(
            roles.contains(role),
            "no compose service runs --role {role} (found {roles:?})"
        );
    }

    let (out, _tmp) = compose_config(&[("DOCKER_GID", "999")]);
    assert!(
        !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("POSTGRES_PASSWORD"),
        "docker/compose.yml starts without POSTGRES_PASSWORD: it must not ship a default password"
    );
}

// --- Kubernetes -----------------------------------------------------------------------------

/// The variables a container gets, each with its literal value where it has one.
fn container_env(
    objects: &[(String, Value)],
    c: &Value,
    at: &str,
) -> BTreeMap<String, Option<String>> {
    let mut env = BTreeMap::new();
    for from in seq(c, "envFrom") {
        let (kind, r) = match (from.get("configMapRef"), from.get("secretRef")) {
            (Some(r), _) => ("ConfigMap", r),
            (_, Some(r)) => ("Secret", r),
            _ => panic!("{at}: envFrom without configMapRef or secretRef"),
        };
        let name = s(r, &["name"]).unwrap();
        let keys = keys_of(objects, kind, name).unwrap_or_else(|| {
            panic!("{at}: envFrom names {kind} {name}, which no manifest defines")
        });
        env.extend(keys.into_iter().map(|k| (k.to_owned(), None)));
    }
    for e in seq(c, "env") {
        for (kind, field) in [("Secret", "secretKeyRef"), ("ConfigMap", "configMapKeyRef")] {
            if let Some(r) = e.get("valueFrom").and_then(|v| v.get(field)) {
                let (name, key) = (s(r, &["name"]).unwrap(), s(r, &["key"]).unwrap());
                let keys = keys_of(objects, kind, name).unwrap_or_else(|| {
                    panic!("{at}: {field} names {kind} {name}, which no manifest defines")
                });
                assert!(keys.contains(key), "{at}: {kind} {name} has no key {key}");
            }
        }
        let value = s(e, &["value"]).map(str::to_owned);
        env.insert(s(e, &["name"]).unwrap().to_owned(), value);
    }
    env
}

#[test]
fn kubernetes_manifests_run_one_role_per_deployment_and_workers_share_the_data_dir_with_their_engine()
 {
    let objects = manifests();
    let help = serve_help();
    let (known, flags) = (known_env(&help), known_flags(&help));
    let bin = bin_name();
    let image_dir = image_data_dir();
    let mut roles = BTreeSet::new();
    for (file, obj) in &objects {
        let (kind, name) = (
            s(obj, &["kind"]).unwrap_or(""),
            s(obj, &["metadata", "name"]).unwrap_or(""),
        );
        assert!(
            !kind.is_empty() && !name.is_empty() && s(obj, &["apiVersion"]).is_some(),
            "{file}: a document without apiVersion, kind or metadata.name"
        );
        assert!(
            obj["metadata"].get("namespace").is_none(),
            "{file}: {kind} {name} sets a namespace; the manifests are applied with -n"
        );
        if kind == "Service" {
            let selector = obj["spec"]["selector"].as_mapping().expect("a selector");
            let selects = objects.iter().any(|(_, o)| {
                o.get("spec")
                    .and_then(|s| s.get("template"))
                    .is_some_and(|t| {
                        selector
                            .iter()
                            .all(|(k, v)| t["metadata"]["labels"].get(k) == Some(v))
                    })
            });
            assert!(
                selects,
                "{file}: Service {name} selects no pod of these manifests"
            );
        }
        if kind != "Deployment" && kind != "StatefulSet" {
            continue;
        }
        let template = &obj["spec"]["template"];
        for (k, v) in obj["spec"]["selector"]["matchLabels"]
            .as_mapping()
            .expect("matchLabels")
        {
            assert_eq!(
                template["metadata"]["labels"].get(k),
                Some(v),
                "{file}: {name} selector"
            );
        }
        let pod = &template["spec"];
        let containers: Vec<&Value> = seq(pod, "initContainers")
            .chain(seq(pod, "containers"))
            .collect();
        for c in &containers {
            container_env(&objects, c, &format!("{file}: {name}"));
        }
        let Some(bot) = containers.iter().find(|c| {
            let image = s(c, &["image"]).unwrap_or("");
            let repo = image
                .rsplit('/')
                .next()
                .unwrap()
                .split([':', '@'])
                .next()
                .unwrap();
            repo == bin
        }) else {
            assert!(
                kind != "Deployment",
                "{file}: Deployment {name} runs no {bin} container"
            );
            continue;
        };
        let at = format!("{file}: {name}");
        let args = strings(bot.get("args"));
        assert_known(&format!("{at} (flags)"), &flags_in(&args), &flags);
        let role = flag_value(&args, "--role")
            .unwrap_or_else(|| panic!("{at}: args {args:?} have no --role"));
        assert!(
            role == "ingress" || role == "worker",
            "{at}: --role {role}: one Deployment per role"
        );
        roles.insert(role.clone());
        let env = container_env(&objects, bot, &at);
        assert_known(&at, &env.keys().cloned().collect(), &known);
        if role != "worker" {
            continue;
        }

        // The worker's engine: a Unix socket in a volume it shares with the container running
        // dockerd, which must also mount the data volume at the bot's data-dir path.
        assert_eq!(
            env.get("VIBELOOP_SANDBOX"),
            Some(&Some("docker".to_owned())),
            "{at}: without VIBELOOP_SANDBOX=docker a worker that cannot reach the engine runs \
             gates as unconfined local processes"
        );
        let host = env
            .get("DOCKER_HOST")
            .cloned()
            .flatten()
            .unwrap_or_default();
        let socket = host
            .strip_prefix("unix://")
            .unwrap_or_else(|| panic!("{at}: DOCKER_HOST={host:?}, expected unix:// to a sidecar"));
        let bot_mounts = mounts(bot);
        let socket_mount = bot_mounts
            .iter()
            .find(|(_, path)| Path::new(socket).starts_with(path))
            .unwrap_or_else(|| panic!("{at}: the socket {socket} is in no volume of the bot"));
        let engine = containers
            .iter()
            .find(|c| !std::ptr::eq(**c, *bot) && mounts(c).contains(socket_mount))
            .unwrap_or_else(|| panic!("{at}: no other container shares {socket_mount:?}"));
        let engine_words = [strings(engine.get("command")), strings(engine.get("args"))].concat();
        assert!(
            engine_words.iter().any(|w| w == "dockerd")
                && engine_words.iter().any(|w| w.contains(socket)),
            "{at}: the container sharing the socket volume does not run dockerd on {socket}"
        );
        let data_dir = match env.get("VIBELOOP_DATA_DIR") {
            Some(Some(dir)) => dir.clone(),
            Some(None) => panic!(
                "{at}: set VIBELOOP_DATA_DIR in the worker's env, next to the volume it must match"
            ),
            None => image_dir.clone(),
        };
        let data_mount = bot_mounts
            .iter()
            .find(|(_, path)| Path::new(&data_dir).starts_with(path))
            .unwrap_or_else(|| panic!("{at}: the data dir {data_dir} is on no volume"));
        assert!(
            mounts(engine).contains(data_mount),
            "{at}: the engine does not mount volume {data_mount:?} at the bot's path: sandboxes \
             would find no worktree"
        );
        if let Some(gid) = flag_value(&engine_words, "--group") {
            let group = [&bot["securityContext"], &pod["securityContext"]]
                .iter()
                .find_map(|sc| sc.get("runAsGroup").and_then(Value::as_u64));
            assert_eq!(
                group.map(|g| g.to_string()),
                Some(gid),
                "{at}: the bot does not run in the group of the engine's socket"
            );
        }
    }
    assert_eq!(
        roles,
        BTreeSet::from(["ingress".to_owned(), "worker".to_owned()]),
        "a Deployment per role"
    );
}
