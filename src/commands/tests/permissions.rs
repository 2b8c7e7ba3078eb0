//! Permissions, roles and the help text.

use super::super::*;

#[test]
fn each_command_needs_its_permission() {
    use Permission::*;
    let cases = [
        (Command::Status, Read),
        (Command::Help, Read),
        (Command::Ask("x".into()), Read),
        (Command::Plan, Write),
        (Command::Retry(None), Write),
        (Command::Retry(Some(Role::Architect)), Write),
        (Command::Feedback("x".into()), Write),
        (Command::Approve, Write),
        (Command::Abort, Write),
        (Command::Rebase, Write),
        (Command::Base("v1".into()), Write),
        (Command::Reset("v1".into()), Admin),
    ];
    for (command, want) in cases {
        assert_eq!(command.required(), want, "{command}");
        for have in Permission::ALL {
            assert_eq!(
                command.allowed(Some(have)),
                have >= want,
                "{command} with {have}"
            );
        }
        assert!(!command.allowed(None), "{command} without access");
    }
    assert!(!Command::Reset("v1".into()).allowed(Some(Maintain)));
    assert!(!Command::Approve.allowed(Some(Triage)));
}

#[test]
fn permissions_are_read_from_github_and_ordered() {
    use Permission::*;
    assert!(Read < Triage && Triage < Write && Write < Maintain && Maintain < Admin);
    let mut sorted = Permission::ALL;
    sorted.sort();
    assert_eq!(sorted, Permission::ALL);
    let cases = [
        ("read", Some(Read)),
        ("triage", Some(Triage)),
        ("write", Some(Write)),
        ("maintain", Some(Maintain)),
        ("admin", Some(Admin)),
        ("ADMIN", Some(Admin)),
        (" write\n", Some(Write)),
        ("pull", Some(Read)),
        ("push", Some(Write)),
        ("none", None),
        ("", None),
        ("owner", None),
        ("administrator", None),
        ("security-manager", None),
    ];
    for (s, want) in cases {
        assert_eq!(Permission::parse(s), want, "{s:?}");
    }
    for p in Permission::ALL {
        assert_eq!(Permission::parse(&p.to_string()), Some(p));
    }
}

#[test]
fn help_lists_every_command_with_its_permission() {
    let text = help();
    let all = [
        Command::Status,
        Command::Help,
        Command::Ask("x".into()),
        Command::Plan,
        Command::Retry(None),
        Command::Feedback("x".into()),
        Command::Approve,
        Command::Abort,
        Command::Rebase,
        Command::Base("v1".into()),
        Command::Reset("v1".into()),
    ];
    assert_eq!(text.lines().count(), all.len() + 1, "{text}");
    for command in &all {
        let start = format!("- `/hive {}", command.name());
        let mut hits = text.lines().filter(|l| l.starts_with(&start));
        let line = hits
            .next()
            .unwrap_or_else(|| panic!("{start} missing:\n{text}"));
        assert!(hits.next().is_none(), "{start} twice");
        assert!(
            line.contains(&format!("({})", command.required())),
            "{line}"
        );
    }
    for spec in &args::SPECS {
        let parsed = parse(&format!("/hive {}", spec.name)).remove(0).parsed;
        assert!(!matches!(parsed, Parsed::Unknown { .. }), "{}", spec.name);
        if let Some(command) = &spec.simple {
            assert_eq!(
                (command.name(), command.required()),
                (spec.name, spec.permission)
            );
        }
    }
    assert!(text.lines().all(|l| l.chars().count() <= 140), "{text}");
    // Posting the help runs nothing.
    assert_eq!(parse(&text), vec![]);
}
