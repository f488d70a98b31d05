use clap::{CommandFactory, Parser};

use super::*;

/// Every argument and option of every command, hidden ones aside, with where it is.
fn arguments(cmd: &clap::Command, path: &str, found: &mut Vec<(String, clap::Arg)>) {
    for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
        found.push((format!("{path} {}", arg.get_id()), arg.clone()));
    }
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        arguments(sub, &format!("{path} {}", sub.get_name()), found);
    }
}

#[test]
fn every_argument_of_every_command_says_what_it_is() {
    let mut cmd = Cli::command();
    cmd.build();
    let mut found = Vec::new();
    arguments(&cmd, "luzia", &mut found);
    assert!(
        found.len() > 50,
        "the walk found the arguments: {}",
        found.len()
    );
    let bare: Vec<&str> = found
        .iter()
        // clap's own --help and --version say what they are.
        .filter(|(_, arg)| !matches!(arg.get_id().as_str(), "help" | "version"))
        .filter(|(_, arg)| {
            arg.get_help()
                .is_none_or(|h| h.to_string().trim().is_empty())
        })
        .map(|(name, _)| name.as_str())
        .collect();
    assert!(bare.is_empty(), "without a help text: {bare:#?}");
}

fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
    Cli::try_parse_from(std::iter::once("luzia").chain(args.iter().copied()))
}

#[test]
fn cycle_takes_the_duration_syntax_and_a_bare_number_of_seconds() {
    let cycle = |v: &str| match parse(&["tui", "--cycle", v]).map(|c| c.command) {
        Ok(Command::Tui(t)) => Ok(t.cycle),
        Ok(other) => panic!("{other:?}"),
        Err(e) => Err(e.to_string()),
    };
    assert_eq!(cycle("10s"), Ok(Some(10)));
    assert_eq!(
        cycle("10"),
        Ok(Some(10)),
        "a bare number keeps meaning seconds"
    );
    assert_eq!(cycle("2m"), Ok(Some(120)));
    assert_eq!(cycle("1h30m"), Ok(Some(5400)));
    for bad in ["0", "0s", "500ms", "1.5s", "ten", "-3"] {
        assert!(cycle(bad).is_err(), "{bad} refused");
    }
}

#[test]
fn heartbeat_takes_the_duration_syntax_and_a_bare_number_of_seconds() {
    let beat = |v: &[&str]| match parse(&[&["watch", "--json"], v].concat()).map(|c| c.command) {
        Ok(Command::Watch(w)) => Ok(w.heartbeat),
        Ok(other) => panic!("{other:?}"),
        Err(e) => Err(e.to_string()),
    };
    assert_eq!(beat(&[]), Ok(5), "the default");
    assert_eq!(beat(&["--heartbeat", "5s"]), Ok(5));
    assert_eq!(beat(&["--heartbeat", "7"]), Ok(7));
    assert_eq!(beat(&["--heartbeat", "1m"]), Ok(60));
    assert_eq!(beat(&["--heartbeat", "1h"]), Ok(3600));
    for bad in ["0", "1h1s", "250ms"] {
        let e = beat(&["--heartbeat", bad]).unwrap_err();
        assert!(e.contains(bad), "{bad}: {e}");
    }
}

#[test]
fn every_option_that_takes_a_time_takes_the_duration_syntax() {
    for args in [
        &["kill", "j", "--grace", "1m30s"][..],
        &["status", "--interval", "2s"],
        &["tui", "--cycle", "1m30s"],
        &["watch", "--heartbeat", "1m30s"],
        &["ask", "q?", "--timeout", "1m30s", "--job-dir", "/j"],
        &[
            "gate",
            "g",
            "d",
            "--auto-approve-after",
            "1m30s",
            "--job-dir",
            "/j",
        ],
        &["progress", "--eta", "1m30s", "--job-dir", "/j"],
    ] {
        assert!(parse(args).is_ok(), "{args:?}: {:?}", parse(args).err());
    }
}
