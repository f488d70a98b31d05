//! The Telegram bridge and questions on another host (`[hosts.NAME]`, a real sshd on 127.0.0.1,
//! tests/common/sshd.rs): answered from Telegram, they land there once, through that host's own
//! luzia (the harness in tests/common/bridge.rs).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;

use std::fs;
use std::path::Path;

use common::bridge::*;
use common::sshd::Sshd;

#[test]
fn a_question_on_another_host_answered_from_telegram_lands_there_once() {
    let remote = tempfile::tempdir().unwrap();
    let remote_jobs = remote.path().join("jobs");
    fs::create_dir_all(&remote_jobs).unwrap();
    let Some(sshd) = Sshd::start("b", &remote_jobs) else {
        return;
    };
    let mut w = World::new(&sshd.host_toml(Path::new(LUZIA)));
    let _watcher = w.bridge();
    let mut asker = w.agent_in(&remote_jobs, "170000-cccc", &ASK);
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
