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

/// The text of section `name` of a roff page: from its `.SH` to the next.
fn section<'a>(page: &'a str, name: &str) -> &'a str {
    let head = format!(".SH {name}\n");
    let start = page
        .find(&head)
        .unwrap_or_else(|| panic!("the page has no {name} section"))
        + head.len();
    let end = page[start..].find(".SH ").map_or(page.len(), |e| start + e);
    &page[start..end]
}

#[test]
fn the_man_page_has_keys_environment_files_and_exit_status() {
    let sb = Sandbox::new();
    let out = sb.luzia().arg("man").output().unwrap();
    assert!(out.status.success());
    let page = String::from_utf8(out.stdout).unwrap();

    // KEYS: every action of every mode of the cockpit, from the action table itself.
    let keys = section(&page, "KEYS");
    for &mode in luzia::tui::action::Section::ALL {
        assert!(keys.contains(&mode.table_name()), "{}", mode.table_name());
        for row in mode.rows() {
            assert!(
                keys.contains(&format!("({})", row.name.replace('-', "\\-"))),
                "KEYS lacks {} of {}",
                row.name,
                mode.table_name()
            );
        }
    }
    assert!(keys.contains("\\fBup, k\\fR (up)"), "{keys}");

    let environment = section(&page, "ENVIRONMENT");
    for var in [
        "LUZIA_JOBS_DIR",
        "LUZIA_CONFIG",
        "LUZIA_QUEUE_DIR",
        "LUZIA_NOTIFICATIONS_LOG",
        "LUZIA_WATCH",
        "NO_COLOR",
        "XDG_CONFIG_HOME",
        "XDG_STATE_HOME",
        "XDG_CACHE_HOME",
        "credentials",
    ] {
        assert!(environment.contains(var), "ENVIRONMENT lacks {var}");
    }

    let files = section(&page, "FILES");
    for path in [
        "/etc/luzia/config.toml",
        "/var/log/luz\\-orchestrator/jobs",
        "$XDG_STATE_HOME/luzia/jobs",
        "/var/lib/luzia/queue",
        "notifications.log",
        "$XDG_CACHE_HOME/luzia/index/",
    ] {
        assert!(files.contains(path), "FILES lacks {path}: {files}");
    }

    let exits = section(&page, "EXIT STATUS");
    for code in ["0", "1", "2", "3", "4", "128 + N"] {
        assert!(
            exits.contains(&format!(".TP\n\\fB{code}\\fR\n")),
            "EXIT STATUS lacks {code}"
        );
    }
    assert!(
        !page.contains("source tree"),
        "nothing points into the source"
    );
}

#[test]
fn the_man_page_renders_without_a_warning() {
    let Ok(groff) = Command::new("groff").arg("--version").output() else {
        eprintln!("skipped: no groff here");
        return;
    };
    assert!(groff.status.success());
    let sb = Sandbox::new();
    let page = sb.tmp.path().join("luzia.1");
    let out = sb.luzia().arg("man").output().unwrap();
    std::fs::write(&page, &out.stdout).unwrap();
    let render = Command::new("groff")
        .args(["-man", "-Tutf8", "-ww", "-z"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(render.status.success());
    assert_eq!(
        String::from_utf8_lossy(&render.stderr),
        "",
        "groff's warnings"
    );
}

/// What bash offers for the command line `words` (the last one being completed), with the
/// script of `luzia completions bash` sourced, as bash would on Tab. The binary is called by
/// its full path, as the first word of the line.
fn bash_completes(sb: &Sandbox, words: &[&str]) -> Vec<String> {
    let out = sb.luzia().args(["completions", "bash"]).output().unwrap();
    assert!(out.status.success());
    let script = sb.tmp.path().join("luzia.bash");
    std::fs::write(&script, &out.stdout).unwrap();
    let luzia = env!("CARGO_BIN_EXE_luzia");
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let line = format!("{luzia} {}", words.join(" "));
    let probe = format!(
        "source '{}'; COMP_WORDS=('{luzia}' {}); COMP_CWORD={}; COMP_LINE='{line}'; \
         COMP_POINT={}; _luzia_dynamic '{luzia}' '{}' '{}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        quoted.join(" "),
        words.len(),
        line.len(),
        words.last().unwrap(),
        if words.len() > 1 {
            words[words.len() - 2]
        } else {
            luzia
        },
    );
    let done = Command::new("bash")
        .args(["-c", &probe])
        .env_remove("LUZIA_CONFIG")
        .env("LUZIA_JOBS_DIR", &sb.root)
        .env("XDG_CONFIG_HOME", &sb.xdg)
        .output()
        .unwrap();
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&done.stderr),
        "",
        "bash said something"
    );
    String::from_utf8_lossy(&done.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Three jobs made in an order that is not their ids' order, and a config with two projects
/// and a host.
fn completion_world() -> Sandbox {
    let sb = Sandbox::new();
    for id in ["300000-cccc", "100000-aaaa", "200000-bbbb"] {
        sb.write(id, "meta.json", r#"{"project": "p", "task": "t"}"#);
        // Made one after the other, each visibly later than the one before.
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let config = sb.xdg.join("luzia/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(
        &config,
        format!(
            "[projects.musica]\npath = '{0}'\n[projects.web]\npath = '{0}'\n\
             [hosts.gpu2]\nssh = 'gpu2.lab'\n",
            sb.tmp.path().display()
        ),
    )
    .unwrap();
    sb
}

#[test]
fn bash_completes_job_ids_newest_first_projects_and_hosts() {
    let sb = completion_world();
    let newest_first = ["200000-bbbb", "100000-aaaa", "300000-cccc"];
    assert_eq!(bash_completes(&sb, &["logs", ""]), newest_first);
    assert_eq!(bash_completes(&sb, &["kill", "1"]), ["100000-aaaa"]);
    assert_eq!(bash_completes(&sb, &["logs", "-n", "5", ""]), newest_first);
    // Only the id's own place: the answer's words are not ids.
    assert!(bash_completes(&sb, &["answer", "100000-aaaa", "2"]).is_empty());
    assert_eq!(bash_completes(&sb, &["run", ""]), ["musica", "web"]);
    assert_eq!(bash_completes(&sb, &["jobs", "--project", "m"]), ["musica"]);
    assert_eq!(bash_completes(&sb, &["tui", "-p", "w"]), ["web"]);
    assert_eq!(
        bash_completes(&sb, &["jobs", "--host", ""]),
        ["local", "gpu2"]
    );
    // Commands and options are still clap's.
    assert_eq!(bash_completes(&sb, &["ap"]), ["approve"]);
    assert!(bash_completes(&sb, &["logs", "--fo"]).contains(&"--follow".to_owned()));
}

#[test]
fn a_broken_config_completes_nothing_quietly() {
    let sb = completion_world();
    std::fs::write(sb.xdg.join("luzia/config.toml"), "this is = = not toml").unwrap();
    assert!(bash_completes(&sb, &["logs", ""]).is_empty());
    assert!(bash_completes(&sb, &["run", ""]).is_empty());
    let out = sb.luzia().args(["__candidates", "jobs"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stderr.is_empty() && out.stdout.is_empty());
}
