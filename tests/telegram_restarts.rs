//! The Telegram bridge killed with SIGKILL at its worst moments and started again: nothing is
//! posted twice and nothing applied twice (the harness in tests/common/bridge.rs).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

mod common;

use std::fs;

use common::bridge::*;
use serde_json::{Value, json};

#[test]
fn a_bridge_killed_and_started_again_posts_nothing_twice_and_applies_nothing_twice() {
    let mut w = World::new("");
    let mut first = w.bridge();
    let id = "160000-bbbb";
    let key = format!("{id}:question:q1");
    let mut asker = w.agent(id, &ASK);
    let m = w.bot.wait_message("Which database?");
    wait("the post recorded", || {
        (w.state()["posted"][&key]["message_id"] == m.id).then_some(())
    });
    first.sigkill();

    // A press while no bridge runs; the next one takes it, once.
    let press = w.bot.press(BRUNO, m.id, &w.bot.buttons(m.id)[1].1);
    let mut second = w.bridge();
    assert!(w.bot.wait_notice(press).starts_with("Done"));
    assert_eq!(asker.finish().1, "staging\n");
    w.bot.wait_edit(m.id, "answered by @bruno");
    wait("the update and the close recorded", || {
        let s = w.state();
        (s["offset"].as_i64() > Some(press) && s["posted"][&key]["closed"]["edited"] == true)
            .then_some(())
    });
    second.sigkill();

    // As if the second had been killed after answering but before it saved: the update comes
    // again and the post is open in the state.
    let mut state = w.state();
    state["offset"] = json!(press);
    state["posted"][&key]["closed"] = Value::Null;
    fs::write(w.state_path(), state.to_string()).unwrap();
    let presses_before = w.bot.calls_of("answerCallbackQuery").len();
    let mut third = w.bridge();
    wait("the update handled again", || {
        (w.bot.calls_of("answerCallbackQuery").len() > presses_before).then_some(())
    });
    wait("the post closed again", || {
        (w.state()["posted"][&key]["closed"]["edited"] == true).then_some(())
    });
    let asked = w
        .bot
        .messages()
        .iter()
        .filter(|m| m.text.contains("Which database?"))
        .count();
    assert_eq!(asked, 1, "posted once over three bridges");
    assert_eq!(
        asker.history_with("\"telegram:@bruno (111)\""),
        1,
        "answered once"
    );
    assert_eq!(
        w.bot.calls_of("sendMessage").len(),
        1,
        "nothing else was posted"
    );

    // Killed between recording a post and hearing from Telegram: the post is sent again at the
    // next start, saying it may be a second copy.
    let other = "160001-cccc";
    let other_key = format!("{other}:question:q1");
    let _asker = w.agent(
        other,
        &["ask", "Which region?", "--option", "eu", "--option", "us"],
    );
    w.bot.wait_message("Which region?");
    wait("the post recorded", || {
        w.state()["posted"][&other_key]["message_id"].as_i64()
    });
    third.sigkill();
    let mut state = w.state();
    state["posted"][&other_key]["message_id"] = Value::Null;
    fs::write(w.state_path(), state.to_string()).unwrap();
    let _fourth = w.bridge();
    let again = w.bot.wait_message("Posted again");
    assert!(again.text.contains("Which region?"), "{}", again.text);
    wait("the second copy recorded", || {
        (w.state()["posted"][&other_key]["message_id"] == again.id).then_some(())
    });
    assert_eq!(w.bot.calls_of("sendMessage").len(), 3);
}
