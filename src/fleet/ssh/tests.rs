use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use proptest::prelude::*;

use super::*;

fn args_of(cmd: &Command) -> Vec<String> {
    cmd.get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

/// What `sh` makes of `line`: the words it passes to a command, NUL-separated by printf.
fn words_through_sh(line: &str) -> Vec<String> {
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("printf '%s\\0' {line}"))
        .output()
        .unwrap();
    assert!(out.status.success(), "sh -c failed on: {line}");
    let text = String::from_utf8(out.stdout).unwrap();
    let mut words: Vec<String> = text.split('\0').map(str::to_owned).collect();
    assert_eq!(
        words.pop().as_deref(),
        Some(""),
        "printf ends every word with NUL"
    );
    words
}

#[test]
fn plain_words_stay_plain_and_the_rest_is_single_quoted() {
    for (word, quoted) in [
        ("watch", "watch"),
        ("--jobs-dir", "--jobs-dir"),
        ("/srv/jobs", "/srv/jobs"),
        ("", "''"),
        ("two words", "'two words'"),
        ("it's", "'it'\\''s'"),
        ("$HOME", "'$HOME'"),
        ("a;rm -rf /", "'a;rm -rf /'"),
        ("*", "'*'"),
        ("~", "'~'"),
    ] {
        assert_eq!(quote(word), quoted, "{word}");
    }
}

#[test]
fn the_command_is_options_then_the_hosts_own_then_the_destination_then_the_remote_line() {
    let host = HostConfig {
        ssh: "ops@gpu2.example".into(),
        ssh_options: vec!["-p".into(), "2222".into()],
        luzia: "/opt/luzia bin/luzia".into(),
        jobs_dir: Some("/srv/jobs".into()),
    };
    let cmd = command(&host, &["answer".into(), "job-1".into(), "yes it's".into()]);
    let args = args_of(&cmd);
    let tail: Vec<&str> = args
        .iter()
        .rev()
        .take(6)
        .rev()
        .map(String::as_str)
        .collect();
    assert_eq!(
        tail,
        [
            "-p",
            "2222",
            "-T",
            "ops@gpu2.example",
            "--",
            "'/opt/luzia bin/luzia' --jobs-dir /srv/jobs answer job-1 'yes it'\\''s'"
        ]
    );
    for wanted in [
        "BatchMode=yes",
        "ServerAliveInterval=5",
        "ServerAliveCountMax=2",
        "ConnectTimeout=10",
    ] {
        let at = args.iter().position(|a| a == wanted).expect(wanted);
        assert_eq!(args[at - 1], "-o");
    }
    // Shared connections are on where a private socket directory exists (always, as root or
    // with a writable /tmp), and the host's options come after luzia's so they cannot undo
    // BatchMode (ssh keeps the first value it reads).
    let control = args.iter().position(|a| a.starts_with("ControlPath="));
    let own = args.iter().position(|a| a == "2222");
    assert!(control.is_some() && control < own, "{args:?}");
    let line = args.last().unwrap();
    assert_eq!(
        words_through_sh(line),
        [
            "/opt/luzia bin/luzia",
            "--jobs-dir",
            "/srv/jobs",
            "answer",
            "job-1",
            "yes it's"
        ]
    );
}

#[test]
fn a_host_without_jobs_dir_runs_its_luzia_with_the_arguments_only() {
    let cmd = command(&HostConfig::new("box"), &["jobs".into(), "--json".into()]);
    assert_eq!(args_of(&cmd).last().unwrap(), "luzia jobs --json");
    let check = control(&HostConfig::new("box"), "check");
    let args = args_of(&check);
    assert_eq!(&args[args.len() - 3..], ["-O", "check", "box"]);
}

#[test]
fn the_socket_directory_is_private_and_short() {
    let tmp = tempfile::tempdir().unwrap();
    let uid = rustix::process::getuid().as_raw();
    let dir = tmp.path().join("luzia-ssh");
    assert!(usable(&dir, uid));
    let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);

    // Opened to others: not used.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(!usable(&dir, uid));

    // Another user's directory: not used.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    assert!(!usable(&dir, uid + 1));

    // Too long for a socket path once ssh adds its name.
    let long = tmp
        .path()
        .join("x".repeat(SOCKET_PATH_MAX))
        .join("luzia-ssh");
    assert!(!usable(&long, uid));
    assert!(!long.exists());

    // A blank would be read as the end of the ControlPath value.
    assert!(!usable(&tmp.path().join("a b").join("luzia-ssh"), uid));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn quoted_words_come_back_intact_through_sh(
        words in proptest::collection::vec("[^\\x00]{0,12}", 1..5)
    ) {
        prop_assert_eq!(words_through_sh(&shell_line(&words)), words);
    }
}
