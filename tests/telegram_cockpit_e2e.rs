//! The Telegram bridge and the cockpit side by side: `luzia notify --watch` posts a real agent's
//! question (and gate) to the tests' own Bot API server, the operator answers it in the real
//! cockpit (`luzia tui` in tmux, 160x45, keys sent to its inbox), and the Telegram message is
//! edited to say who answered, and where; its stale buttons then decide nothing and say so.
//!
//! Without tmux these tests print a loud SKIPPED message and pass, unless
//! `LUZIA_REQUIRE_TMUX=1` (CI), where a missing tmux fails them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;
#[macro_use]
mod tmux;

use common::bridge::*;
use tmux::{Cockpit, Opts, Sandbox};

/// The cockpit on the bridge's jobs root (from its config), answering as `ana`.
fn cockpit<'a>(sb: &'a Sandbox, w: &World) -> Cockpit<'a> {
    let config = w.config.as_ref().unwrap().to_str().unwrap();
    let mut opts = Opts::default()
        .size(160, 45)
        .env("USER", "ana")
        .global_arg("--config")
        .global_arg(config);
    opts.no_jobs_dir = true;
    Cockpit::start(sb, opts)
}

#[test]
fn answers_given_in_the_cockpit_edit_the_telegram_message_and_its_buttons_then_decide_nothing() {
    require_tmux!();
    let mut w = World::new("");
    let _watcher = w.bridge();
    let id = "190000-aaaa";
    let mut asker = w.agent(id, &ASK);
    let m = w.bot.wait_message("Which database?");
    let stale = w.bot.buttons(m.id);

    let sb = Sandbox::new();
    let ck = cockpit(&sb, &w);
    ck.wait_row(id, "waiting", |r| r.contains("waiting"));
    ck.key("i");
    ck.wait_text("Which database?");
    ck.keys(&["2", "Enter"]);
    assert_eq!(asker.finish().1, "staging\n");
    let edited = w.bot.wait_edit(m.id, "answered in the cockpit by ana@");
    assert!(edited.text.contains("'staging'"), "{}", edited.text);
    assert!(edited.markup.is_none(), "the buttons are gone");

    // Its stale button, pressed now: nothing is decided, and the phone is told by whom it was.
    let press = w.bot.press(BRUNO, m.id, &stale[0].1);
    let notice = w.bot.wait_notice(press);
    assert!(
        notice.starts_with("Already settled: answered in the cockpit by ana@"),
        "{notice}"
    );
    assert_eq!(asker.history_with("\"source\":\"tui\""), 1);
    assert_eq!(
        asker.history_with("telegram"),
        0,
        "Telegram decided nothing"
    );
    ck.wait_for("nothing waiting", |s| {
        s.header().contains("0 waiting for you")
    });

    // A gate, approved in the cockpit: Deny on the phone afterwards denies nothing.
    let gate = "190001-bbbb";
    let mut gater = w.agent(gate, &["gate", "deploy", "Ship build 42 to production"]);
    let g = w.bot.wait_message("Ship build 42");
    let deny = w.bot.buttons(g.id)[1].1.clone();
    ck.wait_for("the gate waiting", |s| {
        s.header().contains("1 waiting for you")
    });
    ck.key("i");
    ck.wait_text("Ship build 42 to production");
    ck.key("a");
    let (status, _, err) = gater.finish();
    assert!(status.success(), "{err}");
    assert!(err.contains("approved by ana@"), "{err}");
    w.bot.wait_edit(g.id, "approved in the cockpit by ana@");
    let press = w.bot.press(ANA, g.id, &deny);
    let notice = w.bot.wait_notice(press);
    assert!(
        notice.starts_with("Already settled: approved in the cockpit by ana@"),
        "{notice}"
    );
    assert!(
        w.bot.calls_of("sendMessage").len() == 2,
        "no reason was asked for: {:?}",
        w.bot.messages()
    );
    assert_eq!(
        gater.history_with("telegram"),
        0,
        "Telegram decided nothing"
    );
}
