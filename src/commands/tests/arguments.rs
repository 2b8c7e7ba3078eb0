//! Unknown words and their suggestions, invalid arguments, feedback text.

use super::super::*;
use super::{lines, ok, one};

#[test]
fn unknown_words_come_with_suggestions() {
    let cases = [
        ("/hive aprove", "aprove", Some("approve")),
        ("/hive APROVE", "APROVE", Some("approve")),
        ("/hive stauts", "stauts", Some("status")),
        ("/hive frobnicate", "frobnicate", None),
        ("/hive rebsae", "rebsae", Some("rebase")),
        ("/hive retyr builder", "retyr", Some("retry")),
        ("/hive feedbak use less", "feedbak", Some("feedback")),
        ("/hive hlep", "hlep", Some("help")),
        ("/hive abrot", "abrot", Some("abort")),
        ("/hive plna", "plna", Some("plan")),
        ("/hive rset v1", "rset", Some("reset")),
        ("/hive approved", "approved", Some("approve")),
        ("/hive stat", "stat", Some("status")),
        ("/hive fe", "fe", Some("feedback")),
        ("/hive re", "re", None),
        ("/hive a", "a", None),
        ("/hive ok", "ok", None),
        ("/hive merge", "merge", None),
        ("/hive `rm -rf`", "'rm", None),
    ];
    for (body, want_word, want) in cases {
        assert_eq!(
            one(body),
            Parsed::Unknown {
                word: want_word.into(),
                suggestion: want
            },
            "{body:?}"
        );
    }
    match one(&format!("/hive {}", "x".repeat(80))) {
        Parsed::Unknown { word, suggestion } => {
            assert_eq!(word.chars().count(), 32);
            assert!(word.ends_with('…'));
            assert_eq!(suggestion, None);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn suggest_fits_one_command_or_none() {
    let cases = [
        ("approve", Some("approve")),
        ("", None),
        ("x", None),
        ("pln", Some("plan")),
        ("abt", None),
        ("reste", Some("reset")),
        ("rest", Some("reset")),
        ("reb", Some("rebase")),
        ("ret", Some("retry")),
        ("ab", Some("abort")),
        ("ÁPPROVE", Some("approve")),
        ("statusstatusstatus", None),
        ("\u{200B}", None),
    ];
    for (word, want) in cases {
        assert_eq!(suggest(word), want, "{word:?}");
    }
}

#[test]
fn invalid_arguments_say_what_to_write() {
    let long_tag = format!("/hive reset {}", "v".repeat(101));
    let cases = [
        ("/hive retry janitor", "retry", "no role `janitor`"),
        // Roles that are no ticket's stage are not retried.
        ("/hive retry reflector", "retry", "no role `reflector`"),
        ("/hive retry chat", "retry", "no role `chat`"),
        ("/hive retry builder critic", "retry", "one role at most"),
        ("/hive reset", "reset", "needs a tag"),
        ("/hive reset ../x", "reset", "`..`"),
        ("/hive reset a..b", "reset", "`..`"),
        ("/hive reset -v1", "reset", "start with `-`"),
        ("/hive reset --force", "reset", "start with `-`"),
        ("/hive reset a b", "reset", "one tag"),
        ("/hive reset v1;rm", "reset", "only letters"),
        ("/hive reset vé", "reset", "only letters"),
        ("/hive reset v1~1", "reset", "only letters"),
        (long_tag.as_str(), "reset", "1 to 100"),
        ("/hive reset /v1", "reset", "`//`"),
        ("/hive reset v1/", "reset", "`//`"),
        ("/hive reset a//b", "reset", "`//`"),
        ("/hive reset .hidden", "reset", "starts with `.`"),
        ("/hive reset a/.b", "reset", "starts with `.`"),
        ("/hive reset v1.lock", "reset", "`.lock`"),
        ("/hive reset v1.", "reset", "end with `.`"),
        ("/hive base", "base", "needs a branch"),
        ("/hive base --upload-pack=x", "base", "only letters"),
        ("/hive base --force", "base", "start with `-`"),
        ("/hive base main;id", "base", "only letters"),
        ("/hive base main dev", "base", "one branch"),
        ("/hive base release/../main", "base", "`..`"),
        ("/hive feedback", "feedback", "needs text"),
        ("/hive feedback   \t", "feedback", "needs text"),
        ("/hive feedback a\u{202E}b", "feedback", "bidi"),
        ("/hive approve now", "approve", "no arguments"),
        ("/hive status please", "status", "no arguments"),
        ("/hive help me", "help", "no arguments"),
        ("/hive plan again", "plan", "no arguments"),
        ("/hive abort x", "abort", "no arguments"),
        ("/hive rebase main", "rebase", "`/hive rebase` alone"),
    ];
    for (body, want_command, want_reason) in cases {
        match one(body) {
            Parsed::Invalid { command, reason } => {
                assert_eq!(command, want_command, "{body:?}");
                assert!(reason.contains(want_reason), "{body:?}: {reason}");
            }
            other => panic!("{body:?}: {other:?}"),
        }
    }
    // Echoed values are made safe to show in backticks.
    match one("/hive retry `x`") {
        Parsed::Invalid { reason, .. } => assert!(reason.contains("`'x'`"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn feedback_runs_on_over_following_lines() {
    let cases = [
        (
            "/hive feedback first\nsecond line\n  third  \n\nafter a blank",
            "first\nsecond line\nthird",
        ),
        (
            "/hive feedback\nstarts on the next line",
            "starts on the next line",
        ),
        (
            "/hive feedback please:\n- use X\n- avoid Y\n",
            "please:\n- use X\n- avoid Y",
        ),
        ("/hive feedback a\n```\ncode\n```", "a"),
        ("/hive feedback a\n> quoted", "a"),
        ("/hive feedback a\n<!-- note -->\nb", "a"),
        ("/hive feedback a\n    indented\nb", "a\nindented\nb"),
        (
            "/hive feedback a\n/hivemind is a word\n",
            "a\n/hivemind is a word",
        ),
        ("/hive feedback a <!-- hidden --> b", "a  b"),
        ("/hive feedback a <!--\nsecret\n--> b\nc", "a\nb\nc"),
        ("/hive feedback a\r\nb\r\n\r\nc", "a\nb"),
        (
            "/hive feedback 👩\u{200D}💻 \u{200F}fine",
            "👩\u{200D}💻 \u{200F}fine",
        ),
    ];
    for (body, want) in cases {
        assert_eq!(ok(body), Command::Feedback(want.into()), "{body:?}");
    }
    let found = parse("/hive feedback a\nb\n/hive approve\nc");
    assert_eq!(lines(&found), [1, 3]);
    assert_eq!(
        found[0].parsed,
        Parsed::Ok(Command::Feedback("a\nb".into()))
    );
    assert_eq!(found[1].parsed, Parsed::Ok(Command::Approve));
}

#[test]
fn feedback_has_at_most_2000_characters() {
    for (body, fits) in [
        (format!("/hive feedback {}", "x".repeat(2000)), true),
        (format!("/hive feedback {}", "é".repeat(2000)), true),
        (format!("/hive feedback {}", "x".repeat(2001)), false),
        (
            format!("/hive feedback {}\n{}", "x".repeat(1990), "y".repeat(20)),
            false,
        ),
        (format!("/hive feedback x\n{}", "y\n".repeat(5000)), false),
    ] {
        match one(&body) {
            Parsed::Ok(Command::Feedback(text)) => assert!(fits && text.chars().count() <= 2000),
            Parsed::Invalid { command, reason } => {
                assert!(!fits, "{reason}");
                assert_eq!(command, "feedback");
                assert!(reason.contains("limit is 2000"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn a_question_is_read_as_feedback_is_and_hidden_ones_are_not_asked() {
    assert_eq!(
        ok("/hive ask where is the retry logic,\nand why 3 tries?\n\nthanks"),
        Command::Ask("where is the retry logic,\nand why 3 tries?".into())
    );
    assert_eq!(ok("/hive ASK   why?  "), Command::Ask("why?".into()));
    match one("/hive ask") {
        Parsed::Invalid { command, reason } => {
            assert_eq!(command, "ask");
            assert!(reason.starts_with("needs text, e.g. `where is"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // In code, in a quote, in a comment: no question.
    for body in [
        "```\n/hive ask what is the token?\n```",
        "> /hive ask what is the token?",
        "    \n\n    /hive ask what is the token?",
        "<!--\n/hive ask what is the token?\n-->",
    ] {
        assert!(parse(body).is_empty(), "{body:?}");
    }
    // A command on the next line is not part of the question.
    let found = parse("/hive ask why?\n/hive approve");
    assert_eq!(found[0].parsed, Parsed::Ok(Command::Ask("why?".into())));
    assert_eq!(found[1].parsed, Parsed::Ok(Command::Approve));
    // Asked again in an edit: once only; a changed question is a new one.
    assert!(new_commands("/hive ask why?", "/hive  ask  why?").is_empty());
    assert_eq!(
        new_commands("/hive ask why?", "/hive ask why not?").len(),
        1
    );
}
