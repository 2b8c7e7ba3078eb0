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

/// A manifest that names its targets (`[[test]]`, `[[bench]]` with `harness = false`, `build =
/// false`, `autotests = false`), with a lockfile.
const ITOA: Crate = Crate {
    name: "itoa",
    version: "1.0.18",
    sha256: "8f42a60cbdf9a97f5d2305f08a87dc4e09308d1276d28c869c684d7777685682",
};

/// A change that edits the manifest is set up in two phases: downloads over the dependency
/// files alone, every target cargo looks for stubbed, then offline over the change.
#[test]
fn a_changed_manifest_that_names_its_targets_downloads_with_every_target_stubbed() {
    let (_d, repo) = ITOA.repository(&[], &[]);
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
    let (code, out) = gates(&repo, envs.path(), &["--gate", "test"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("setup: environment"), "{out}");
    assert!(!out.contains("can't find"), "{out}");
}
