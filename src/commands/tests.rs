//! Grammar, line numbers and edits. Arguments, permissions and help, the Markdown cases and the
//! fuzzing each have a file under `tests/`.

mod arguments;
mod fuzz;
mod markdown;
mod permissions;

use super::*;

/// The one command of `body`.
fn one(body: &str) -> Parsed {
    let mut found = parse(body);
    assert_eq!(found.len(), 1, "{body:?}: {found:?}");
    found.remove(0).parsed
}

fn ok(body: &str) -> Command {
    match one(body) {
        Parsed::Ok(command) => command,
        other => panic!("{body:?}: {other:?}"),
    }
}

fn lines(found: &[Found]) -> Vec<usize> {
    found.iter().map(|f| f.line).collect()
}

#[test]
fn every_command_and_argument_form() {
    use Command::*;
    let tag100 = "v".repeat(100);
    let cases: Vec<(String, Command)> = vec![
        ("/hive status".into(), Status),
        ("/hive help".into(), Help),
        ("/hive".into(), Help),
        ("/hive   \t ".into(), Help),
        ("/hive plan".into(), Plan),
        ("/hive retry".into(), Retry(None)),
        ("/hive retry architect".into(), Retry(Some(Role::Architect))),
        ("/hive retry breaker".into(), Retry(Some(Role::Breaker))),
        ("/hive retry builder".into(), Retry(Some(Role::Builder))),
        ("/hive retry critic".into(), Retry(Some(Role::Critic))),
        (
            "/hive feedback keep it small".into(),
            Feedback("keep it small".into()),
        ),
        ("/hive feedback   a  b   ".into(), Feedback("a  b".into())),
        (
            "/hive feedback /hive approve".into(),
            Feedback("/hive approve".into()),
        ),
        ("/hive approve".into(), Approve),
        ("/hive abort".into(), Abort),
        ("/hive rebase".into(), Rebase),
        (
            "/hive reset auto-v1.2.3".into(),
            Reset("auto-v1.2.3".into()),
        ),
        (
            "/hive reset LATEST_STABLE".into(),
            Reset("LATEST_STABLE".into()),
        ),
        (
            "/hive reset release/v2_0".into(),
            Reset("release/v2_0".into()),
        ),
        ("/hive reset a".into(), Reset("a".into())),
        (format!("/hive reset {tag100}"), Reset(tag100.clone())),
        ("/hive\tstatus".into(), Status),
        ("/hive \t approve \t".into(), Approve),
        ("/hive\u{a0}status".into(), Status),
        ("   /hive status".into(), Status),
        ("/hive retry   builder  ".into(), Retry(Some(Role::Builder))),
    ];
    for (body, want) in cases {
        assert_eq!(ok(&body), want, "{body:?}");
    }
}

#[test]
fn commands_print_as_they_are_written() {
    let all = [
        Command::Status,
        Command::Help,
        Command::Plan,
        Command::Retry(None),
        Command::Retry(Some(Role::Critic)),
        Command::Feedback("use the builder's cache".into()),
        Command::Approve,
        Command::Abort,
        Command::Rebase,
        Command::Reset("auto-v0.1.0".into()),
        Command::Base("release/1.x".into()),
    ];
    for command in all {
        assert_eq!(ok(&command.to_string()), command, "{command}");
    }
    assert_eq!(
        Command::Retry(Some(Role::Builder)).to_string(),
        "/hive retry builder"
    );
}

#[test]
fn words_are_case_insensitive_and_tags_and_feedback_keep_their_case() {
    use Command::*;
    let cases = [
        ("/HIVE STATUS", Status),
        ("/Hive Approve", Approve),
        ("/hive ReBase", Rebase),
        ("/hive RETRY Builder", Retry(Some(Role::Builder))),
        ("/hive Reset Auto-V1", Reset("Auto-V1".into())),
        ("/hive FEEDBACK Keep It", Feedback("Keep It".into())),
    ];
    for (body, want) in cases {
        assert_eq!(ok(body), want, "{body:?}");
    }
}

#[test]
fn only_hive_at_a_line_start_is_a_command() {
    let bodies = [
        "/hivemind status",
        "/hives status",
        "/hive-status",
        "/hive/status",
        "/hive.",
        "    /hive status",
        "\t/hive status",
        "  \t/hive status",
        "x /hive status",
        "`/hive approve`",
        "Please run `/hive approve` when ready.",
        "``/hive approve``",
        "- /hive approve",
        "* /hive approve",
        "1. /hive approve",
        "# /hive approve",
        "| /hive approve |",
        "hive approve",
        "//hive approve",
        "\\/hive approve",
        "/ hive approve",
        "\u{a0}/hive approve",
        "\u{ff0f}hive approve",
        "/h\u{131}ve approve",
        "",
        "\n\n",
    ];
    for body in bodies {
        assert_eq!(parse(body), vec![], "{body:?}");
    }
}

#[test]
fn invisible_characters_before_or_inside_hive_make_no_command() {
    let invisible = [
        '\u{200B}', '\u{200C}', '\u{200D}', '\u{200E}', '\u{200F}', '\u{202A}', '\u{202B}',
        '\u{202C}', '\u{202D}', '\u{202E}', '\u{2060}', '\u{2061}', '\u{2062}', '\u{2063}',
        '\u{2064}', '\u{FEFF}', '\u{2066}', '\u{2069}', '\u{00AD}',
    ];
    for c in invisible {
        for body in [
            format!("{c}/hive approve"),
            format!(" {c}/hive approve"),
            format!("{c}   /hive approve"),
            format!("/{c}hive approve"),
            format!("/hi{c}ve approve"),
            format!("/hive{c} approve"),
            format!("/hive{c}approve"),
            format!("text\n{c}/hive approve"),
        ] {
            assert_eq!(parse(&body), vec![], "{body:?}");
        }
        // In the word or an argument they spoil the command instead of hiding it.
        match one(&format!("/hive app{c}rove")) {
            Parsed::Unknown { word, suggestion } => {
                assert_eq!(word, "app\u{FFFD}rove");
                assert_eq!(suggestion, Some("approve"));
            }
            other => panic!("{c:?}: {other:?}"),
        }
        assert!(matches!(
            one(&format!("/hive approve{c}")),
            Parsed::Unknown { .. }
        ));
        for body in [
            format!("/hive retry build{c}er"),
            format!("/hive reset v1{c}"),
        ] {
            assert!(matches!(one(&body), Parsed::Invalid { .. }), "{body:?}");
        }
    }
}

#[test]
fn several_commands_in_one_comment_with_their_lines() {
    let body = "Thanks!\n/hive status\n\n> /hive abort\n```\n/hive abort\n```\n  /hive retry builder\n\
                /hive aprove\n/hive reset\nnot `/hive approve`\n/HIVE\n";
    let found = parse(body);
    assert_eq!(lines(&found), [2, 8, 9, 10, 12]);
    assert_eq!(found[0].parsed, Parsed::Ok(Command::Status));
    assert_eq!(
        found[1].parsed,
        Parsed::Ok(Command::Retry(Some(Role::Builder)))
    );
    assert_eq!(found[1].text, "/hive retry builder");
    assert!(matches!(
        &found[2].parsed,
        Parsed::Unknown {
            suggestion: Some("approve"),
            ..
        }
    ));
    assert!(matches!(
        &found[3].parsed,
        Parsed::Invalid {
            command: "reset",
            ..
        }
    ));
    assert_eq!(found[4].parsed, Parsed::Ok(Command::Help));
}

#[test]
fn line_breaks_are_normalized_and_counted() {
    assert_eq!(
        lines(&parse("a\r\n/hive status\r\n/hive approve\r\n")),
        [2, 3]
    );
    assert_eq!(lines(&parse("a\r/hive status")), [2]);
    assert_eq!(lines(&parse("a\r\n\r/hive status")), [3]);
    let found = parse("x\r\n   /hive   approve   \r\n");
    assert_eq!(found[0].text, "/hive   approve");
    assert_eq!(found[0].parsed, Parsed::Ok(Command::Approve));
}

#[test]
fn text_is_the_line_as_written_and_short() {
    let found = parse("/hive approve <!-- /hive abort -->");
    assert_eq!(found[0].parsed, Parsed::Ok(Command::Approve));
    assert_eq!(found[0].text, "/hive approve <!-- /hive abort -->");
    let found = parse(&format!("/hive feedback {}", "x".repeat(300)));
    assert_eq!(found[0].text.chars().count(), MAX_TEXT);
    assert!(found[0].text.starts_with("/hive feedback xxx") && found[0].text.ends_with('…'));
}

#[test]
fn an_edit_runs_only_its_new_commands() {
    let cases: &[(&str, &str, &[usize])] = &[
        ("hi", "hi\n/hive approve", &[2]),
        ("", "/hive status\n/hive plan", &[1, 2]),
        ("/hive approve\nthanks", "/hive approve\nthanks a lot", &[]),
        ("/hive retry", "/hive retry\n\n/hive retry", &[3]),
        (
            "/hive retry",
            "/hive retry\n/hive retry\n/hive retry",
            &[2, 3],
        ),
        ("/hive retry\n/hive retry", "/hive retry\n/hive retry", &[]),
        ("/hive approve\n/hive rebase", "/hive rebase", &[]),
        ("/hive approve\n/hive rebase", "", &[]),
        ("/hive status\nx", "x\n/hive status", &[]),
        ("/hive approve", "/HIVE   Approve  ", &[]),
        ("/hive retry Builder", "/hive retry builder", &[]),
        ("/hive retry builder", "/hive retry critic", &[1]),
        ("/hive feedback a  b", "/hive feedback a\nb", &[]),
        ("/hive feedback a b", "/hive feedback a c", &[1]),
        ("/hive aprove", "/hive approve", &[1]),
        ("/hive aprove", "/hive aprove\nedited", &[]),
        ("/hive reset", "/hive reset\nedited", &[]),
        ("```\n/hive abort\n```", "/hive abort", &[1]),
        ("/hive abort", "```\n/hive abort\n```", &[]),
        (
            "<!-- /hive approve -->",
            "/hive approve <!-- done -->",
            &[1],
        ),
    ];
    for (old, new, want) in cases {
        assert_eq!(lines(&new_commands(old, new)), *want, "{old:?} -> {new:?}");
    }
}
