//! The Telegram bridge of `luzia notify --watch`, end to end, on answers and who wins them: the
//! real binary, real agents (`luzia ask`, `luzia gate`), and the tests' own Bot API server
//! (tests/common/telegram.rs; the harness in tests/common/bridge.rs). Presses and replies are
//! updates the test pushes, as Telegram would deliver them: buttons and replies answer for
//! allowed users only, one of two presses wins, and an answer given elsewhere closes the post.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;

use std::fs;
use std::path::Path;

use common::bridge::*;
use common::cmdline_mentions;
use common::stderr_of;
use common::telegram::TOKEN;

#[test]
fn from_nothing_buttons_and_replies_answer_questions_and_decide_gates_for_allowed_users_only() {
    let Some(mut w) = World::fresh() else {
        return;
    };
    let watcher = w.bridge();
    let mut asker = w.agent("142315-a1b2", &ASK);
    let m = w.bot.wait_message("Which database?");
    for part in [
        "142315-a1b2",
        "project shop",
        "migrate the orders table",
        "Running the migration",
    ] {
        assert!(m.text.contains(part), "{part}: {}", m.text);
    }
    let buttons = w.bot.buttons(m.id);
    let labels: Vec<&str> = buttons.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(labels, ["1. production", "2. staging"]);

    // Someone not in allowed_users: refused, logged, nothing decided.
    let foreign = w.bot.press(MALLORY, m.id, &buttons[0].1);
    assert!(w.bot.wait_notice(foreign).contains("Not counted"));
    assert!(
        watcher
            .stdout()
            .contains("refused a press by @mallory (333)")
    );
    assert_eq!(asker.pending_question().as_deref(), Some("q1"));

    // Two phones at once: one wins, the other is told who did.
    let first = w.bot.press(BRUNO, m.id, &buttons[1].1);
    let second = w.bot.press(ANA, m.id, &buttons[0].1);
    let (n1, n2) = (w.bot.wait_notice(first), w.bot.wait_notice(second));
    assert!(n1.starts_with("Done"), "{n1}");
    assert!(
        n2.starts_with("Already settled") && n2.contains("@bruno"),
        "{n2}"
    );
    let (status, out, err) = asker.finish();
    assert!(status.success(), "{err}");
    assert_eq!(out, "staging\n");
    let edited = w
        .bot
        .wait_edit(m.id, "answered by @bruno from Telegram: 'staging'");
    assert!(edited.markup.is_none(), "the buttons are gone");
    assert_eq!(asker.history_with("\"telegram:@bruno (111)\""), 1);
    assert_eq!(asker.history_with("\"source\":\"telegram\""), 1);

    // A gate denied: Deny asks for the reason, the reply is the reason, word for word.
    let mut gater = w.agent(
        "142316-c3d4",
        &["gate", "deploy", "Ship build 42 to production"],
    );
    let g = w.bot.wait_message("Ship build 42");
    let buttons = w.bot.buttons(g.id);
    assert_eq!(buttons.len(), 2, "{buttons:?}");
    let deny = w.bot.press(ANA, g.id, &buttons[1].1);
    assert!(w.bot.wait_notice(deny).contains("reason"));
    let prompt = w.bot.wait_message("Why deny?");
    let reason = "not on a Friday:\n  wait for Monday's freeze to end ";
    w.bot.reply(ANA, prompt.id, reason);
    let (status, _, err) = gater.finish();
    assert_eq!(status.code(), Some(4), "{err}");
    assert_eq!(
        err,
        format!("{reason}\n"),
        "the reason reaches the agent word for word"
    );
    w.bot
        .wait_edit(g.id, "denied by @ana from Telegram: 'not on a Friday:");

    // A gate approved with its button.
    let mut gater = w.agent("142317-e5f6", &["gate", "migrate", "Run 3 migrations"]);
    let g = w.bot.wait_message("Run 3 migrations");
    let approve = w.bot.press(BRUNO, g.id, &w.bot.buttons(g.id)[0].1);
    assert!(w.bot.wait_notice(approve).starts_with("Done"));
    let (status, _, err) = gater.finish();
    assert!(status.success(), "{err}");
    assert!(err.contains("approved by telegram:@bruno (111)"), "{err}");
    w.bot.wait_edit(g.id, "approved by @bruno from Telegram");

    // The token went to the server in the path only, and nowhere else.
    assert!(w.bot.calls().iter().all(|c| c.token == TOKEN));
    no_token("the watcher's stdout", &watcher.stdout());
    no_token("the watcher's stderr", &watcher.stderr());
    assert!(!cmdline_mentions(watcher.guard.id(), Path::new(SECRET)));
    assert!(w.state_path().is_file(), "{}", w.state_path().display());
    no_token("the state", &fs::read_to_string(w.state_path()).unwrap());
}

#[test]
fn an_answer_given_elsewhere_edits_the_message_and_its_buttons_then_decide_nothing() {
    let mut w = World::new("");
    let _watcher = w.bridge();
    let id = "150000-aaaa";
    let mut asker = w.agent(id, &ASK);
    let m = w.bot.wait_message("Which database?");
    let stale = w.bot.buttons(m.id);

    let out = w
        .luzia()
        .args(["answer", id, "--question", "q1", "production"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(asker.finish().1, "production\n");
    let edited = w
        .bot
        .wait_edit(m.id, "answered at the command line by bruno@");
    assert!(edited.markup.is_none());

    // The same job asks again: the old message's buttons must not answer the new question.
    let mut again = w.agent(
        id,
        &["ask", "Second question?", "--option", "a", "--option", "b"],
    );
    let m2 = w.bot.wait_message("Second question?");
    let press = w.bot.press(BRUNO, m.id, &stale[1].1);
    let notice = w.bot.wait_notice(press);
    assert!(
        notice.starts_with("Already settled: answered at the command line"),
        "{notice}"
    );
    assert_eq!(again.pending_question().as_deref(), Some("q2"));
    let press = w.bot.press(BRUNO, m2.id, &w.bot.buttons(m2.id)[1].1);
    assert!(w.bot.wait_notice(press).starts_with("Done"));
    assert_eq!(again.finish().1, "b\n");
    assert_eq!(
        w.bot
            .messages()
            .iter()
            .filter(|m| m.text.contains("Which database?"))
            .count(),
        1
    );
}

#[test]
fn from_nothing_a_gate_offering_the_session_is_approved_for_it_from_telegram_and_one_not_offering_it_is_not()
 {
    let Some(mut w) = World::fresh() else {
        return;
    };
    let _watcher = w.bridge();
    let mut gater = w.agent(
        "160000-aaaa",
        &[
            "gate",
            "shell",
            "Run ./deploy.sh staging",
            "--allow-session",
            "Always allow ./deploy.sh",
        ],
    );
    let g = w.bot.wait_message("Run ./deploy.sh staging");
    assert!(
        g.text.contains("Always allow ./deploy.sh"),
        "what the session covers is said: {}",
        g.text
    );
    let buttons = w.bot.buttons(g.id);
    let labels: Vec<&str> = buttons.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        labels,
        ["✅ Approve", "⛔ Deny", "✅ Approve for session"],
        "{buttons:?}"
    );
    assert!(buttons.iter().all(|(_, data)| data.len() <= 64));
    let press = w.bot.press(BRUNO, g.id, &buttons[2].1);
    let notice = w.bot.wait_notice(press);
    assert!(
        notice.starts_with("Done: approved for the session by @bruno from Telegram"),
        "{notice}"
    );
    let (status, out, err) = gater.finish();
    assert!(status.success(), "{err}");
    assert_eq!(out, "session\n", "the agent reads the scope");
    assert_eq!(
        gater.history_with("\"scope\":\"session\""),
        1,
        "approved.json said the session"
    );
    assert_eq!(gater.history_with("\"telegram:@bruno (111)\""), 1);
    let edited = w
        .bot
        .wait_edit(g.id, "approved for the session by @bruno from Telegram");
    assert!(edited.markup.is_none(), "the buttons are gone");

    // A gate that may only be approved once: no such button, and a forged press is refused.
    let mut once = w.agent("160001-bbbb", &["gate", "deploy", "Ship build 43"]);
    let g = w.bot.wait_message("Ship build 43");
    let buttons = w.bot.buttons(g.id);
    let labels: Vec<&str> = buttons.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(labels, ["✅ Approve", "⛔ Deny"]);
    let forged = buttons[0].1.replace(":a", ":s");
    let press = w.bot.press(BRUNO, g.id, &forged);
    let notice = w.bot.wait_notice(press);
    assert!(
        notice.contains("not offer") && notice.contains("Approve"),
        "{notice}"
    );
    assert!(once.dir.join("approval.json").exists());
    assert!(!once.dir.join("approved.json").exists(), "nothing decided");
    // It still approves once, and its message is edited once, to say that.
    let press = w.bot.press(ANA, g.id, &buttons[0].1);
    assert!(
        w.bot
            .wait_notice(press)
            .starts_with("Done: approved by @ana")
    );
    let (status, _, err) = once.finish();
    assert!(status.success(), "{err}");
    assert_eq!(once.history_with("\"scope\""), 0);
    w.bot.wait_edit(g.id, "approved by @ana from Telegram");
    let edits = w
        .bot
        .calls_of("editMessageText")
        .into_iter()
        .filter(|c| c.body["message_id"] == g.id)
        .count();
    assert_eq!(edits, 1, "the refused press edited nothing");

    // Approved for the session at the command line: the message says so too.
    let id = "160002-cccc";
    let mut gater = w.agent(id, &["gate", "shell", "Run make test", "--allow-session"]);
    let g = w.bot.wait_message("Run make test");
    let out = w
        .luzia()
        .args(["approve", id, "--always"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(gater.finish().1, "session\n");
    let edited = w.bot.wait_edit(
        g.id,
        "approved for the session at the command line by bruno@",
    );
    assert!(edited.markup.is_none());
}
