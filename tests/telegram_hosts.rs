//! The Telegram bridge and questions on another host (`[hosts.NAME]`, a real sshd on 127.0.0.1,
//! tests/common/sshd.rs): answered from Telegram, they land there once, through that host's own
//! luzia (the harness in tests/common/bridge.rs).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::bridge::*;
use common::sshd::{Sshd, older_luzia};
use common::stderr_of;

/// Host `b`: a real sshd on 127.0.0.1 whose luzia has a jobs root of its own, named in this
/// machine's config, and the bridge here watching it. `None` where there is no sshd (said
/// loudly by `Sshd::start`).
struct HostB {
    // Dropped in this order: the bridge first, the directory last.
    _watcher: Watcher,
    w: World,
    sshd: Sshd,
    jobs: PathBuf,
    _dir: tempfile::TempDir,
}

impl HostB {
    fn start() -> Option<HostB> {
        HostB::with_luzia(|_| PathBuf::from(LUZIA))
    }

    /// Host b whose luzia is the one `luzia` puts in the host's directory.
    fn with_luzia(luzia: impl FnOnce(&Path) -> PathBuf) -> Option<HostB> {
        let dir = tempfile::tempdir().unwrap();
        let jobs = dir.path().join("jobs");
        fs::create_dir_all(&jobs).unwrap();
        let sshd = Sshd::start("b", &jobs)?;
        let mut w = World::new(&sshd.host_toml(&luzia(dir.path())));
        let watcher = w.bridge();
        Some(HostB {
            _watcher: watcher,
            w,
            sshd,
            jobs,
            _dir: dir,
        })
    }

    /// `luzia` at that host's own command line, as its operator would run it there.
    fn there(&self, args: &[&str]) {
        let out = self
            .w
            .luzia()
            .arg("--jobs-dir")
            .arg(&self.jobs)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr_of(&out));
    }
}

#[test]
fn a_question_on_another_host_answered_from_telegram_lands_there_once() {
    let Some(b) = HostB::start() else {
        return;
    };
    let (w, remote_jobs, sshd) = (&b.w, &b.jobs, &b.sshd);
    let mut asker = w.agent_in(remote_jobs, "170000-cccc", &ASK);
    let m = w.bot.wait_message("Which database?");
    assert!(m.text.contains("job 170000-cccc on b"), "{}", m.text);
    let buttons = w.bot.buttons(m.id);
    let press = w.bot.press(BRUNO, m.id, &buttons[1].1);
    let notice = w.bot.wait_notice(press);
    assert!(notice.starts_with("Done"), "{notice}\nsshd: {}", sshd.log());
    assert_eq!(asker.finish().1, "staging\n");
    w.bot.wait_edit(m.id, "(on b)");
    assert_eq!(asker.history_with("\"telegram:@bruno (111)\""), 1);
    let again = w.bot.press(ANA, m.id, &buttons[0].1);
    let notice = w.bot.wait_notice(again);
    assert!(notice.starts_with("Already settled"), "{notice}");
    assert_eq!(
        asker.history_with("\"source\":\"telegram\""),
        1,
        "it landed there once"
    );
}

#[test]
fn a_question_and_a_gate_on_another_host_settled_there_say_who_settled_them_and_how() {
    let Some(b) = HostB::start() else {
        return;
    };
    let (w, remote_jobs) = (&b.w, &b.jobs);

    let id = "171000-dddd";
    let mut asker = w.agent_in(remote_jobs, id, &ASK);
    let m = w.bot.wait_message("Which database?");
    let stale = w.bot.buttons(m.id);
    b.there(&["answer", id, "--question", "q1", "production"]);
    assert_eq!(asker.finish().1, "production\n");
    let edited = w.bot.wait_edit(m.id, "(on b)");
    assert!(
        edited
            .text
            .contains("answered at the command line by bruno@")
            && edited.text.contains("'production' (on b)"),
        "{}",
        edited.text
    );
    assert!(edited.markup.is_none(), "the buttons are gone");
    let press = w.bot.press(ANA, m.id, &stale[1].1);
    let notice = w.bot.wait_notice(press);
    assert!(
        notice.starts_with("Already settled: answered at the command line by bruno@"),
        "{notice}"
    );
    assert_eq!(
        asker.history_with("telegram"),
        0,
        "Telegram decided nothing"
    );

    let gate = "171001-eeee";
    let mut gater = w.agent_in(remote_jobs, gate, &["gate", "deploy", "Ship build 42"]);
    let g = w.bot.wait_message("Ship build 42");
    b.there(&["deny", gate, "--reason", "the freeze is on"]);
    assert_eq!(gater.finish().0.code(), Some(4));
    let edited = w.bot.wait_edit(g.id, "(on b)");
    assert!(
        edited.text.contains("denied at the command line by bruno@")
            && edited.text.contains(": 'the freeze is on' (on b)"),
        "{}",
        edited.text
    );
}

#[test]
fn a_gate_on_another_host_approved_for_the_session_there_or_from_telegram_says_so() {
    let Some(b) = HostB::start() else {
        return;
    };
    let (w, remote_jobs, sshd) = (&b.w, &b.jobs, &b.sshd);

    // At that host's own command line: its `luzia watch --json` says the scope.
    let id = "172000-ffff";
    let offer = ["gate", "shell", "Run make test", "--allow-session"];
    let mut gater = w.agent_in(remote_jobs, id, &offer);
    let g = w.bot.wait_message("Run make test");
    b.there(&["approve", id, "--always"]);
    assert_eq!(gater.finish().1, "session\n");
    let edited = w.bot.wait_edit(g.id, "(on b)");
    assert!(
        edited
            .text
            .contains("approved for the session at the command line by bruno@"),
        "{}",
        edited.text
    );

    // From Telegram: that host's luzia approves it for the session.
    let id = "172001-0000";
    let mut gater = w.agent_in(remote_jobs, id, &offer);
    let g = w.bot.wait_message("job 172001-0000 on b");
    let buttons = w.bot.buttons(g.id);
    assert_eq!(buttons.len(), 3, "{buttons:?}");
    let press = w.bot.press(BRUNO, g.id, &buttons[2].1);
    let notice = w.bot.wait_notice(press);
    assert!(
        notice.starts_with("Done: approved for the session by @bruno from Telegram"),
        "{notice}\nsshd: {}",
        sshd.log()
    );
    assert_eq!(gater.finish().1, "session\n");
    assert_eq!(gater.history_with("\"scope\":\"session\""), 1);
    w.bot.wait_edit(
        g.id,
        "approved for the session by @bruno from Telegram (on b)",
    );
}

/// A luzia on b older than the relay flags refuses them as clap refuses any option it does not
/// know: the answer from Telegram is given again without them and lands, as b's ssh user's.
#[test]
fn a_luzia_on_another_host_older_than_the_relay_flags_still_gets_the_answer() {
    let record = tempfile::NamedTempFile::new().unwrap();
    let Some(b) = HostB::with_luzia(|dir| older_luzia(dir, Path::new(LUZIA), record.path())) else {
        return;
    };
    let (w, remote_jobs, sshd) = (&b.w, &b.jobs, &b.sshd);
    let mut asker = w.agent_in(remote_jobs, "173000-1111", &ASK);
    let m = w.bot.wait_message("Which database?");
    let buttons = w.bot.buttons(m.id);
    let press = w.bot.press(BRUNO, m.id, &buttons[1].1);
    let notice = w.bot.wait_notice(press);
    assert!(notice.starts_with("Done"), "{notice}\nsshd: {}", sshd.log());
    assert_eq!(asker.finish().1, "staging\n");
    assert_eq!(asker.history_with("\"source\":\"cli\""), 1);
    let commands = fs::read_to_string(record.path()).unwrap();
    let answers: Vec<&str> = commands.lines().filter(|l| l.contains("answer ")).collect();
    assert_eq!(answers.len(), 2, "{commands}");
    assert!(answers[0].contains("--source=telegram"), "{commands}");
    assert!(!answers[1].contains("--source"), "{commands}");
}
