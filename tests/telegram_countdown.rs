//! The Telegram bridge keeps a post's countdown true, end to end: a real agent (`luzia ask
//! --timeout --default`) and the tests' own Bot API server (the harness in
//! tests/common/bridge.rs). The words change to the minute, then `within a minute` for the last
//! one (src/notifier/telegram/format.rs): a timeout of 75 s is posted as `in 2m` and must be
//! edited to `within a minute` some seconds later, well before the agent takes its default.
//! Then the message says the default was taken, and no countdown edit follows.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;

use std::time::Duration;

use common::bridge::*;
use common::telegram::Message;
use common::wait_for;

/// The question's timeout: posted a few seconds after it is asked, it says `in 2m`, and a few
/// seconds later `within a minute`.
const TIMEOUT: &str = "75s";
/// Long enough for the agent to take its default after the edit (its 75 s, and the load).
const THE_DEFAULT: Duration = Duration::from_secs(150);
const TAKEN: &str = "the agent took the default: 'staging'";

fn ask() -> Vec<&'static str> {
    let mut args = ASK.to_vec();
    args.extend(["--timeout", TIMEOUT, "--default", "staging"]);
    args
}

/// The post says `in 2m`: the machine posted it within its first quarter minute.
fn posted_with_two_minutes(m: &Message) {
    assert!(
        m.text
            .contains("If nobody answers, the agent takes 'staging' at ")
            && m.text.contains(" (in 2m)\n"),
        "the post says how soon, to the minute (if it says less, the post came over 15 s late): {}",
        m.text
    );
}

/// The countdown edited to its last minute, buttons kept.
fn last_minute(w: &World, m: &Message) {
    let edited = w.bot.wait_edit(m.id, " (within a minute)\n");
    assert!(edited.markup.is_some(), "its buttons stay: {edited:?}");
    assert!(!edited.text.contains("(in 2m)"), "{}", edited.text);
}

/// The default taken, said once, then nothing more edited: a press on the closed message (its
/// answer proves the bridge went on past its deadline) is told how it ended, and the last edit
/// of the message is still the one that said so.
fn default_taken_then_quiet(w: &World, asker: &mut Agent, m: &Message) {
    let closed = wait_for(
        "the message to say the default was taken",
        THE_DEFAULT,
        || {
            w.bot
                .messages()
                .into_iter()
                .find(|x| x.id == m.id && x.text.contains(TAKEN))
        },
    );
    let (status, out, err) = asker.finish();
    assert!(status.success(), "{err}");
    assert_eq!(out, "staging\n");
    assert!(closed.markup.is_none(), "the buttons are gone");
    for stale in ["(in ", "(within a minute)", "(time is up)"] {
        assert!(
            !closed.text.contains(stale),
            "settled, it says the times alone: {}",
            closed.text
        );
    }
    let press = w.bot.press(BRUNO, m.id, &format!("{}:o0", serial_of(w, m)));
    assert!(w.bot.wait_notice(press).starts_with("Already settled"));
    let edits: Vec<String> = w
        .bot
        .calls_of("editMessageText")
        .into_iter()
        .filter(|c| c.body["message_id"] == m.id)
        .map(|c| c.body["text"].as_str().unwrap_or("").to_owned())
        .collect();
    let last = edits.last().unwrap();
    assert!(
        last.contains(TAKEN),
        "no countdown edit after the close: {edits:#?}"
    );
    assert_eq!(
        edits.iter().filter(|t| t.contains(TAKEN)).count(),
        1,
        "{edits:#?}"
    );
    let now = w.bot.messages().into_iter().find(|x| x.id == m.id).unwrap();
    assert_eq!(now.text, closed.text);
}

/// The serial the post's buttons carry (`SERIAL:o0`).
fn serial_of(w: &World, m: &Message) -> String {
    let posted = w
        .bot
        .calls_of("sendMessage")
        .into_iter()
        .find(|c| c.body["text"].as_str() == Some(m.text.as_str()))
        .unwrap();
    let data = posted.body["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
        .as_str()
        .unwrap()
        .to_owned();
    data.split_once(':').unwrap().0.to_owned()
}

#[test]
fn a_question_s_countdown_is_edited_as_time_passes_until_its_default_is_taken() {
    let Some(mut w) = World::fresh() else {
        return;
    };
    let _watcher = w.bridge();
    let mut asker = w.agent("142315-a1b2", &ask());
    let m = w.bot.wait_message("Which database?");
    posted_with_two_minutes(&m);
    last_minute(&w, &m);
    default_taken_then_quiet(&w, &mut asker, &m);
}

#[test]
fn a_bridge_started_again_keeps_the_countdown_of_what_the_last_one_posted() {
    let mut w = World::new("");
    let mut first = w.bridge();
    let id = "160000-cccc";
    let key = format!("{id}:question:q1");
    let mut asker = w.agent(id, &ask());
    let m = w.bot.wait_message("Which database?");
    posted_with_two_minutes(&m);
    wait("the post recorded", || {
        (w.state()["posted"][&key]["message_id"] == m.id).then_some(())
    });
    first.sigkill();
    let unedited = w.bot.messages().into_iter().find(|x| x.id == m.id).unwrap();
    assert_eq!(
        unedited.text, m.text,
        "the first bridge was killed before its countdown's first edit (the machine is slow)"
    );

    let _second = w.bridge();
    last_minute(&w, &m);
    assert_eq!(
        w.bot.calls_of("sendMessage").len(),
        1,
        "the countdown is kept without posting again"
    );
    default_taken_then_quiet(&w, &mut asker, &m);
}
