//! What installing puts beside the binary, checked through the binary itself: the completion
//! script is valid shell, and the manual page is roff that names every visible command.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::Command;

use common::Sandbox;

#[test]
fn the_bash_completion_script_is_valid_bash_and_completes_commands() {
    let sb = Sandbox::new();
    let out = sb.luzia().args(["completions", "bash"]).output().unwrap();
    assert!(out.status.success());
    let script = sb.tmp.path().join("luzia.bash");
    std::fs::write(&script, &out.stdout).unwrap();
    // Source it and ask for the completions of `luzia ap`, as bash would on Tab.
    let probe = format!(
        "source {}; COMP_WORDS=(luzia ap); COMP_CWORD=1; COMP_LINE='luzia ap'; COMP_POINT=8; \
         _luzia luzia ap luzia; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display()
    );
    let done = Command::new("bash").args(["-c", &probe]).output().unwrap();
    let words = String::from_utf8_lossy(&done.stdout);
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert_eq!(words.trim(), "approve", "{words}");
}

#[test]
fn a_broken_config_does_not_stop_completions_or_the_man_page() {
    let sb = Sandbox::new();
    let config = sb.tmp.path().join("bad.toml");
    std::fs::write(&config, "this is = = not toml").unwrap();
    for args in [vec!["completions", "zsh"], vec!["man"]] {
        let out = sb
            .luzia()
            .arg("--config")
            .arg(&config)
            .args(&args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.stdout.is_empty());
    }
    let man = sb.luzia().arg("man").output().unwrap();
    let page = String::from_utf8(man.stdout).unwrap();
    assert!(
        page.contains(".TH luzia 1"),
        "{}",
        &page[..200.min(page.len())]
    );
    assert!(page.contains(".SS completions"));
}
