//! Real crates, zero-config: releases fetched from the crate registry at test time by this
//! machine's cargo (pinned by version and checksum, never copied into this repository), made a
//! git repository as their maintainers' checkout looks, and driven through `vibeloop gates`.
//! Each has a shape that broke setup before: a library without a lockfile whose newest
//! dev-dependencies need a newer compiler than the image's, and a Cargo workspace of two
//! crates, one patched to the other. And a project asking for a newer Rust than the image has
//! is told so in one line, with the setting.

use crate::ecosystems::{gate, gates, gates_json, project};
use crate::support::registry::{Crate, commit_and_tag, copy_dir, write};

/// No `Cargo.lock` and no `rust-version`; its dev-dependency `proptest = "1.0.0"` resolves to
/// a release that needs rustc 1.88 unless the resolver falls back to versions the image's
/// compiler can build.
const SMOL_STR: Crate = Crate {
    name: "smol_str",
    version: "0.2.2",
    sha256: "dd538fb6910ac1099850255cf94a94df6551fbdd602454387d0adb2d1ca6dead",
};

const PERCENT_ENCODING: Crate = Crate {
    name: "percent-encoding",
    version: "2.3.2",
    sha256: "9b4f627cb1b25917193a259e49bdad08f671f8d9708acfd5fe0a8c1455d87220",
};

const FORM_URLENCODED: Crate = Crate {
    name: "form_urlencoded",
    version: "1.2.2",
    sha256: "cb4cb245038516f5f85277875cdaa4f7d2c9a0fa0468de06ed190163b1581fcf",
};

#[test]
fn a_crate_without_a_lockfile_resolves_dev_dependencies_its_compiler_can_build() {
    // tests/tidy.rs runs `cargo +stable fmt`: rustup's, which no image without rustup has.
    let (_d, repo) = SMOL_STR.repository(&["Cargo.lock", "tests/tidy.rs"], &[]);
    let envs = tempfile::tempdir().unwrap();
    let (_, all, err) = gates_json(&repo, envs.path());
    assert!(err.contains("setup: environment"), "{all}\n{err}");
    let test = gate(&all, "test");
    assert_eq!(test["status"], "passed", "{test}\n{err}");
    let passed = test["counts"]["passed"].as_u64().unwrap_or(0);
    assert!(passed >= 20, "{test}");
    // Its build passes too; its lint (today's clippy, `-D warnings`) has findings of its own.
    assert_eq!(gate(&all, "build")["status"], "passed", "{all}");
}

#[test]
fn a_workspace_of_two_crates_tests_both_zero_config() {
    let (dir, root) = tempfile::tempdir()
        .map(|d| {
            let root = d.path().join("ws");
            (d, root)
        })
        .unwrap();
    for (krate, into) in [
        (&PERCENT_ENCODING, "percent-encoding"),
        (&FORM_URLENCODED, "form_urlencoded"),
    ] {
        let (_unpacked_in, unpacked) = krate.unpacked(&["Cargo.lock"]);
        let to = root.join(into);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        copy_dir(&unpacked, &to);
    }
    write(
        &root,
        "Cargo.toml",
        "[workspace]\nmembers = [\"percent-encoding\", \"form_urlencoded\"]\nresolver = \"2\"\n\n[patch.crates-io]\npercent-encoding = { path = \"percent-encoding\" }\n",
    );
    write(&root, ".gitignore", "/target\n");
    commit_and_tag(&root, "1.2.2");
    let envs = tempfile::tempdir().unwrap();
    let (code, all, err) = gates_json(&root, envs.path());
    assert_eq!(code, 0, "{all}\n{err}");
    let test = gate(&all, "test");
    // percent-encoding's unit tests and doc-tests, and form_urlencoded's doc-test.
    let passed = test["counts"]["passed"].as_u64().unwrap_or(0);
    assert!(passed >= 20, "{test}");
    drop(dir);
}

#[test]
fn a_rust_newer_than_the_images_is_named_with_the_setting() {
    let (_d, repo) = project(&[
        (
            "Cargo.toml",
            "[package]\nname = \"future\"\nversion = \"0.1.0\"\nedition = \"2021\"\nrust-version = \"1.199\"\n",
        ),
        ("src/lib.rs", "pub fn one() -> u32 { 1 }\n"),
    ]);
    let envs = tempfile::tempdir().unwrap();
    let (code, out) = gates(&repo, envs.path(), &[]);
    assert_ne!(code, 0, "{out}");
    let line = out
        .lines()
        .find(|l| l.starts_with("toolchain: "))
        .unwrap_or_else(|| panic!("no toolchain line in:\n{out}"));
    assert!(
        line.starts_with(
            "toolchain: Cargo.toml rust-version asks for Rust 1.199; the image vibeloop-runner:rust has 1."
        ) && line.ends_with("set `image:` in .github/hive.yml to one with Rust 1.199."),
        "{line}"
    );
}

/// A manifest that names four `[[test]]` targets by name alone (`harness = false`): cargo looks
/// for each at `tests/<name>.rs`. With a lockfile.
const ENV_LOGGER: Crate = Crate {
    name: "env_logger",
    version: "0.10.2",
    sha256: "4cd405aab171cb85d6735e5c8d9db038c17d3ca007a4d2c25f337935c3d90580",
};

/// A change that edits the manifest is set up in two phases: downloads over the dependency
/// files alone, every target cargo looks for stubbed, then offline over the change.
#[test]
fn a_changed_manifest_that_names_its_targets_downloads_with_every_target_stubbed() {
    let (_d, repo) = ENV_LOGGER.repository(&[], &[]);
    let manifest = std::fs::read_to_string(repo.join("Cargo.toml")).unwrap();
    write(
        &repo,
        "Cargo.toml",
        &format!("{manifest}\n# the change edits the manifest\n"),
    );
    for args in [
        &["checkout", "-q", "-b", "change"][..],
        &["commit", "-qam", "edit the manifest"],
    ] {
        let ok = std::process::Command::new("git")
            .args(["-c", "user.name=Me", "-c", "user.email=me@example.com"])
            .args(args)
            .current_dir(&repo)
            .status()
            .unwrap();
        assert!(ok.success(), "git {args:?}");
    }
    let envs = tempfile::tempdir().unwrap();
    let (_, out) = gates(&repo, envs.path(), &["--gate", "test"]);
    assert!(out.contains("setup: environment"), "{out}");
    assert!(!out.contains("can't find"), "{out}");
    // Set up, its tests ran (its doc-tests fail on today's rustc, as on its base: not ours).
    let ran = out
        .lines()
        .find(|l| l.starts_with("test: "))
        .unwrap_or_else(|| panic!("no test gate in:\n{out}"));
    assert!(ran.contains("tests"), "{ran}");
}

/// The crate as its maintainers keep it: `lib.rs` at the root (`[lib] path`), tests found by
/// cargo (the manifest before `cargo package` wrote its targets out).
const FNV: Crate = Crate {
    name: "fnv",
    version: "1.0.7",
    sha256: "3f9eec918d3f24069decb9af1554cad7c880e2da24a9afd88aca000531ab82c1",
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_to_a_real_crate_reaches_ready() {
    use crate::ecosystems_run::{change_script, run};
    let (_unpacked_in, unpacked) = crate::support::registry::unpack(&FNV.archive(), &[]);
    let manifest = std::fs::read_to_string(unpacked.join("Cargo.toml.orig")).unwrap();
    let (_d, repo) = FNV.repository(
        &[],
        &[("Cargo.toml", &manifest), (".gitignore", "/target\n")],
    );
    let lib = std::fs::read_to_string(repo.join("lib.rs")).unwrap();
    let goal = "fnv::hash(bytes): the 64-bit FNV-1a hash of a byte slice";
    let test = "#[test]\nfn hashes_bytes_as_fnv_1a() {\n    assert_eq!(fnv::hash(b\"\"), 0xcbf29ce484222325);\n    assert_eq!(fnv::hash(b\"a\"), 0xaf63dc4c8601ec8c);\n}\n";
    let hash = "\n/// The 64-bit FNV-1a hash of `bytes`.\npub fn hash(bytes: &[u8]) -> u64 {\n    let mut hasher = FnvHasher::default();\n    hasher.write(bytes);\n    hasher.finish()\n}\n";
    // The Builder writes it before the crate's own test module, as clippy wants items.
    let script = change_script(
        goal,
        "lib.rs",
        ("tests/hash.rs", test),
        (
            "lib.rs",
            &lib.replacen("\n#[cfg(test)]", &format!("{hash}\n#[cfg(test)]"), 1),
        ),
    );
    let (code, stdout, stderr, _) = run(script, &repo, goal).await;
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    for line in ["✓ red_proof", "gate test: passed", "T-1 completed"] {
        assert!(stdout.contains(line), "no {line:?} in:\n{stdout}\n{stderr}");
    }
}
